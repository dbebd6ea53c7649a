"""The checks end to end on real captures replayed through the lab stand-in: healthy captures
pass, each failure fixture fails exactly the check it targets, and every way a source can
break (missing tool, non-zero exit, hang, garbage) makes the host NOT FIT with a reason."""

from __future__ import annotations

import json
import os
import time

import pytest
from health_support import CAPTURES, by_name

from racksmith.health.checks import all_checks
from racksmith.health.outcome import EXIT_FIT, EXIT_NOT_FIT, EXIT_UNDECIDED, Severity, verdict_of

GPU_CHECKS = (
    "gpu_count",
    "nvidia_smi",
    "ecc",
    "row_remap",
    "recovery_action",
    "clock_events",
    "versions",
    "nvlink_state",
    "nvlink_errors",
    "pcie",
    "xid",
    "kernel_log",
)


@pytest.mark.parametrize("capture", CAPTURES)
def test_healthy_capture_is_fit(replay, unit_profile, capture):
    results = replay(capture).run(unit_profile)
    statuses = {r.name: r.status for r in results}
    assert all(statuses[name] == Severity.OK for name in GPU_CHECKS), statuses
    assert {n for n, s in statuses.items() if s == Severity.SKIPPED} == {
        "fabric_manager",
        "ib_ports",
        "ib_counters",
        "gdr",
        "zpool",
        "docker_gpu",
        "cpu_governor",
        "clock_sync",
        "disk_space",
    }
    assert verdict_of(results)[1] == EXIT_FIT


def test_every_registered_check_reports(replay, unit_profile):
    results = replay().run(unit_profile)
    assert [r.name for r in results] == list(all_checks())
    assert all(r.findings for r in results)


FAILURES = [
    ("xid79", "xid", "Xid 79 (GPU has fallen off the bus)"),
    ("xid48", "xid", "Xid 48 (double-bit ECC error)"),
    ("ecc-uncorrectable", "ecc", "3 uncorrectable ECC errors"),
    ("nvlink-inactive", "nvlink_state", "NVLink 5 inactive"),
    ("pcie-x4", "pcie", "link trained at x4, expected x16"),
    ("thermal-slowdown", "clock_events", "clock event hw_thermal_slowdown is active"),
]


@pytest.mark.parametrize("overlay, check, reason", FAILURES)
def test_failure_fixture_fails_its_check_and_only_it(replay, unit_profile, overlay, check, reason):
    results = by_name(replay(overlays=[overlay]).run(unit_profile))
    assert results[check].status == Severity.FAIL
    assert any(reason in f.reason for f in results[check].findings), results[check].findings
    assert all(f.remediation for f in results[check].problems())
    others = {n: r.status for n, r in results.items() if n not in (check, "kernel_log")}
    assert all(s in (Severity.OK, Severity.SKIPPED) for s in others.values()), others
    assert verdict_of(results.values())[1] == EXIT_NOT_FIT


def test_xid79_second_line_is_surfaced_by_the_allow_list(replay, unit_profile):
    """The driver's 'GPU has fallen off the bus' line is not an Xid line: the allow-list
    surfaces it as an unknown hardware line instead of dropping it."""
    results = by_name(replay(overlays=["xid79"]).run(unit_profile))
    assert results["kernel_log"].status == Severity.WARN
    assert "GPU has fallen off the bus" in results["kernel_log"].findings[0].reason


def test_failure_fixture_through_the_agent_cli(replay, unit_profile):
    proc = replay(overlays=["xid79"]).agent("--profile", str(unit_profile), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == EXIT_NOT_FIT
    assert report["verdict"] == "NOT FIT" and report["decided"] is True
    assert any(r.startswith("FAIL xid [PCI 0000:00:07]: Xid 79") for r in report["reasons"])
    assert report["standin"].startswith("replaying captured outputs from h200-x2 with xid79")


def test_nvidia_smi_exit_code_15_fails_with_meaning(replay, unit_profile):
    r = replay()
    (r.prefix / "capture" / "smi_q.xml.rc").write_text("15\n")  # the replay tool exits 15
    results = by_name(r.run(unit_profile))
    assert results["nvidia_smi"].status == Severity.FAIL
    assert "fallen off the bus" in results["nvidia_smi"].findings[0].reason
    assert results["ecc"].status == Severity.UNKNOWN
    assert "exited with 15" in results["ecc"].findings[0].reason


def _tool(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_missing_nvidia_smi_is_not_fit(replay, unit_profile):
    r = replay()
    (r.prefix / "bin" / "nvidia-smi").unlink()
    r.env["PATH"] = str(r.prefix / "bin")  # no real nvidia-smi either
    results = by_name(r.run(unit_profile))
    assert results["nvidia_smi"].status == Severity.FAIL
    assert results["gpu_count"].status == Severity.UNKNOWN
    assert "not found on PATH" in results["gpu_count"].findings[0].reason
    assert verdict_of(results.values())[1] == EXIT_NOT_FIT


def test_garbage_output_is_unknown_not_pass(replay, unit_profile):
    r = replay()
    (r.prefix / "capture" / "smi_q.xml").write_text(
        "NVIDIA-SMI has failed because it couldn't communicate\n"
    )
    (r.prefix / "capture" / "nvlink-s.txt").write_text("")
    results = by_name(r.run(unit_profile))
    for name in ("gpu_count", "ecc", "row_remap", "clock_events", "versions"):
        assert results[name].status == Severity.UNKNOWN
        assert "cannot parse `nvidia-smi -q -x` output" in results[name].findings[0].reason
    assert results["nvlink_state"].status == Severity.UNKNOWN
    assert verdict_of(results.values())[1] == EXIT_UNDECIDED


def test_empty_kernel_log_is_unknown(replay, unit_profile):
    r = replay()
    (r.prefix / "capture" / "dmesg.txt").write_text("")
    results = by_name(r.run(unit_profile))
    assert results["xid"].status == Severity.UNKNOWN
    assert "printed nothing" in results["xid"].findings[0].reason


def test_hanging_nvidia_smi_times_out_within_the_deadline(replay, unit_profile):
    r = replay()
    (r.prefix / "bin" / "nvidia-smi").unlink()
    _tool(r.prefix / "bin", "nvidia-smi", "sleep 60")
    start = time.monotonic()
    results = by_name(r.run(unit_profile, deadline_s=2.0))
    elapsed = time.monotonic() - start
    assert elapsed < 6, elapsed
    assert results["nvidia_smi"].status == Severity.UNKNOWN
    assert "did not answer" in results["nvidia_smi"].findings[0].reason
    assert results["ecc"].status == Severity.UNKNOWN
    assert verdict_of(results.values())[1] == EXIT_UNDECIDED


def test_hung_agent_run_still_prints_a_verdict(replay, unit_profile):
    r = replay()
    (r.prefix / "bin" / "nvidia-smi").unlink()
    _tool(r.prefix / "bin", "nvidia-smi", "sleep 60")
    start = time.monotonic()
    proc = r.agent("--profile", str(unit_profile), "--deadline", "1.5")
    assert time.monotonic() - start < 10
    assert proc.returncode == EXIT_UNDECIDED
    assert "NOT FIT (could not decide)" in proc.stdout
    assert "*** LAB STAND-IN: replaying captured outputs from h200-x2 ***" in proc.stdout


def test_profile_expecting_eight_gpus_fails_the_two_gpu_capture(replay):
    r = replay()
    results = by_name(r.run("hgx-h200-8gpu", only=GPU_CHECKS))
    assert results["gpu_count"].status == Severity.FAIL
    assert results["gpu_count"].findings[0].reason == "found 2 GPUs, expected 8"
    assert results["pcie"].status == Severity.FAIL
    assert list(results) == list(GPU_CHECKS)


def test_real_report_of_the_h200_host_is_fit():
    """The JSON the agent wrote on the real H200 host (tests/fixtures/h200-x2-run)."""
    from health_support import FIXTURES

    report = json.loads((FIXTURES / "h200-x2-run" / "quick.json").read_text())
    assert report["verdict"] == "FIT" and report["exit_code"] == 0 and report["standin"] is None
    assert report["profile"]["name"] == "h200-x2-vm"
    assert report["counts"] == {"OK": 13, "SKIPPED": 8, "WARN": 0, "FAIL": 0, "UNKNOWN": 0}
    smi = next(s for c in report["checks"] if c["name"] == "gpu_count" for s in c["sources"])
    assert smi["path"] == "/usr/bin/nvidia-smi" or smi["path"].endswith("nvidia-smi")
    assert os.path.basename(smi["path"]) == "nvidia-smi"
