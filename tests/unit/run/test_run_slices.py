"""Sliced runs (``racksmith run site --slices K``): dealing, what the slices carry, the merge's
rules (racksmith.run.slices, racksmith.report.merge). End to end on local hosts:
tests/integration/run/test_sliced_run.py."""

from __future__ import annotations

import pytest

from racksmith.phases.validate import NO_RESULT
from racksmith.report.merge import golden_entries, merge_reports, named_run_dir
from racksmith.report.model import PhaseOutcome, RunReport
from racksmith.run.slices import after_prepare, deal


def test_deal_is_round_robin_like_awx_job_slicing():
    assert deal(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert deal(["a"], 3) == [["a"], [], []]
    with pytest.raises(ValueError, match="at least 1"):
        deal(["a"], 0)


def test_after_prepare_carries_the_quarantine_and_leaves_failed_hosts_out():
    report = {
        "hosts": {
            "ok": {"result": "INCOMPLETE"},
            "q": {
                "result": "QUARANTINED",
                "quarantine_reason": "clock off",
                "failed_phase": "discover",
            },
            "dead": {"result": "FAILED:deploy", "failed_phase": "deploy"},
        },
        "controller": None,
    }
    dealt, inventory = after_prepare(report)
    assert dealt == ["ok", "q"]
    assert inventory == {
        "all": {
            "hosts": {
                "localhost": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                }
            },
            "children": {
                "quarantine": {
                    "hosts": {
                        "q": {
                            "racksmith_quarantine_reason": "clock off",
                            "racksmith_failed_phase": "discover",
                            "racksmith_failure_reason": "clock off",
                        }
                    }
                }
            },
        }
    }
    with pytest.raises(ValueError, match="no hosts"):
        after_prepare({})


def test_a_host_judged_in_two_shards_is_an_error_and_the_others_are_judged_once():
    entry = {"host": "a", "fit": True, "verdict": "FIT"}
    empty = RunReport(run_id="r", run_dir="", started="")
    with pytest.raises(ValueError, match="a was judged in two shards"):
        golden_entries(
            {"slice-1": {"hosts": {"a": entry}}, "slice-2": {"hosts": {"a": entry}}}, empty
        )
    merged = RunReport(run_id="r", run_dir="", started="")
    merged.host("q").quarantine_reason = "clock off"
    merged.host("d").failure_reason = "deploy: no SSH"
    merged.host("gone").failure_reason = "enlist failed"  # never deployed: not in the set
    out = golden_entries({"slice-1": {"hosts": {"a": entry}}}, merged, ["a", "d", "n"])
    assert out == {
        "a": entry,
        "d": {"failure": "deploy: no SSH"},
        "n": {"failure": NO_RESULT},  # deployed, yet no shard said anything about it
        "q": {"failure": "clock off"},
    }


def test_merge_takes_each_phase_once_and_sums_the_controller():
    first = RunReport(run_id="p", run_dir="", started="2026-12-02T01:00:00Z", finished="x1")
    first.host("h1").phases["preflight"] = PhaseOutcome(ok=2)
    first.host("localhost").phases["discover"] = PhaseOutcome(ok=1)
    second = RunReport(run_id="s", run_dir="", started="2026-12-02T01:05:00Z", finished="x2")
    second.host("h1").phases["preflight"] = PhaseOutcome(ok=2)  # tagged always: again
    second.host("h1").phases["configure"] = PhaseOutcome(changed=1)
    second.host("h1").failure_reason = "configure: base failed"
    second.host("localhost").phases["discover"] = PhaseOutcome(ok=1)
    merged = merge_reports([first, second], run_id="r", run_dir="/r")
    h1 = merged.hosts["h1"]
    assert (h1.phases["preflight"].ok, h1.phases["configure"].changed) == (2, 1)
    assert h1.failure_reason == "configure: base failed"
    assert merged.hosts["localhost"].phases["discover"].ok == 2
    assert (merged.started, merged.finished) == ("2026-12-02T01:00:00Z", "x2")


def test_extra_variables_name_the_run_and_each_awx_job_its_shard(tmp_path):
    runs = tmp_path / "runs"
    assert named_run_dir(runs, {}, {}) is None
    assert named_run_dir(runs, {"racksmith_run_id": "rack7-1202"}, {}) == (
        runs / "rack7-1202",
        False,
    )
    prepare = {"racksmith_run_id": "rack7-1202", "racksmith_shard": "prepare"}
    assert named_run_dir(runs, prepare, {}) == (runs / "rack7-1202/shards/prepare", True)
    sliced = {"racksmith_run_id": "rack7-1202", "racksmith_shard": "slice"}
    assert named_run_dir(runs, sliced, {"JOB_ID": "4711"}) == (
        runs / "rack7-1202/shards/slice-4711",
        True,
    )
    with pytest.raises(ValueError, match="no AWX job id"):
        named_run_dir(runs, sliced, {})
    with pytest.raises(ValueError, match="folder name"):
        named_run_dir(runs, {"racksmith_run_id": "../etc"}, {})
    with pytest.raises(ValueError, match="prepare or slice"):
        named_run_dir(runs, {**prepare, "racksmith_shard": "merge"}, {})


def _sliced_cli(tmp_path, *argv: str):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "racksmith", "run", *argv, "--run-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["site", "-i", "a,b,", "--slices", "0"], "expected a number of slices, 1 or more"),
        (["site", "-i", "a,b,", "--slices", "2", "--tags", "deploy"], "--tags picks phases"),
        (["reprovision", "-i", "a,b,", "-l", "a", "--slices", "2"], "only the site flow"),
    ],
)
def test_slices_usage_errors_start_nothing(tmp_path, argv, said):
    done = _sliced_cli(tmp_path, *argv)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert not (tmp_path / "r").exists()  # refused before any process started
