"""The validate phase hands each host's HCA ports to the fabric cabling check (issue 12): a
miscabled HCA is named by the service tag of the server it sits in.

Runs only the phase's controller play (``--tags fabric``) on a generated fabric whose hosts'
HCA GUIDs are given as the host facts the validate phase reads from sysfs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _run(tmp_path: Path, inventory: dict) -> subprocess.CompletedProcess:
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump(inventory))
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nretry_files_enabled = False\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg), RACKSMITH_RUN_DIR=str(tmp_path / "run"))
    return subprocess.run(
        [BIN / "ansible-playbook", "-i", str(inv), "playbooks/validate.yml", "--tags", "fabric"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _fabric(tmp_path: Path) -> Path:
    out = tmp_path / "fabric"
    subprocess.run(
        [BIN / "racksmith", "lab", "fabric", "--hcas", "16", "--tiers", "2",
         "--fault", "miscabling", "--seed", "1", "--hcas-per-host", "8", "--out", str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


def _inventory(fabric: Path, **extra) -> dict:
    guids = json.loads((fabric / "hosts.json").read_text())
    hosts = {
        name: {"racksmith_hca_guids": {f"mlx5_{i}": g for i, g in enumerate(ports)}}
        for name, ports in guids.items()
    }
    hosts["l9nohca"] = {"racksmith_hca_guids": {}}
    return {
        "all": {
            "children": {"maas_deployed": {"hosts": hosts}},
            "vars": extra,
        }
    }


def test_swapped_hca_cables_are_named_by_host(tmp_path):
    fabric = _fabric(tmp_path)
    inventory = _inventory(
        fabric,
        racksmith_fabric_plan=str(fabric / "plan.csv"),
        racksmith_fabric_topology=str(fabric / "ibnetdiscover.txt"),
    )
    done = _run(tmp_path, inventory)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ports = json.loads((tmp_path / "run" / "fabric" / "hosts.json").read_text())
    assert sorted(ports) == ["gpu0001", "gpu0002"]  # the host without HCAs is left out
    assert ports["gpu0001"]["mlx5_0"] == "e09d730322650001"
    cabling = json.loads((tmp_path / "run" / "fabric" / "cabling.json").read_text())
    swapped = [f for f in cabling["findings"] if f["kind"] == "swapped"]
    assert swapped and set(swapped[0]["hosts"]) == {"gpu0001", "gpu0002"}, cabling
    assert {"gpu0001", "gpu0002"} <= _hosts_of(cabling)
    assert "findings in" in done.stdout


def _hosts_of(doc) -> set[str]:
    """Host names anywhere in the cabling report."""
    found: set[str] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "hosts" and isinstance(value, list):
                found |= {str(v) for v in value}
            else:
                found |= _hosts_of(value)
    elif isinstance(doc, list):
        for item in doc:
            found |= _hosts_of(item)
    return found


def test_without_a_plan_the_ports_are_written_and_the_check_says_why_not(tmp_path):
    done = _run(tmp_path, _inventory(_fabric(tmp_path)))
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "run" / "fabric" / "hosts.json").is_file()
    assert not (tmp_path / "run" / "fabric" / "cabling.json").exists()
    assert "cabling check not run: set racksmith_fabric_plan" in done.stdout
