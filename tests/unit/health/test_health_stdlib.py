"""racksmith.health runs on GPU hosts under Ubuntu 22.04's Python 3.10 with nothing
installed: standard library only, nothing from racksmith outside racksmith.health, and
syntax that 3.10 accepts."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from health_support import ROOT

PACKAGE = ROOT / "racksmith" / "health"
FILES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_are_stdlib_or_the_package_itself(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside racksmith.health (checked below)
                depth = len(path.relative_to(PACKAGE).parts) - 1
                assert node.level <= depth + 1, f"{path}: relative import leaves the package"
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or name.startswith("racksmith.health"), (
                f"{path.name} imports {name}: the host agent must use the standard library only"
            )


def test_no_python_311_only_apis():
    """What a 3.11 interpreter accepts but 3.10 does not (the 3.10 run below is the real test;
    this one also runs where no 3.10 is installed)."""
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or ""
            module = getattr(node, "module", None) or ""
            imported = [a.name for a in getattr(node, "names", [])]
            assert name not in ("ExceptionGroup", "BaseExceptionGroup", "TaskGroup"), path
            assert "tomllib" not in (module, *imported), f"{path}: tomllib needs Python 3.11"
            assert not (module == "typing" and "Self" in imported), path
            assert type(node).__name__ != "TryStar", f"{path}: except* needs Python 3.11"


def _python310():
    """A working Python 3.10 (pyenv shims on PATH may exist without the version selected)."""
    candidates = [
        str(p) for p in sorted(Path("/root/.pyenv/versions").glob("3.10*/bin/python3.10"))
    ]
    candidates += [c for c in (shutil.which("python3.10"),) if c]
    for candidate in candidates:
        try:
            out = subprocess.run(
                [candidate, "--version"], capture_output=True, text=True, timeout=10
            )
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.startswith("Python 3.10"):
            return candidate
    return None


@pytest.mark.skipif(_python310() is None, reason="no python3.10 on this machine")
def test_agent_runs_under_python_310(tmp_path):
    py = _python310()
    compile_all = (
        "import pathlib, sys\n"
        f"for f in sorted(pathlib.Path({str(PACKAGE)!r}).rglob('*.py')):\n"
        "    compile(f.read_text(), str(f), 'exec')\n"
    )
    proc = subprocess.run([py, "-c", compile_all], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(
        [py, "-m", "racksmith.health", "check", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode in (1, 2) and '"verdict": "NOT FIT"' in proc.stdout, proc.stderr
