"""Discovery progress: what the printer picks and when (fake clock), what discover() reports
while real emulated BMCs answer, and the CLI's lines on stderr with stdout left pure."""

from __future__ import annotations

import json

import pytest
from test_redfish_inventory import _ansible_env, _inventory, _run

from racksmith.lab.bmc.behaviour import Latency, Settings
from racksmith.redfish.discover import BmcResult, DiscoveryOptions, DiscoveryProgress, discover
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.progress import DiscoveryPrinter, counts_line


def _failure(bmc: str, reason: str) -> BmcResult:
    return BmcResult(bmc=bmc, facts=None, error=RedfishError(ErrorKind.UNREACHABLE, reason))


def _snap(answered: int, failed: int, elapsed: float, *new: BmcResult, total: int = 10):
    return DiscoveryProgress(total, answered, failed, elapsed, tuple(new))


def test_counts_line_format():
    assert counts_line(_snap(5, 2, 12.7)) == "discover: 5 answered, 2 failed, 3 pending, 0:00:12"
    assert counts_line(_snap(0, 0, 3725)).endswith("10 pending, 1:02:05")


def test_printer_steady_interval_failures_at_once_and_a_last_line():
    printer = DiscoveryPrinter(interval=10)
    assert printer.feed(_snap(0, 0, 0.0), now=100.0) == []  # nothing to say yet
    assert printer.feed(_snap(1, 0, 4.0), now=104.0) == []
    down = _failure("10.0.0.7:443", "cannot connect: refused")
    assert printer.feed(_snap(1, 1, 5.0, down), now=105.0) == [
        "discover: FAILED 10.0.0.7:443: unreachable: cannot connect: refused"
    ]
    # a hung rack: the counts keep coming every interval although nothing finishes
    assert printer.feed(_snap(1, 1, 10.0), now=110.0) == [
        "discover: 1 answered, 1 failed, 8 pending, 0:00:10"
    ]
    assert printer.feed(_snap(1, 1, 15.0), now=115.0) == []
    assert printer.feed(_snap(1, 1, 19.9), now=119.9) == []
    assert printer.feed(_snap(1, 1, 20.0), now=120.0) == [
        "discover: 1 answered, 1 failed, 8 pending, 0:00:20"
    ]
    assert printer.feed(_snap(9, 1, 21.0), now=121.0) == [
        "discover: 9 answered, 1 failed, 0 pending, 0:00:21"
    ]


def test_printer_quiet_for_a_quick_run_except_its_failures():
    printer = DiscoveryPrinter(interval=10)
    down = _failure("bmc-a", "timeout")
    assert printer.feed(_snap(1, 1, 2.0, down, total=2), now=2.0) == [
        "discover: FAILED bmc-a: unreachable: timeout"
    ]


@pytest.mark.parametrize("interval", [0, -1, float("nan")])
def test_printer_refuses_a_bad_interval(interval):
    with pytest.raises(ValueError, match="interval"):
        DiscoveryPrinter(interval=interval)


def test_discover_reports_counts_while_bmcs_answer(rack, server, creds, client_options):
    lab = rack(
        [server(1), server(2), server(6, faults=("bmc_auth_failed",))],
        settings=Settings(latency=Latency(0.15, 0.15)),
    )
    snapshots: list[DiscoveryProgress] = []
    options = DiscoveryOptions(client=client_options, deadline=20.0, concurrency=3)
    results = discover(lab.targets(), creds, options, progress=snapshots.append, tick=0.05)
    assert len(results) == 3
    last = snapshots[-1]
    assert (last.total, last.answered, last.failed, last.pending) == (3, 2, 1, 0)
    assert all(not s.finished for s in snapshots[:-1])
    # ticks while nothing finished: more snapshots than BMCs
    assert sum(1 for s in snapshots if not s.new_failures) > 3
    failures = [r for s in snapshots for r in s.new_failures]
    assert [r.bmc for r in failures] == [str(lab.target("gpu06"))]
    assert failures[0].error.kind is ErrorKind.AUTH
    pending = [s.pending for s in snapshots]
    assert pending == sorted(pending, reverse=True)
    elapsed = [s.elapsed for s in snapshots]
    assert elapsed == sorted(elapsed)


def test_cli_prints_progress_on_stderr_and_keeps_json_pure(rack, server, lab_dir, tmp_path):
    lab = rack(
        [server(1), server(6, faults=("bmc_auth_failed",))],
        settings=Settings(latency=Latency(0.2, 0.2)),
    )
    args = ["--bmc", str(lab.target("gpu01")), "--bmc", str(lab.target("gpu06"))]
    args += ["--env-file", str(lab_dir / "secrets" / "bmc.env")]
    args += ["--ca-bundle", str(lab_dir / "ca" / "ca.pem"), "--progress-interval", "0.2"]
    done = _run(
        ["racksmith", "redfish", "discover", "--json", *args], _ansible_env(tmp_path, lab_dir)
    )
    assert done.returncode == 1, done.stderr
    assert len([json.loads(line) for line in done.stdout.splitlines()]) == 2  # nothing else
    assert f"discover: FAILED {lab.target('gpu06')}: auth_failed:" in done.stderr
    counts = [ln for ln in done.stderr.splitlines() if " answered, " in ln]
    assert counts and counts[-1].startswith("discover: 1 answered, 1 failed, 0 pending, 0:00:")
    assert "discover:" not in done.stdout


def test_inventory_plugin_prints_progress_on_stderr(rack, server, lab_dir, tmp_path):
    lab = rack(
        [server(1), server(7, faults=("bmc_auth_failed",))],
        settings=Settings(latency=Latency(0.2, 0.2)),
    )
    path = _inventory(tmp_path, lab, lab_dir, deadline=10, progress_interval=0.2)
    done = _run(["ansible-inventory", "-i", str(path), "--list"], _ansible_env(tmp_path, lab_dir))
    assert done.returncode == 0, done.stderr
    assert "bmc_auth_failed" in json.loads(done.stdout)
    assert f"discover: FAILED {lab.target('gpu07')}: auth_failed:" in done.stderr
    counts = [ln for ln in done.stderr.splitlines() if " answered, " in ln]
    assert counts and counts[-1].startswith("discover: 1 answered, 1 failed, 0 pending, 0:00:")
