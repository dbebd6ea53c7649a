"""End to end on real nspawn hosts: the simulator, given the rack, boots the lab test host of
the machine it deploys (with the cloud-init user data applied) and reports its IP; deploy.yml
then reaches it over SSH through the MAAS inventory; release powers it off.

Uses its own lab network so it never collides with the main lab: bridge rslab2, prefix
192.168.248, lab dir /var/lib/racksmith/lab-maas, MAAS on 127.0.0.1:15240. Tears down what it
starts (hosts, apt cache, bridge) with `racksmith lab down`'s code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from racksmith.lab import hosts, paths, spec
from racksmith.lab.rack import down

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("systemd-nspawn"),
        reason="needs root and systemd-nspawn",
    ),
]
LAB_DIR = Path("/var/lib/racksmith/lab-maas")
LISTEN = "127.0.0.1:15240"


@pytest.fixture
def lab_rack(tmp_path, monkeypatch):
    source = (
        yaml.safe_load((paths.rack_file(None)).read_text())
        if False
        else yaml.safe_load(spec.DEFAULT_SPEC.read_text())
    )
    source["network"].update({"bridge": "rslab2", "prefix": "192.168.248"})
    source["maas"]["listen"] = LISTEN
    source["servers"] = [
        {"index": 1, "name": "gpu01", "model": "hgx-h200-8gpu"},
        {"index": 2, "name": "gpu02", "model": "hgx-h200-8gpu", "faults": ["deploy_fails"]},
    ]
    rack_file = tmp_path / "rack.yml"
    rack_file.write_text(yaml.safe_dump(source))
    monkeypatch.setenv("RACKSMITH_LAB_DIR", str(LAB_DIR))
    monkeypatch.setenv("RACKSMITH_RACK", str(rack_file))
    rack = spec.load(rack_file)
    yield rack
    down(rack, paths.LabPaths(LAB_DIR))


def test_deploy_boots_the_lab_host_and_release_stops_it(lab_rack, start_maas_sim, rack):
    sim = start_maas_sim(
        "--listen",
        LISTEN,
        "--rack",
        str(lab_rack.path),
        "--lab-dir",
        str(LAB_DIR),
        "--speed",
        "300",
    )
    assert sim.url == f"http://{LISTEN}/MAAS/"
    rack.sim = sim  # the playbooks talk to this simulator, the one that knows the rack
    healthy, failing = lab_rack.server("gpu01"), lab_rack.server("gpu02")
    for server in (healthy, failing):
        rack.hosts[server.service_tag.lower()] = {
            "redfish_pxe_mac": server.pxe_mac.upper(),
            "redfish_bmc": f"127.0.0.1:{server.bmc_port}",
            "redfish_service_tag": server.service_tag,
        }
    lab = paths.LabPaths(LAB_DIR)
    no_known_hosts = "'-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'"
    rack.maas_inventory = {
        "private_key_file": str(lab.ssh_key),
        "compose": {"ansible_ssh_common_args": no_known_hosts},
    }
    rack.group_vars = {"racksmith_maas_wait_ssh": True, "racksmith_maas_ssh_timeout": 120}

    enlist = rack.playbook("enlist.yml")
    assert enlist.returncode == 0, enlist.stdout + enlist.stderr
    run = rack.playbook("deploy.yml")
    stats = rack.recap(run.stdout)
    name = healthy.service_tag.lower()
    assert stats[name]["failed"] == 0 and stats[name]["unreachable"] == 0, run.stdout
    assert stats[failing.service_tag.lower()]["failed"] == 1, run.stdout
    assert f"ok: [{name}]" in run.stdout.split("Wait until the host answers over SSH")[1]
    assert hosts.is_running(lab_rack, healthy, lab_dir=LAB_DIR)
    assert not hosts.is_running(lab_rack, failing, lab_dir=LAB_DIR)

    # The user data's effect is on the host: the file the template writes.
    ssh = hosts.ssh_argv(lab.ssh_key, healthy.ip, "cat", "/etc/racksmith/provisioned.json")
    marker = json.loads(subprocess.run(ssh, capture_output=True, check=True, text=True).stdout)
    assert marker["hostname"] == name and marker["provisioned_by"] == "racksmith"

    # A rerun changes nothing and does not reboot the host.
    again = rack.playbook("deploy.yml")
    assert rack.recap(again.stdout)[name]["changed"] == 0, again.stdout

    from racksmith.maas import lifecycle, machines
    from racksmith.maas.auth import ApiKey, Credentials
    from racksmith.maas.client import MaasClient

    with MaasClient(Credentials(sim.url, ApiKey.parse(sim.key))) as client:
        machine = machines.find(client, mac=healthy.pxe_mac)
        assert machine.ip_addresses == (healthy.ip,)
        policy = lifecycle.WaitPolicy.build(poll_interval=0.5)
        lifecycle.release(client, machine, policy)
    deadline = time.monotonic() + 60
    while hosts.is_running(lab_rack, healthy, lab_dir=LAB_DIR) and time.monotonic() < deadline:
        time.sleep(1)
    assert not hosts.is_running(lab_rack, healthy, lab_dir=LAB_DIR)
