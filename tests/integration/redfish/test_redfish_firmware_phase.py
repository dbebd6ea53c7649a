"""Issue 21, end to end: the discover phase judges every server's firmware and BIOS against the
site's baseline. The lab's emulated rack (inventory/lab/rack.yml), the Redfish inventory with
``extras: [firmware, bios]``, ``playbooks/discover.yml`` with ``racksmith_firmware_baseline``.

The baseline's versions are chosen against the captured ones (Dell BIOS 1.8.2, DGX NVSwitch
96.10.4A.00.01), so what drifts is decided by the baseline, not by editing the BMCs."""

from __future__ import annotations

import json

import yaml

BASELINE = """\
host_types:
  - name: xe9680
    match: {vendor: dell}
    firmware:
      - {component: BIOS.Setup.1-1, minimum: "1.9.0", target: "1.9.0"}
  - name: dgx-h100
    match: {vendor: nvidia-dgx}
    on_drift: warn
    firmware:
      - {component: "HGX_FW_NVSwitch_*", minimum: "96.10.55.00.01", target: "96.10.55.00.01"}
"""


def test_discover_phase_quarantines_firmware_drift(running_rack):
    inventory = running_rack.lab_dir / "firmware" / "redfish.yml"
    inventory.parent.mkdir(exist_ok=True)  # the plugin takes files named *redfish.yml
    config = yaml.safe_load(running_rack.inventory.read_text())
    config["extras"] = ["firmware", "bios"]
    inventory.write_text(yaml.safe_dump(config, sort_keys=False))
    listing = running_rack.run("ansible-inventory", "-i", str(inventory), "--list")
    assert listing.returncode == 0, listing.stderr
    hostvars = json.loads(listing.stdout)["_meta"]["hostvars"]
    errors = {h: v.get("redfish_error") for h, v in hostvars.items()}
    assert len([e for e in errors.values() if e is None]) >= 5, errors
    baseline = running_rack.lab_dir / "baseline.yml"
    baseline.write_text(BASELINE)
    done = running_rack.run(
        "ansible-playbook",
        "-i",
        str(inventory),
        "playbooks/discover.yml",
        "-e",
        f"racksmith_firmware_baseline={baseline}",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    summary = " ".join(report["plays"][-1]["tasks"][-1]["hosts"]["localhost"]["msg"].split())
    drift = "firmware/BIOS drift from baseline: BIOS.Setup.1-1 1.8.2 -> 1.9.0 (upgrade, reboot)"
    assert drift in summary, summary
    # one message for the play (run once), server -> what is said of it
    (warned,) = [
        host["msg"]
        for play in report["plays"]
        for task in play["tasks"]
        if task["task"]["name"].startswith("Say which servers' firmware")
        for host in task["hosts"].values()
        if "msg" in host
    ]
    assert any(
        "HGX_FW_NVSwitch_0 96.10.4A.00.01 -> 96.10.55.00.01" in m for m in warned.values()
    ), warned
