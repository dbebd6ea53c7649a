"""A generated run directory of any size: the report.json and golden-set.json a run of
``site.yml`` writes, with the failure mix of a real rack (the demo's own reasons, plus health
failures as the agent words them). Used by the report tests and tests/bench/bench_report.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

PHASES = ("discover", "enlist", "deploy", "configure", "validate")

#: (weight, result, failed phase, reason, extra host facts, expected cause)
FAILURES = (
    (
        3,
        "FAILED:discover",
        "discover",
        "BMC 10.1.{a}.{b}:443: POST /redfish/v1/SessionService/Sessions: cannot connect "
        "([Errno 111] Connection refused)",
        {"error_kind": "unreachable"},
        "bmc_unreachable",
    ),
    (
        2,
        "FAILED:discover",
        "discover",
        "BMC 10.1.{a}.{b}:443: login: HTTP 401 (credentials rejected)",
        {"error_kind": "auth_failed"},
        "bmc_auth",
    ),
    (
        3,
        "QUARANTINED",
        "discover",
        "expected 8 GPUs, BMC reports 7 (Video.Slot.1-1, Video.Slot.2-1, Video.Slot.3-1, "
        "Video.Slot.4-1, Video.Slot.5-1, Video.Slot.6-1, Video.Slot.7-1)",
        {"gpu_count": 7},
        "gpu_missing",
    ),
    (
        1,
        "QUARANTINED",
        "discover",
        "BMC clock: clock is off by 7260 s and the BMC refused to set it",
        {},
        "clock_skew",
    ),
    (
        2,
        "FAILED:enlist",
        "enlist",
        "{h}: commissioning failed: commissioning reverted to New without a failure status: "
        "Failed to query node's BMC - (admin) - Aborting COMMISSIONING and reverting to NEW. "
        "Unable to power control the node. Please check power credentials.",
        {},
        "power_control",
    ),
    (
        2,
        "FAILED:deploy",
        "deploy",
        "Node installation failure - 'curtin' curtin command install: grub-install: error: "
        "efibootmgr failed to register the boot entry: No space left on device.",
        {},
        "deploy_failed",
    ),
    (
        1,
        "FAILED:deploy",
        "deploy",
        "{h}: deploy failed: MAAS timed the machine out: Machine {h} has been in Deploying for "
        "30 minutes; timed out after 1800 s",
        {},
        "boot_failure",
    ),
)
#: Health failures: (reason as the agent words it, expected cause).
HEALTH = (
    (
        "quick: FAIL pcie [GPU 3 (00000000:9A:00.0)]: link x4 (expected x16) at 32 GT/s",
        "pcie_degraded",
    ),
    (
        "quick: FAIL xid [GPU 1]: Xid 79 (GPU has fallen off the bus) at 2026-11-30T01:02:03",
        "health_gpu_errors",
    ),
    ("quick: FAIL clock_events [GPU 0]: HW thermal slowdown active at 91 C", "thermal"),
    ("quick: FAIL nvlink_state [GPU 2]: link 5 inactive", "health_links"),
)
#: What roles skip on hosts that reached configure: (every n-th host, the skip it announces).
SKIPS = (
    (
        8,
        {
            "role": "gdr",
            "part": "all",
            "reason": "no RDMA NIC (Mellanox/NVIDIA networking) on the PCI bus",
        },
    ),
    (5, {"role": "nvidia_driver", "part": "fabricmanager", "reason": "no NVSwitch on the PCI bus"}),
)


def generate(run_dir: Path, hosts: int, *, seed: int = 7, fail_rate: float = 0.12) -> dict:
    """Write report.json and golden-set.json for ``hosts`` hosts; return the expected
    {host: (result, cause or None)}."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    report_hosts: dict[str, dict] = {}
    golden_hosts: dict[str, dict] = {}
    expected: dict[str, tuple[str, str | None]] = {}
    weights = [f[0] for f in FAILURES]
    for i in range(hosts):
        name = f"h{i:04d}"
        phases = {
            p: {"ok": 5, "changed": 1, "failed": 0, "skipped": 2, "unreachable": 0, "reason": None}
            for p in PHASES
        }
        host = {
            "name": name,
            "phases": phases,
            "quarantine_reason": None,
            "failed_phase": None,
            "failure_reason": None,
            "health_verdict": None,
            "health_reasons": [],
            "location": f"DC1-R{i // 10 + 1:02d}-U{(i % 10) * 4 + 3:02d}",
            "facts": {
                "service_tag": name.upper(),
                "model": "PowerEdge XE9680",
                "bmc": f"10.1.{i // 250}.{i % 250 + 2}:443",
                "gpu_count": 8,
            },
        }
        draw = rng.random()
        if draw < fail_rate:
            _, result, phase, reason, facts, cause = rng.choices(FAILURES, weights)[0]
            text = reason.format(a=i // 250, b=i % 250 + 2, h=name)
            later = PHASES[PHASES.index(phase) + 1 :]
            for p in later:
                del phases[p]
            host["failed_phase"] = phase
            host["failure_reason"] = text
            host["facts"].update(facts)
            if result == "QUARANTINED":
                host["quarantine_reason"] = text
            expected[name] = (result, cause)
            if phase in ("deploy",):
                golden_hosts[name] = {
                    "verdict": "NOT FIT",
                    "fit": False,
                    "reasons": [f"failed before validation: {text}"],
                }
        elif draw < fail_rate + 0.04:
            reason, cause = rng.choice(HEALTH)
            host["health_verdict"] = "NOT FIT"
            host["health_reasons"] = [reason]
            golden_hosts[name] = {"verdict": "NOT FIT", "fit": False, "reasons": [reason]}
            expected[name] = ("NOT_FIT", cause)
        else:
            host["health_verdict"] = "FIT"
            golden_hosts[name] = {"verdict": "FIT", "fit": True, "reasons": []}
            expected[name] = ("GOLDEN", None)
        if "configure" in phases:
            host["skips"] = [dict(skip) for every, skip in SKIPS if i % every == 0]
        report_hosts[name] = host
    report = {
        "run_id": run_dir.name,
        "run_dir": str(run_dir),
        "started": "2026-11-30T00:00:00Z",
        "finished": "2026-11-30T00:40:00Z",
        "hosts": report_hosts,
    }
    (run_dir / "report.json").write_text(json.dumps(report))
    golden = {
        "schema": "racksmith.golden-set/v1",
        "run_id": run_dir.name,
        "golden": sorted(h for h, e in golden_hosts.items() if e["fit"]),
        "hosts": golden_hosts,
    }
    (run_dir / "golden-set.json").write_text(json.dumps(golden))
    return expected


def chromium() -> str:
    """Debian's chromium (scripts/setup.sh installs it); its absence is a failure, not a skip."""
    import shutil

    import pytest

    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.fail("chromium is not installed (scripts/setup.sh installs Debian's chromium)")


def browser(*args: str):
    """Headless Chromium with a virtual-time budget: scripts run, then the DOM or a shot."""
    import subprocess

    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--virtual-time-budget=3000", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
