"""The configure phase (playbooks/configure.yml, every role) on real lab hosts with the lab's
group_vars: it converges, a second run changes nothing, and the hosts end up in sync with the lab
clock, with the exporters answering."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.lab import hosts
from racksmith.lab.debs import serve as debs_serve

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def deployed(it_rack, it_lab, tmp_path_factory):
    servers = it_rack.servers[:2]
    for server in servers:
        hosts.boot(it_rack, server, lab_dir=it_lab.root)
    # NVIDIA's repositories in the lab: what `racksmith lab up` serves (stopped by lab down)
    debs_serve.ensure_running(it_lab, bind=it_rack.controller_ip)
    inventory = tmp_path_factory.mktemp("inventory")
    (inventory / "group_vars").symlink_to(REPO / "inventory" / "lab" / "group_vars")
    # The lab group_vars find the controller in the rack file beside the inventory.
    (inventory / "rack.yml").symlink_to(it_rack.path)
    (inventory / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "maas_deployed": {
                    "hosts": {s.name: {"ansible_host": s.ip} for s in servers},
                    "vars": {
                        "ansible_user": "ubuntu",
                        "ansible_ssh_private_key_file": str(it_lab.ssh_key),
                        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no"
                        " -o UserKnownHostsFile=/dev/null",
                    },
                }
            }
        )
    )
    yield servers, inventory
    for server in servers:
        hosts.shutdown(it_rack, server, lab_dir=it_lab.root)


def _play(inventory, lab_dir) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_CACHE_PLUGIN": "memory",  # no facts from an earlier deployment of these names
        "RACKSMITH_LAB_DIR": str(lab_dir),
    }
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run(
        [playbook, "playbooks/configure.yml", "-i", str(inventory)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def _recap(output: str) -> dict[str, dict[str, int]]:
    recap = {}
    for name, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M):
        recap[name] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
    return recap


def test_configure_converges_then_changes_nothing(deployed, it_lab, ssh):
    servers, inventory = deployed
    first = _play(inventory, it_lab.root)
    assert first.returncode == 0, first.stdout[-3000:]
    recap = _recap(first.stdout)
    assert all(recap[s.name]["changed"] > 0 and recap[s.name]["failed"] == 0 for s in servers)

    second = _play(inventory, it_lab.root)
    assert second.returncode == 0, second.stdout[-3000:]
    assert all(_recap(second.stdout)[s.name]["changed"] == 0 for s in servers), second.stdout[
        -3000:
    ]

    for server in servers:
        tracking = ssh(it_lab, server.ip, "chronyc -n tracking")
        controller = server.ip.rsplit(".", 1)[0] + ".1"
        assert f"({controller})" in tracking, tracking
        assert "openssh-server" in ssh(it_lab, server.ip, "apt-mark showhold")
        # the GPU-host roles did their part on a GPU-less host (docs/roles.md)
        assert "nvidia" in ssh(it_lab, server.ip, "sudo cat /etc/docker/daemon.json")
        metrics = ssh(it_lab, server.ip, "curl -sS -m 5 http://127.0.0.1:9100/metrics")
        assert "node_exporter_build_info" in metrics
