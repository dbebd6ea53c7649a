"""The execution environment for AWX: the sample execution-environment.yml (ansible-builder v3)
makes a build context with ``ansible-builder create`` (no container build: no registry here),
from the real collection tarball and racksmith wheel; the collection's
meta/execution-environment.yml names the Python packages racksmith needs, never ansible."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~ \[;]", r.strip(), maxsplit=1)[0].lower() for r in requirements}


def test_meta_execution_environment_lists_what_racksmith_imports_and_never_ansible():
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    python = REPO / meta["dependencies"]["python"]
    assert (REPO / meta["dependencies"]["system"]).is_file()
    lines = [line.split("#")[0].strip() for line in python.read_text().splitlines() if line.strip()]
    listed = _names([line for line in lines if line])
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = _names(project["dependencies"])
    assert "racksmith" in listed
    assert not listed & {"ansible", "ansible-core", "ansible-base"}
    # everything the racksmith package needs at run time, less what the EE brings itself
    assert runtime - {"ansible-core", "ansible"} == listed - {"racksmith"}


def test_ansible_builder_create_makes_the_build_context(tmp_path):
    shutil.copy(REPO / "execution-environment.yml", tmp_path)
    subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path),
         str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    # ansible-builder create copies the wheel into the context and never opens it; building the
    # real one takes minutes here (pip's isolated build), so an empty file of its name stands in
    (tmp_path / "racksmith-0.1.0-py3-none-any.whl").write_bytes(b"")
    done = subprocess.run(
        [str(BIN / "ansible-builder"), "create", "-v", "3", "--output-filename", "Containerfile"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    context = tmp_path / "context"
    containerfile = (context / "Containerfile").read_text()
    assert "ansible-galaxy collection install" in containerfile
    assert "COPY _build/racksmith/ /build/racksmith/" in containerfile  # the builder stage's
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    (collection,) = galaxy["collections"]
    assert (context / "_build" / "racksmith" / Path(collection["name"]).name).is_file()
    (wheel,) = (context / "_build" / "requirements.txt").read_text().split()
    assert (context / "_build" / "racksmith" / Path(wheel).name).is_file()
