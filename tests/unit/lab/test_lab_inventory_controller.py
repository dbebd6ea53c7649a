"""inventory/lab's group_vars find the controller (apt cache, NTP, LAB STAND-IN repository) from
the rack's address plan, for any rack size: servers 31+ of a big rack sit in the other /24 of a
/23, where ".1 of the host's address" (the old derivation) is nobody. ansible-playbook itself
resolves the variables, through the checkout's group_vars."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from racksmith.lab import generate
from racksmith.lab.spec import RackSpec

REPO = Path(__file__).resolve().parents[3]
GROUP_VARS = REPO / "inventory" / "lab" / "group_vars"
SHOW = """
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg:
          controller: "{{ racksmith_lab_controller }}"
          proxy: "{{ base_apt_proxy }}"
          ntp: "{{ base_chrony_servers }}"
          direct: "{{ base_apt_proxy_direct_hosts }}"
          dcgm: "{{ dcgm_repo_mirror }}"
"""


def _inventory(folder: Path, rack_text: str | None, hosts: dict[str, str]) -> Path:
    """An inventory like inventory/lab: the lab's group_vars, static hosts for the plugins'
    (which need a running lab), and the rack file beside them unless ``rack_text`` is None."""
    folder.mkdir()
    (folder / "group_vars").symlink_to(GROUP_VARS)
    if rack_text is not None:
        (folder / "rack.yml").write_text(rack_text)
    body = {"all": {"hosts": {name: {"ansible_host": ip} for name, ip in hosts.items()}}}
    (folder / "hosts.yml").write_text(json.dumps(body))
    return folder


def _rack(servers: int, prefix: str, port: int = 3142) -> tuple[str, RackSpec]:
    plan = generate.RackPlan(servers=servers, prefix=prefix, apt_proxy_port=port)
    text = generate.render(plan)
    return text, generate.check_loads(text)


def _show(tmp_path: Path, *inventories: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cfg = tmp_path / "ansible.cfg"  # only what resolving variables needs: no report callback
    cfg.write_text("[defaults]\nstdout_callback = json\n[inventory]\nenable_plugins = yaml\n")
    (tmp_path / "show.yml").write_text(SHOW)
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "show.yml")]
    for inventory in inventories:
        argv += ["-i", f"{inventory}/"]
    clean = {k: v for k, v in os.environ.items() if k != "RACKSMITH_RACK"}
    return subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, check=False, timeout=120,
        env={**clean, "ANSIBLE_CONFIG": str(cfg), "ANSIBLE_NOCOLOR": "1", **env},
    )  # fmt: skip


def _shown(done: subprocess.CompletedProcess) -> dict[str, dict]:
    result = json.loads(done.stdout)
    return {
        host: outcome.get("msg", outcome)
        for task in result["plays"][0]["tasks"]
        for host, outcome in task["hosts"].items()
    }


def test_every_server_of_a_128_server_rack_finds_the_racks_controller(tmp_path):
    big_text, big = _rack(128, "192.168.247", port=3199)  # a /23: 192.168.246.0/23
    small_text, small = _rack(10, "192.168.236")  # a /24, like the demo
    # first block, first of the other /24, one there that looks like a first-block address
    # (.20-.49), and the last
    picks = [big.servers[i] for i in (0, 30, 59, 127)]
    assert [s.ip for s in picks] == [
        "192.168.247.20", "192.168.246.1", "192.168.246.30", "192.168.246.98",
    ]  # fmt: skip
    big_inv = _inventory(tmp_path / "big", big_text, {s.name: s.ip for s in picks})
    small_inv = _inventory(tmp_path / "small", small_text, {"small01": small.servers[0].ip})
    done = _show(tmp_path, big_inv, small_inv, env={})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    shown = _shown(done)
    # $RACKSMITH_RACK names the rack as for `racksmith lab`, over the inventory's rack.yml
    (tmp_path / "rack-by-env.yml").write_text(small_text)
    env_inv = _inventory(tmp_path / "env", big_text, {"byenv": small.servers[1].ip, "pending": ""})
    done = _show(tmp_path, env_inv, env={"RACKSMITH_RACK": str(tmp_path / "rack-by-env.yml")})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    shown.update(_shown(done))
    assert big.controller_ip == "192.168.247.1"
    for server in picks:
        assert shown[server.name] == {
            "controller": "192.168.247.1",
            "proxy": "http://192.168.247.1:3199",  # the rack's apt cache port, too
            "ntp": ["192.168.247.1"],
            "direct": ["192.168.247.1"],
            "dcgm": "http://192.168.247.1:3143",
        }, server
    for name in ("small01", "byenv"):
        assert shown[name]["controller"] == small.controller_ip == "192.168.236.1"
        assert shown[name]["proxy"] == "http://192.168.236.1:3142"
    assert shown["pending"]["proxy"] == ""  # no address yet (deploy phase): no proxy


def test_an_inventory_without_a_rack_file_fails_naming_what_it_needs(tmp_path):
    inventory = _inventory(tmp_path / "bare", None, {"gpu01": "192.168.250.20"})
    done = _show(tmp_path, inventory, env={})
    assert done.returncode != 0
    assert f"no rack file for gpu01 ({inventory}/rack.yml)" in done.stdout + done.stderr
    assert "set RACKSMITH_RACK" in done.stdout + done.stderr
    gone = tmp_path / "gone.yml"
    done = _show(tmp_path, inventory, env={"RACKSMITH_RACK": str(gone)})
    assert done.returncode != 0 and f"no rack file for gpu01 ({gone})" in done.stdout
