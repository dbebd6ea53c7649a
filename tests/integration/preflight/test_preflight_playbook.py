"""playbooks/preflight.yml against small static inventories: it passes a sane one and fails
each broken one with a message that says what to fix. Needs no root and no lab."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.testing.inventory import write_inventory

REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def _inventory(tmp_path: Path, hosts: dict, **extra_vars) -> Path:
    secret = tmp_path / "bmc.env"
    secret.write_text("RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD=x\n")
    secret.chmod(0o600)
    return write_inventory(
        tmp_path / "hosts.yml",
        hosts,
        racksmith_preflight_credentials=[
            {"name": "BMC", "env": ["RS_T_USER", "RS_T_PASS"], "file": str(secret)}
        ],
        **extra_vars,
    )


def _run(tmp_path: Path, inventory: Path, *args: str, env: dict | None = None):
    cfg = tmp_path / "ansible.cfg"  # builtin callbacks only: no run report written by tests
    cfg.write_text(
        f"[defaults]\nretry_files_enabled = False\ncollections_path = {REPO / '.collections'}\n"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RS_T_")}
    environment.update({"ANSIBLE_CONFIG": str(cfg), "ANSIBLE_NOCOLOR": "1", **(env or {})})
    return subprocess.run(
        [PLAYBOOK, str(REPO / "playbooks" / "preflight.yml"), "-i", str(inventory), *args],
        capture_output=True, text=True, env=environment, check=False, cwd=REPO,
    )  # fmt: skip


GOOD = {
    "a1": {"ansible_host": "10.0.0.5", "redfish_pxe_mac": "02:5a:00:01:01:00"},
    "a2": {"ansible_host": "10.0.0.6", "redfish_pxe_mac": "02:5a:00:02:01:00"},
}


def test_a_sane_inventory_passes(tmp_path):
    done = _run(tmp_path, _inventory(tmp_path, GOOD))
    assert done.returncode == 0, done.stdout[-2000:]


def test_credentials_from_the_environment_are_enough(tmp_path):
    inventory = _inventory(tmp_path, GOOD)
    (tmp_path / "bmc.env").unlink()
    done = _run(tmp_path, inventory, env={"RS_T_USER": "u", "RS_T_PASS": "p"})
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        ("missing", "BMC credentials are missing: set RS_T_USER and RS_T_PASS"),
        ("world-readable", "mode 0600; it is mode 0644"),
    ],
)
def test_credentials_must_be_provided_privately(tmp_path, mutate, expected):
    inventory = _inventory(tmp_path, GOOD)
    if mutate == "missing":
        (tmp_path / "bmc.env").unlink()
    else:
        (tmp_path / "bmc.env").chmod(0o644)
    done = _run(tmp_path, inventory)
    assert done.returncode != 0
    assert expected in " ".join(done.stdout.split())


def test_two_hosts_with_one_address_or_mac_fail(tmp_path):
    hosts = {
        **GOOD,
        "a3": {"ansible_host": "10.0.0.5", "redfish_pxe_mac": "02:5A:00:01:01:00"},
    }
    done = _run(tmp_path, _inventory(tmp_path, hosts))
    out = " ".join(done.stdout.split())
    assert done.returncode != 0
    assert "ansible_host 10.0.0.5 on a1, a3" in out
    assert "redfish_pxe_mac 02:5a:00:01:01:00 on a1, a3" in out  # MACs compare case-blind


def test_hosts_discovery_flagged_as_duplicates_are_left_to_discovery(tmp_path):
    hosts = {**GOOD, "a3": {"ansible_host": "10.0.0.7", "redfish_pxe_mac": "02:5a:00:01:01:00"}}
    inventory = _inventory(tmp_path, hosts)
    data = yaml.safe_load(inventory.read_text())
    data["all"]["children"] = {"bmc_duplicate": {"hosts": {"a1": None, "a3": None}}}
    inventory.write_text(yaml.safe_dump(data))
    done = _run(tmp_path, inventory)
    assert done.returncode == 0, done.stdout[-2000:]


def test_redfish_and_maas_must_agree_on_a_hosts_mac(tmp_path):
    hosts = {"a1": {**GOOD["a1"], "maas_pxe_mac": "02:5a:00:09:01:00"}, "a2": GOOD["a2"]}
    done = _run(tmp_path, _inventory(tmp_path, hosts))
    assert done.returncode != 0
    assert "a1 (Redfish 02:5a:00:01:01:00, MAAS 02:5a:00:09:01:00)" in " ".join(done.stdout.split())


def test_an_empty_inventory_fails(tmp_path):
    done = _run(tmp_path, _inventory(tmp_path, {}))
    assert done.returncode != 0
    assert "has no hosts" in done.stdout


def test_a_run_without_an_inventory_says_how_to_pick_one(tmp_path):
    """ansible.cfg names no rack (issue 24): without -i a run reads the empty placeholder and
    preflight stops it, naming the choices, instead of acting on the lab's addresses."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    environment.update({"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    environment["RACKSMITH_RUNS_DIR"] = str(tmp_path / "runs")  # the report callback's output
    done = subprocess.run(
        [PLAYBOOK, str(REPO / "playbooks" / "preflight.yml")],
        capture_output=True, text=True, env=environment, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode != 0
    assert "no inventory chosen" in done.stdout and "-i inventory/lab/" in done.stdout
    with open(REPO / "ansible.cfg") as cfg:
        assert "inventory = inventory/unset.yml" in cfg.read()
