"""Issue 21, item 6 and the demo rack: ``playbooks/discover.yml`` on the lab's emulated rack
(inventory/lab/rack.yml served by ``racksmith lab bmc``, the lab's Redfish inventory with its
extras [firmware, bmc_health]) and the lab's own settings (group_vars/all/firmware.yml: the
inline baseline, the BMC health check). gpu11 (fault firmware_old) is quarantined for its BIOS,
gpu12 (fault bmc_sel_psu) for its BMC's log entry, each reason naming what the triage files it
under; every other server the BMCs let through is not touched by either check."""

from __future__ import annotations

import json
from pathlib import Path

from racksmith.lab import spec
from racksmith.triage.classify import classify, evidence_from_report

REPO = Path(__file__).resolve().parents[3]
GROUP_VARS = "inventory/lab/group_vars/all/firmware.yml"


def _reasons(report: dict) -> dict[str, str]:
    """Host -> racksmith_quarantine_reason, from the json callback's add_host results (one task
    per judgement, run once, one loop item per quarantined server)."""
    out = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            if not task["task"]["name"].startswith("Record why each server is quarantined"):
                continue
            for result in task["hosts"].values():
                for item in result.get("results") or []:
                    added = item.get("add_host") or {}
                    reason = (added.get("host_vars") or {}).get("racksmith_quarantine_reason")
                    if reason:
                        out[added["host_name"]] = reason
    return out


def test_demo_rack_firmware_and_bmc_log_servers_are_quarantined_with_their_causes(
    running_rack, tmp_path
):
    rack = spec.load()
    run_dir = tmp_path / "run"
    done = running_rack.run(
        "ansible-playbook",
        "-i",
        str(running_rack.inventory),
        "playbooks/discover.yml",
        "-e",
        f"@{GROUP_VARS}",
        "-e",
        "racksmith_bmc_clock_correct=false",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        # the run report too: it reads the quarantine from the servers' variables
        ANSIBLE_CALLBACK_PLUGINS=str(REPO / "plugins" / "callback"),
        ANSIBLE_CALLBACKS_ENABLED="racksmith_report",
        RACKSMITH_RUN_DIR=str(run_dir),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # the json callback's document, then the report's own lines
    reasons = _reasons(json.JSONDecoder().raw_decode(done.stdout)[0])
    tag = {s.name: s.service_tag.lower() for s in rack.servers}
    old, psu = reasons[tag["gpu11"]], reasons[tag["gpu12"]]
    assert (
        old == "firmware/BIOS drift from baseline: BIOS.Setup.1-1 1.7.5 -> 1.8.2 (upgrade, reboot)"
    )
    assert psu.startswith("BMC health (psu_fault): Lclog 90001: Critical IDRAC.2.7.PSU0003 at ")
    causes = {
        host: classify(
            evidence_from_report(host, {"result": "QUARANTINED", "quarantine_reason": why})
        ).cause.name
        for host, why in reasons.items()
    }
    assert causes[tag["gpu11"]] == "firmware_drift"
    assert causes[tag["gpu12"]] == "psu_fault"
    # the healthy servers' BMCs (Dell, Supermicro, DGX captures) pass both checks
    for name in ("gpu01", "gpu02", "gpu03", "gpu04"):
        assert tag[name] not in reasons, (name, reasons.get(tag[name]))
    # the rack's other quarantines keep their own causes (gpu05 GPUs, gpu10 clock: not checked
    # here, the clock is left alone) and gain no BMC health or firmware reason
    assert causes[tag["gpu05"]] == "gpu_missing"
    assert all(
        "BMC health" not in why and "drift" not in why
        for host, why in reasons.items()
        if host not in (tag["gpu11"], tag["gpu12"])
    ), reasons
    # add_host's variables are what hostvars and the report read: every quarantine, and only
    # those, with the reason and the phase
    hosts = json.loads((run_dir / "report.json").read_text())["hosts"]
    assert {h: r["quarantine_reason"] for h, r in hosts.items() if r["quarantine_reason"]} == (
        reasons
    )
    assert all(
        hosts[h]["result"] == "QUARANTINED" and hosts[h]["failed_phase"] == "discover"
        for h in reasons
    )
