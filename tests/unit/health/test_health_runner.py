"""The runner and the command runner: one result per check whatever happens, bounded waits,
a timeout kills the whole process group."""

from __future__ import annotations

import time

from racksmith.health import commands
from racksmith.health.checks import CheckSpec, SourceError
from racksmith.health.host import Host
from racksmith.health.outcome import Severity, ok
from racksmith.health.profile import Profile
from racksmith.health.runner import run_checks

PROFILE = Profile("t", "", {"skip": {"skipped_one": "does not apply here"}})


def spec(name, func):
    return CheckSpec(name, name.replace("_", " "), None, func)


def test_one_result_per_check_whatever_each_does():
    def boom(ctx):
        raise KeyError("nvlink")

    def source(ctx):
        raise SourceError("`dmesg` exited with 1: Operation not permitted")

    specs = {
        "fine": spec("fine", lambda ctx: [ok("all good")]),
        "crashes": spec("crashes", boom),
        "no_source": spec("no_source", source),
        "silent": spec("silent", lambda ctx: []),
        "skipped_one": spec("skipped_one", lambda ctx: [ok("never runs")]),
    }
    results = {r.name: r for r in run_checks(specs, PROFILE, Host())}
    assert list(results) == list(specs)
    assert results["fine"].status == Severity.OK
    assert results["crashes"].status == Severity.UNKNOWN
    assert "the check itself failed: KeyError" in results["crashes"].findings[0].reason
    assert results["no_source"].findings[0].reason.startswith("`dmesg` exited with 1")
    assert results["silent"].findings[0].reason == "the check produced no result"
    assert results["skipped_one"].status == Severity.SKIPPED
    assert "does not apply here" in results["skipped_one"].findings[0].reason


def test_deadline_bounds_a_hanging_check_and_checks_run_in_parallel():
    specs = {
        f"s{i}": spec(f"s{i}", lambda ctx: (time.sleep(0.4), [ok("slept")])[1]) for i in range(6)
    }
    specs["hangs"] = spec("hangs", lambda ctx: (time.sleep(30), [ok("too late")])[1])
    start = time.monotonic()
    results = {r.name: r for r in run_checks(specs, PROFILE, Host(), deadline_s=1.5, workers=8)}
    assert time.monotonic() - start < 2.5
    assert all(results[f"s{i}"].status == Severity.OK for i in range(6))
    assert results["hangs"].status == Severity.UNKNOWN
    assert results["hangs"].findings[0].reason == "did not finish within the 1.5 s deadline"


def test_only_selects_checks():
    specs = {"a": spec("a", lambda ctx: [ok("a")]), "b": spec("b", lambda ctx: [ok("b")])}
    assert [r.name for r in run_checks(specs, PROFILE, Host(), only=["b"])] == ["b"]


def test_command_timeout_kills_the_process_group(tmp_path):
    marker = tmp_path / "grandchild-alive"
    script = f"(sleep 2; touch {marker}) & sleep 30"
    start = time.monotonic()
    result = commands.run(["sh", "-c", script], 0.3)
    assert result.timed_out and result.rc is None
    assert time.monotonic() - start < 3
    assert "timed out after" in result.describe_failure()
    time.sleep(2.5)
    assert not marker.exists(), "the grandchild survived the timeout"


def test_command_results_describe_themselves():
    missing = commands.run(["no-such-tool-racksmith"], 1)
    assert missing.missing and "not found on PATH" in missing.describe_failure()
    failed = commands.run(["sh", "-c", "echo bad thing >&2; exit 3"], 5)
    assert (
        failed.rc == 3
        and failed.describe_failure()
        == "`sh -c echo bad thing >&2; exit 3` exited with 3: bad thing"
    )
    good = commands.run(["echo", "hi"], 5)
    assert good.ok and good.stdout == "hi\n" and good.path.endswith("echo")


def test_host_runs_each_command_once_per_run():
    host = Host()
    first = host.run(("date", "+%N"), 5)
    assert host.run(("date", "+%N"), 5) is first
