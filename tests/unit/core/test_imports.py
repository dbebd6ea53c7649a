"""Imports point down (ARCHITECTURE.md, "Boundaries"; issue 24), checked over the source.

Every import statement of the package and the plugins is read with :mod:`ast`, including the
ones inside functions (a lazy import is still a dependency), and held to these rules:

- production (everything but ``racksmith.lab`` and ``racksmith.testing`` themselves) never
  imports ``racksmith.lab`` or ``racksmith.testing``;
- the core modules import no service package (only each other);
- ``racksmith.redfish`` and ``racksmith.maas`` never import each other (what they share, the
  credentials resolver and the option definitions, sits in the core);
- ``racksmith.health`` (the agent, run on GPU hosts under their system Python) imports nothing
  from the rest of racksmith.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from racksmith import pci

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "racksmith"
CORE = ("secrets", "transport", "optionspec", "macs", "disks", "pci", "containers", "errors")
CORE_EXTRA = ("credentials",)  # core modules added since the rule was written


def imported(path: Path, root: Path = REPO) -> set[str]:
    """Every ``racksmith...`` module name ``path`` imports (``from racksmith import x`` counts
    as ``racksmith.x``; relative imports are resolved against the file's package)."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return {n for n in names if n == "racksmith" or n.startswith("racksmith.")}


def _files(*tops: str) -> list[Path]:
    return sorted(p for top in tops for p in (REPO / top).rglob("*.py") if "build" not in p.parts)


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _services() -> set[str]:
    return {p.parent.name for p in PACKAGE.glob("*/__init__.py")}


def _violations(files, forbidden) -> list[str]:
    return sorted(
        f"{path.relative_to(REPO)} imports {name}"
        for path in files
        for name in imported(path)
        if forbidden(path, name)
    )


def test_production_never_imports_the_lab_or_the_test_helpers():
    test_only = ("racksmith.lab", "racksmith.testing")
    production = [
        p
        for p in _files("racksmith", "plugins")
        if not any(_under(_module(p), t) for t in test_only)
    ]
    assert _violations(production, lambda _, name: any(_under(name, t) for t in test_only)) == []


def test_core_modules_import_no_service():
    services = tuple(f"racksmith.{s}" for s in _services())
    core = [PACKAGE / f"{name}.py" for name in (*CORE, *CORE_EXTRA)]
    assert all(p.is_file() for p in core)
    assert _violations(core, lambda _, name: any(_under(name, s) for s in services)) == []


@pytest.mark.parametrize(("one", "other"), [("redfish", "maas"), ("maas", "redfish")])
def test_redfish_and_maas_never_import_each_other(one, other):
    files = _files(f"racksmith/{one}")
    assert files
    assert _violations(files, lambda _, name: _under(name, f"racksmith.{other}")) == []


def test_the_health_agent_imports_nothing_else_of_racksmith():
    files = _files("racksmith/health")
    assert files
    outside = _violations(
        files, lambda _, name: name != "racksmith" and not _under(name, "racksmith.health")
    )
    bare = _violations(files, lambda _, name: name == "racksmith")  # `import racksmith`
    assert outside + bare == []


def test_the_scan_sees_imports_in_functions_and_relative_ones(tmp_path):
    """Guard: a lazy import inside a function and a relative import are both found."""
    pkg = tmp_path / "racksmith" / "health"
    pkg.mkdir(parents=True)
    src = pkg / "x.py"
    src.write_text("def f():\n    from racksmith.redfish import client\nfrom ..maas import auth\n")
    assert {"racksmith.redfish.client", "racksmith.maas.auth"} <= imported(src, tmp_path)


def test_core_pci_kinds_agree_with_the_health_agent():
    """The PCI kind rule is written twice (core cannot import the agent, the agent imports no
    core): every vendor/class of the recorded HGX H200 bus, plus the edge cases, agree."""
    from racksmith.health.parsers.sysfs import pci_link

    fixture = REPO / "tests" / "fixtures" / "ubuntu-22.04" / "pci-sysfs.txt"
    pairs = set()
    for line in fixture.read_text().splitlines():
        attrs = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
        if "vendor" in attrs and "class" in attrs:
            pairs.add((int(attrs["vendor"], 16), int(attrs["class"], 16)))
    assert len(pairs) >= 5, "the fixture's format changed: no vendor/class pairs read"
    pairs |= {(v, c) for v in (0x10DE, 0x15B3, 0x8086, 0x1A03) for c in (
        0x030000, 0x030200, 0x068000, 0x020700, 0x020000, 0x010802, 0x060400,
    )}  # fmt: skip
    for vendor, pci_class in sorted(pairs):
        agent = pci_link("0000:00:00.0", {"vendor": hex(vendor), "class": hex(pci_class)}).kind
        assert pci.kind(vendor, pci_class) == agent, (hex(vendor), hex(pci_class))
