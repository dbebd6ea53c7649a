"""Role lab_gpu_standin applied by ansible-playbook (local connection, two "hosts" with their own
prefix): one archive per distinct stand-in, the same tree on the host as the builder makes, a
second run in a new run directory changes nothing, check mode changes nothing, and a stand-in
file edited on the host or a stand-in switched to another fixture is put right."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.testing.inventory import write_inventory

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="the role installs the stand-in owned by root: needs root"
)

PLAY = """
- name: Lay down the LAB STAND-IN
  hosts: all
  gather_facts: false
  tasks:
    - name: Role lab_gpu_standin
      ansible.builtin.include_role:
        name: racksmith.core.lab_gpu_standin
"""


@pytest.fixture
def site(tmp_path):
    """Two local hosts: gpu01 replays the healthy capture, gpu02 the Xid 79 fixture."""
    hosts = {
        "gpu01": {"lab_gpu_standin_prefix": str(tmp_path / "gpu01" / "standin")},
        "gpu02": {
            "lab_gpu_standin_prefix": str(tmp_path / "gpu02" / "standin"),
            "lab_gpu_standin_overlays": [str(FIXTURES / "h200-x2-failures" / "xid79")],
        },
    }
    write_inventory(
        tmp_path / "hosts.yml",
        hosts,
        ansible_connection="local",
        ansible_python_interpreter=sys.executable,
        racksmith_lab=True,
        lab_gpu_standin_capture=str(FIXTURES / "h200-x2"),
    )
    (tmp_path / "play.yml").write_text(PLAY)
    return tmp_path, hosts


def _play(site_dir: Path, run: str, *extra: str) -> tuple[dict, str]:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        "RACKSMITH_RUN_DIR": str(site_dir / "runs" / run),
    }
    playbook = Path(sys.executable).parent / "ansible-playbook"
    done = subprocess.run(
        [str(playbook), str(site_dir / "play.yml"), "-i", str(site_dir / "hosts.yml"), *extra],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    recap = {
        name: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
        for name, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", done.stdout, re.M)
    }
    return recap, done.stdout


def _replay(prefix: str, *args: str) -> str:
    return subprocess.run(
        [f"{prefix}/bin/{args[0]}", *args[1:]], capture_output=True, text=True, check=True
    ).stdout


def test_applies_one_archive_per_stand_in_and_reruns_change_nothing(site):
    site_dir, hosts = site
    first, _ = _play(site_dir, "1")
    assert all(first[h]["changed"] > 0 and first[h]["failed"] == 0 for h in hosts), first

    # one build (tree + archive) per distinct stand-in, and the record of who got which
    standin = site_dir / "runs" / "1" / "standin"
    builds = sorted(p.stem for p in standin.glob("*.tar"))
    assert len(builds) == 2, builds
    healthy, xid79 = sorted(builds, key=len)
    assert healthy.startswith("h200-x2-") and xid79.startswith("h200-x2+xid79-"), builds
    assert (standin / healthy / "RACKSMITH_STANDIN").is_file()
    record = yaml.safe_load((standin / "hosts.json").read_text())
    assert record == {"gpu01": healthy, "gpu02": xid79}

    # the host's tree is the builder's tree: tools, sysfs, capture, marker
    for name, expected in (("gpu01", "h200-x2\n"), ("gpu02", "h200-x2 with xid79 applied\n")):
        prefix = hosts[name]["lab_gpu_standin_prefix"]
        assert Path(prefix, "RACKSMITH_STANDIN").read_text().endswith(expected)
        assert "LAB STAND-IN" in Path(prefix, "bin", "replay-tool").read_text()
        assert Path(prefix, "bin", "nvidia-smi").is_symlink()
        assert Path(prefix, "sys", "bus", "pci", "devices").is_dir()
        smi = _replay(prefix, "nvidia-smi", "-q", "-x")
        assert smi == (FIXTURES / "h200-x2" / "smi_q.xml").read_text()
    assert "Xid" in _replay(hosts["gpu02"]["lab_gpu_standin_prefix"], "dmesg")
    assert "79" in _replay(hosts["gpu02"]["lab_gpu_standin_prefix"], "dmesg")

    # a new run rebuilds in its own directory: same bytes, so nothing changes on the hosts
    second, _ = _play(site_dir, "2")
    assert all(second[h]["changed"] == 0 and second[h]["failed"] == 0 for h in hosts), second
    rebuilt = site_dir / "runs" / "2" / "standin"
    assert {p.name: p.read_bytes() for p in rebuilt.glob("*.tar")} == {
        p.name: p.read_bytes() for p in standin.glob("*.tar")
    }
    check, _ = _play(site_dir, "3", "--check")
    assert all(check[h]["changed"] == 0 for h in hosts), check


def test_check_mode_on_a_new_host_writes_nothing(site):
    site_dir, hosts = site
    recap, out = _play(site_dir, "1", "--check")
    assert all(recap[h]["changed"] > 0 and recap[h]["failed"] == 0 for h in hosts), out
    install = out.split("Install the archive unless", 1)[1].split("TASK [", 1)[0]
    assert "changed: [gpu01]" in install and "changed: [gpu02]" in install, install
    assert not any(Path(h["lab_gpu_standin_prefix"]).exists() for h in hosts.values())


def test_drift_and_a_new_fixture_are_put_right(site):
    site_dir, hosts = site
    _play(site_dir, "1")
    gpu01 = Path(hosts["gpu01"]["lab_gpu_standin_prefix"])
    (gpu01 / "capture" / "smi_q.xml").write_text("edited on the host\n")
    check, _ = _play(site_dir, "2", "--check")
    assert check["gpu01"]["changed"] > 0 and check["gpu02"]["changed"] == 0, check
    assert (gpu01 / "capture" / "smi_q.xml").read_text() == "edited on the host\n"
    fixed, _ = _play(site_dir, "3")
    assert fixed["gpu01"]["changed"] > 0 and fixed["gpu02"]["changed"] == 0, fixed
    assert _replay(str(gpu01), "nvidia-smi", "-q", "-x").startswith("<?xml")

    # gpu02 goes back to the healthy capture: the overlay's files must not linger
    gpu02 = Path(hosts["gpu02"]["lab_gpu_standin_prefix"])
    (gpu02 / "capture" / "left-over.rc").write_text("1\n")
    inventory = yaml.safe_load((site_dir / "hosts.yml").read_text())
    del inventory["all"]["hosts"]["gpu02"]["lab_gpu_standin_overlays"]
    (site_dir / "hosts.yml").write_text(yaml.safe_dump(inventory))
    healed, _ = _play(site_dir, "4")
    assert healed["gpu02"]["changed"] > 0 and healed["gpu01"]["changed"] == 0, healed
    assert not (gpu02 / "capture" / "left-over.rc").exists()
    assert (gpu02 / "RACKSMITH_STANDIN").read_text() == "replaying captured outputs from h200-x2\n"
    assert (gpu02 / "capture" / "dmesg.txt").read_bytes() == (
        FIXTURES / "h200-x2" / "dmesg.txt"
    ).read_bytes()
