"""The collection racksmith.core as a site gets it: ``ansible-galaxy collection build`` makes a
tarball, ``ansible-galaxy collection install`` puts it in an empty collections directory (with
the collections galaxy.yml declares, offline, from the `ansible` package's copies), and from an
empty directory, with nothing from this checkout on any path (the racksmith Python package comes
from the venv, as it would from pip): ``ansible-doc <fqcn>`` documents every module, plugin and
role; each inventory plugin answers ``ansible-inventory --list --export`` as an AWX inventory
source runs it; ``racksmith.core.site`` and ``racksmith.core.reprovision`` resolve by name.
The lab run of ``ansible-playbook racksmith.core.site`` is test_installed_site_lab.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from racksmith.testing.rack import hgx_servers, write_rack

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
VERSION = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
# what ansible-doc calls each plugin directory's type
PLUGIN_TYPES = {"modules": "module", "inventory": "inventory", "callback": "callback"}
#: The collections galaxy.yml declares, installed offline from the `ansible` package's copies
#: (Galaxy is not reachable here; a site installs them from Galaxy with racksmith.core).
SITE_PACKAGES = Path(yaml.__file__).resolve().parents[1]
DEPENDENCIES = [
    SITE_PACKAGES / "ansible_collections" / Path(*name.split("."))
    for name in yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"]
]


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
        *map(str, DEPENDENCIES),
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
        # every entry point documented (roles/racksmith has only `knobs`: no validation task)
        points = entry["entry_points"]
        assert points and all(p["short_description"] for p in points.values()), name
        assert Path(entry["path"]).is_relative_to(installed.root), (name, entry["path"])


def test_declared_dependencies_are_installed_with_it(installed):
    assert sorted(yaml.safe_load((REPO / "galaxy.yml").read_text())["dependencies"]) == [
        "ansible.posix",
        "community.general",
    ]
    listed = ansible(
        "ansible-galaxy", "collection", "list", "--format", "json", "-p", str(installed.root),
        cwd=installed.empty, env=installed.env,
    )  # fmt: skip
    found = {name for path in json.loads(listed.stdout).values() for name in path}
    assert {"racksmith.core", "ansible.posix", "community.general"} <= found
    requirements = yaml.safe_load((REPO / "collections" / "requirements.yml").read_text())
    assert {c["name"] for c in requirements["collections"]} == {
        "ansible.posix",
        "community.general",
    }


@pytest.mark.parametrize("name", ["site", "reprovision"])
def test_collection_playbooks_resolve_by_name(installed, name):
    """``ansible-playbook racksmith.core.site`` from an empty directory: every phase and role
    resolves from the installed tarball (the lab run is in test_installed_site_lab.py)."""
    inventory = installed.empty / "hosts.ini"
    inventory.write_text("localhost ansible_connection=local\n")
    listed = ansible(
        "ansible-playbook", f"racksmith.core.{name}", "-i", str(inventory), "--list-tasks",
        cwd=installed.empty, env=installed.env,
    )  # fmt: skip
    assert f"playbook: {installed.root}/ansible_collections/racksmith/core/playbooks/" in (
        listed.stdout
    )
    for phase in ("enlist", "deploy", "configure", "validate"):
        assert f"TAGS: [{phase}]" in listed.stdout, phase
    if name == "site":  # the run's summary for AWX (set_stats) ends the flow
        assert "Summarise the run\tTAGS: [always]" in listed.stdout


def _start_bmcs(tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen, list[int]]:
    rack = write_rack(
        tmp, bridge="rsnone0", prefix="192.168.250", bmc_base_port=28443,
        maas_listen="127.0.0.1:0", servers=hgx_servers(2),
    )  # fmt: skip
    log = (tmp / "bmc.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "racksmith", "lab", "bmc", "--rack", str(rack.path),
         "--lab-dir", str(tmp), "--base-port", "0"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
    )  # fmt: skip
    state = tmp / "bmc" / "state.json"
    for _ in range(300):
        if state.exists() or proc.poll() is not None:
            break
        __import__("time").sleep(0.1)
    if not state.exists():
        proc.kill()
        pytest.fail(f"racksmith lab bmc did not start: {(tmp / 'bmc.log').read_text()}")
    return proc, [b["port"] for b in json.loads(state.read_text())["bmcs"]]


def _start_maas(tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "racksmith", "lab", "maas", "--listen", "127.0.0.1:0",
         "--state", str(tmp / "maas-state.json")],
        stdout=subprocess.PIPE, stderr=(tmp / "maas.log").open("w"), text=True,
        start_new_session=True, env=env,
    )  # fmt: skip
    key = proc.stdout.readline().strip()
    match = re.search(r"at (http://\S+/MAAS/)", proc.stdout.readline())
    if not key or not match:
        proc.kill()
        pytest.fail(f"MAAS simulator did not start: {(tmp / 'maas.log').read_text()}")
    return proc, match.group(1), key


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # our own child, by its process group
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_inventory_plugins_as_awx_inventory_sources(installed, tmp_path):
    """AWX runs ``ansible-inventory -i SOURCE --list --export`` for an inventory source: each
    plugin, from the installed tarball, against the lab's BMC emulation and MAAS simulator
    (no root, no bridge: both on loopback)."""
    env = {k: v for k, v in installed.env.items() if not k.startswith(("RACKSMITH_", "MAAS_"))}
    env["RACKSMITH_LAB_DIR"] = str(tmp_path)  # the lab's redfish.yml expands it
    (installed.empty / "ansible.cfg").write_text(
        "[defaults]\n[inventory]\nenable_plugins = racksmith.core.redfish, racksmith.core.maas\n"
    )
    bmcs, ports = _start_bmcs(tmp_path, env)
    maas, url, key = _start_maas(tmp_path, env)
    try:
        redfish = yaml.safe_load((REPO / "inventory" / "lab" / "redfish.yml").read_text())
        redfish["targets"] = [f"127.0.0.1:{p}" for p in ports]
        (tmp_path / "redfish.yml").write_text(yaml.safe_dump(redfish))
        maas_cfg = yaml.safe_load((REPO / "inventory" / "lab" / "maas.yml").read_text())
        (tmp_path / "maas.yml").write_text(yaml.safe_dump(maas_cfg))
        done = ansible(
            "ansible-inventory", "-i", str(tmp_path / "redfish.yml"), "--list", "--export",
            cwd=installed.empty, env=env,
        )  # fmt: skip
        data = json.loads(done.stdout)
        assert len(data["bmc_ok"]["hosts"]) == 2, data.keys()
        host = data["_meta"]["hostvars"][data["bmc_ok"]["hosts"][0]]
        assert host["redfish_gpus"] and host["redfish_pxe_mac"]
        from racksmith.secrets import read_env_file

        secrets = read_env_file(tmp_path / "secrets" / "bmc.env")
        assert secrets["RACKSMITH_BMC_PASSWORD"] not in done.stdout
        done = ansible(
            "ansible-inventory", "-i", str(tmp_path / "maas.yml"), "--list", "--export",
            cwd=installed.empty, env={**env, "MAAS_URL": url, "MAAS_API_KEY": key},
        )  # fmt: skip
        data = json.loads(done.stdout)
        assert "all" in data and key not in done.stdout
    finally:
        _stop(bmcs)
        _stop(maas)
