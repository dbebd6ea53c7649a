"""The collection racksmith.core as a site gets it: ``ansible-galaxy collection build`` makes a
tarball, ``ansible-galaxy collection install`` puts it in an empty collections directory, and
``ansible-doc <fqcn>`` documents every module, plugin and role from an empty directory, with
nothing from this checkout on any path (the racksmith Python package comes from the venv, as
it would from pip).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
# what ansible-doc calls each plugin directory's type
PLUGIN_TYPES = {"modules": "module", "inventory": "inventory", "callback": "callback"}


def ansible(*cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(BIN / cmd[0]), *cmd[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@dataclass(frozen=True)
class Installed:
    root: Path  # the collections directory racksmith.core was installed into
    tarball: Path
    empty: Path  # where ansible-doc runs: nothing but an empty ansible.cfg
    env: dict[str, str]  # sees only the installed collection


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("collection")
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "ansible.cfg").write_text("[defaults]\n")  # not the project's settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(empty / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"),
        # the checkout is linked into the venv as racksmith.core (scripts/setup.sh): off, so
        # only the installed tarball can answer
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
        ANSIBLE_HOME=str(tmp / "home"),
        ANSIBLE_NOCOLOR="1",
    )
    ansible(
        "ansible-galaxy",
        "collection",
        "build",
        "--output-path",
        str(tmp),
        str(REPO),
        cwd=empty,
        env=env,
    )
    tarball = tmp / f"racksmith-core-{VERSION}.tar.gz"
    ansible(
        "ansible-galaxy",
        "collection",
        "install",
        "--offline",
        "-p",
        str(tmp / "collections"),
        str(tarball),
        cwd=empty,
        env=env,
    )
    return Installed(tmp / "collections", tarball, empty, env)


def test_tarball_holds_the_ansible_content_and_not_the_repository_tooling(installed):
    with tarfile.open(installed.tarball) as tar:
        names = set(tar.getnames())
    assert {"MANIFEST.json", "FILES.json", "meta/runtime.yml", "README.md"} <= names
    assert {
        f"plugins/modules/{p.name}" for p in (REPO / "plugins" / "modules").glob("*.py")
    } <= names
    assert any(n.startswith("roles/base/tasks/") for n in names)
    assert any(n.startswith("playbooks/") for n in names)
    leaked = [
        n
        for n in names
        if n.split("/")[0] in (".venv", "runs", ".lab", "racksmith", "scripts", ".git")
        or n.startswith(("tests/unit", "tests/fixtures", "tests/integration"))
        or "__pycache__" in n
    ]
    assert not leaked, leaked


def _documented(plugin_type: str, names: list[str], installed: Installed) -> dict:
    done = ansible(
        "ansible-doc", "-t", plugin_type, "--json", *names, cwd=installed.empty, env=installed.env
    )
    docs = json.loads(done.stdout)
    assert sorted(docs) == sorted(names), done.stderr
    for name, entry in docs.items():
        doc = entry["doc"]
        assert doc.get("short_description"), name
        assert doc.get("collection") == "racksmith.core", name
        if plugin_type != "role":
            assert Path(doc["filename"]).is_relative_to(installed.root), (name, doc["filename"])
    return docs


def test_ansible_doc_documents_every_module_inventory_and_callback(installed):
    for directory, plugin_type in PLUGIN_TYPES.items():
        files = sorted((REPO / "plugins" / directory).glob("*.py"))
        names = [f"racksmith.core.{p.stem}" for p in files if not p.name.startswith("_")]
        assert names, directory
        docs = _documented(plugin_type, names, installed)
        if plugin_type == "module":  # fragments resolved by FQCN: attributes and options present
            for name, entry in docs.items():
                assert {"check_mode", "diff_mode", "platform"} <= set(entry["doc"]["attributes"])
                assert entry["doc"]["options"], name


def test_ansible_doc_documents_every_filter(installed):
    listed = ansible(
        "ansible-doc",
        "-t",
        "filter",
        "-l",
        "--json",
        "racksmith.core",
        cwd=installed.empty,
        env=installed.env,
    )
    names = sorted(json.loads(listed.stdout))
    assert names, "no filters listed"
    _documented("filter", names, installed)


def test_ansible_doc_documents_every_role_with_an_argument_spec(installed):
    roles = sorted(p.parents[1].name for p in (REPO / "roles").glob("*/meta/argument_specs.yml"))
    assert roles
    done = ansible(
        "ansible-doc",
        "-t",
        "role",
        "--json",
        *[f"racksmith.core.{r}" for r in roles],
        cwd=installed.empty,
        env=installed.env,
    )
    docs = json.loads(done.stdout)
    assert sorted(docs) == sorted(f"racksmith.core.{r}" for r in roles)
    for name, entry in docs.items():
        assert entry["entry_points"]["main"]["short_description"], name
        assert Path(entry["path"]).is_relative_to(installed.root), (name, entry["path"])
