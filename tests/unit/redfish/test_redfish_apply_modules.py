"""The redfish_bios and redfish_firmware modules, run as Ansible runs them (a module process with
its JSON arguments) against an emulated iDRAC: dry run by default, act only when told."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from racksmith.lab.bmc.behaviour import Faults, Settings
from racksmith.lab.bmc.updates import UpdateFaults, lab_package

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def collections_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("collections")
    (root / "ansible_collections" / "racksmith").mkdir(parents=True)
    (root / "ansible_collections" / "racksmith" / "core").symlink_to(REPO)
    return root


@pytest.fixture
def module(collections_root, tmp_path, creds):
    password = creds.password_value()

    def run(name: str, bmc, **args: Any) -> tuple[int, dict[str, Any]]:
        args = {
            "bmc": f"127.0.0.1:{bmc.port}",
            "scheme": "http",
            "username": "root",
            "password": password,
            **args,
        }
        path = tmp_path / f"{name}-args.json"
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env["PYTHONPATH"] = str(collections_root)
        done = subprocess.run(
            [sys.executable, str(REPO / "plugins" / "modules" / f"{name}.py"), str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert password not in done.stdout + done.stderr
        return done.returncode, json.loads(done.stdout)

    return run


def test_redfish_bios_is_a_dry_run_until_told(rack, server, module):
    lab = rack(
        [server(1, model="r750-h100pcie")], settings=Settings(power_delay=0.2), scheme="http"
    )
    bmc = lab.bmc("gpu01")
    wanted = {"SysProfile": "PerfPerWattOptimizedDapc"}
    rc, dry = module("redfish_bios", bmc, attributes=wanted)
    assert rc == 0 and dry["changed"] and dry["dry_run"] and dry["msg"].startswith("would PATCH")
    assert bmc.updates.pending == {}
    rc, done = module("redfish_bios", bmc, attributes=wanted, dry_run=False, reboot=True, poll=0.1)
    assert rc == 0 and done["verified"] == "current" and done["after"] == wanted
    assert done["diff"] == {"before": {"SysProfile": "PerfOptimized"}, "after": wanted}


def test_redfish_firmware_reports_each_step_and_fails_without_retrying(
    rack, server, module, tmp_path
):
    lab = rack(
        [server(1, model="r750-h100pcie")],
        settings=Settings(power_delay=0.2, update_seconds=0.5),
        faults={"gpu01": Faults(update=UpdateFaults(update_fails=True))},
        scheme="http",
    )
    bmc = lab.bmc("gpu01")
    image = tmp_path / "cpld.pkg"
    image.write_bytes(lab_package("CPLD.Embedded.1", "1.0.6"))
    updates = [{"component": "CPLD.Embedded.1", "version": "1.0.6", "image": str(image)}]
    rc, dry = module("redfish_firmware", bmc, updates=updates)
    assert rc == 0 and dry["msg"] == "would flash CPLD.Embedded.1 1.0.5 -> 1.0.6 by multipart push"
    rc, failed = module("redfish_firmware", bmc, updates=updates, dry_run=False, poll=0.2)
    assert rc == 1 and failed["failed"] and failed["updates"][0]["status"] == "failed"
    assert "RED007" in failed["msg"] and bmc.stats["update_started"] == 1


def test_redfish_firmware_resets_a_staged_image_only_when_allowed(rack, server, module, tmp_path):
    """An iDRAC BIOS package is staged and runs after the next reset: without ``reset`` the
    module says "staged, needs a reset" (status staged, nothing reset); with it, it resets once,
    waits, and verifies the new BIOS runs."""
    lab = rack(
        [server(1, model="r750-h100pcie"), server(2, model="r750-h100pcie")],
        settings=Settings(power_delay=0.2, update_seconds=0.5),
        scheme="http",
    )
    image = tmp_path / "bios.pkg"
    image.write_bytes(lab_package("BIOS.Setup.1-1", "1.9.0"))
    updates = [{"component": "BIOS.Setup.1-1", "version": "1.9.0", "image": str(image)}]
    kept = lab.bmc("gpu01")
    rc, staged = module("redfish_firmware", kept, updates=updates, dry_run=False, poll=0.2)
    assert rc == 0 and staged["changed"], staged
    assert "staged, needs a reset: BIOS.Setup.1-1 (1.9.0 staged, 1.8.2 runs" in staged["msg"]
    assert "NOT active yet" in staged["msg"] and staged["needs_reset"] == ["BIOS.Setup.1-1"]
    assert (staged["updates"][0]["status"], staged["updates"][0]["verified"]) == (
        "staged",
        "staged",
    )
    assert kept.boots == [] and kept.power_state() == "Off"
    reset = lab.bmc("gpu02")
    rc, done = module(
        "redfish_firmware", reset, updates=updates, dry_run=False, poll=0.2, reset=True
    )
    assert rc == 0 and done["changed"], done
    assert (done["updates"][0]["status"], done["updates"][0]["verified"]) == ("ok", "active")
    assert done["after"] == {"BIOS.Setup.1-1": "1.9.0"} and "needs_reset" not in done
    assert len(reset.boots) == 1 and reset.updates.installed_events == [("BIOS.Setup.1-1", "1.9.0")]
