"""Issue 21, end to end: playbooks/firmware.yml rolls a baseline out over emulated iDRACs (the
real iDRAC9 capture behind sushy-static, racksmith's iDRAC layer with its BIOS job queue and
update tasks) through the Redfish inventory with extras [firmware, bios]: a dry run that changes
nothing, then a rollout whose second wave fails and stops it, naming the half-updated host type.

The BMCs run in this process (so two of them can be told to fail their flash); ansible-playbook
runs as a site runs it. Images are LAB STAND-IN packages (racksmith.lab.bmc.updates)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.lab.bmc.behaviour import Faults, Settings
from racksmith.lab.bmc.server import create_farm
from racksmith.lab.bmc.updates import UpdateFaults, lab_package
from racksmith.lab.spec import Server

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
PASSWORD = "Pw-racksmith-rollout-7Qx2"
FAILING_POSITION = 1  # in the rollout's order (names sorted): the first host of wave 1


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("rollout")
    servers = [
        Server(index=n, name=f"gpu{n:02d}", model="r750-h100pcie", ip="127.0.0.1", bmc_port=0)
        for n in range(1, 6)
    ]
    failing = sorted(servers, key=lambda s: s.service_tag.lower())[FAILING_POSITION]
    faults = {failing.name: Faults(update=UpdateFaults(update_fails=True))}
    farm = create_farm(
        servers,
        username="root",
        password=PASSWORD,
        ports=[0] * len(servers),
        settings=Settings(power_delay=0.3, update_seconds=0.5),
        faults=faults,
    )
    farm.start()
    secrets = root / "secrets"
    secrets.mkdir(mode=0o700)
    creds = secrets / "bmc.env"
    creds.write_text(f"RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD={PASSWORD}\n")
    creds.chmod(0o600)
    config = yaml.safe_load((REPO / "inventory" / "lab" / "redfish.yml").read_text())
    config.pop("ca_bundle")
    config.update(
        targets=[f"127.0.0.1:{b.port}" for b in farm.bmcs],
        scheme="http",
        credentials_file=str(creds),
        extras=["firmware", "bios"],
    )
    (root / "inv").mkdir()
    (root / "inv" / "redfish.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "ansible.cfg").write_text(
        "[defaults]\n"
        f"collections_path = {REPO / '.collections'}\n"
        "forks = 8\nretry_files_enabled = False\n"
        "[inventory]\nenable_plugins = racksmith.core.redfish\n"
    )
    image = root / "cpld-1.0.6.pkg"
    image.write_bytes(lab_package("CPLD.Embedded.1", "1.0.6"))
    (root / "baseline.yml").write_text(
        "host_types:\n"
        "  - name: r750\n"
        "    match: {vendor: dell, model: PowerEdge R750}\n"
        "    firmware:\n"
        "      - {component: CPLD.Embedded.1, target: '1.0.6'}\n"
        "    bios: {SysProfile: PerfPerWattOptimizedDapc}\n"
    )
    names = {b.server.service_tag.lower(): b for b in farm.bmcs}
    yield root, farm, names, image, failing.service_tag.lower()
    farm.stop()


def _play(root: Path, *extra: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))}
    env.update(
        ANSIBLE_CONFIG=str(root / "ansible.cfg"),
        ANSIBLE_LOCAL_TEMP=str(root / "tmp"),
        ANSIBLE_HOME=str(root / "home"),
        RACKSMITH_POWER_PACING_FILE=str(root / "pacing"),
        ANSIBLE_NOCOLOR="1",
    )
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(root / "inv"), "playbooks/firmware.yml", *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _vars(root: Path, names, image: Path, **more) -> str:
    return json.dumps(
        {
            "racksmith_firmware_baseline": str(root / "baseline.yml"),
            "racksmith_firmware_hosts": sorted(names),
            "racksmith_firmware_images": {"CPLD.Embedded.1": {"image": str(image)}},
            "racksmith_firmware_wave_size": 2,
            "racksmith_power_actions_per_minute": 120,
            **more,
        }
    )


def test_dry_run_plans_canary_and_waves_and_changes_nothing(site):
    root, farm, names, image, _failing = site
    rc, out = _play(root, "-e", _vars(root, names, image))
    (root / "dry-run.log").write_text(out)
    assert rc == 0, out[-4000:]
    assert "DRY RUN (racksmith_firmware_apply=true applies)" in out
    order = sorted(names)  # one host type: the canary is the first planned host
    assert f"canary: {order[0]}; waves: [['{order[0]}'], ['{order[1]}', '{order[2]}'], " in out
    assert "would flash CPLD.Embedded.1 1.0.5 -> 1.0.6 by multipart push" in out
    assert "rollout complete" in out
    assert all(b.stats["update_started"] == 0 and b.stats["bios_patch"] == 0 for b in farm.bmcs)


def test_a_failing_wave_stops_the_rollout_and_names_the_half_updated_type(site):
    root, _farm, names, image, failing = site
    rc, out = _play(root, "-e", _vars(root, names, image, racksmith_firmware_apply=True))
    (root / "apply.log").write_text(out)
    order = sorted(names)
    assert rc != 0, out[-4000:]
    waves = [[order[0]], order[1:3], order[3:5]]
    assert failing in waves[1], (failing, waves)
    ok = [h for h in order[:3] if h != failing]
    assert "canary: 0/1 failed (0%, up to 0% allowed); going on" in out
    assert f"rollout stopped after the wave 1: 1/2 failed (50% > 0% allowed; {failing})" in out, (
        out[-4000:]
    )
    assert f"not started: {', '.join(waves[2])}" in out
    assert (
        f"host type r750 is HALF-UPDATED: updated {', '.join(ok)}; "
        f"not updated {', '.join(h for h in order if h not in ok)}" in out
    )
    for name, bmc in names.items():
        started = bmc.stats["update_started"]
        if name in waves[2]:
            assert started == 0 and bmc.stats["bios_patch"] == 0, name  # never touched
        elif name == failing:
            assert started == 1 and bmc.stats["bios_patch"] == 0, name  # no retry, no BIOS
        else:
            assert bmc.updates.installed_events == [("CPLD.Embedded.1", "1.0.6")], name
            assert bmc.updates.current["SysProfile"] == "PerfPerWattOptimizedDapc", name
