"""The table of ``racksmith run``: ansible-runner events -> hosts per phase and state.

``data/recorded_events.jsonl`` is the event stream of a real run of ``data/tiny.yml`` through
ansible-runner (bulky fields the table never reads removed); the other events are shaped like
it, for the cases that run does not produce (unreachable, a task in flight, warnings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racksmith.run.table import STATES, RunTable, phase_of_play

RECORDED = Path(__file__).parent / "data" / "recorded_events.jsonl"


def _recorded() -> list[dict]:
    return [json.loads(line) for line in RECORDED.read_text(encoding="utf-8").splitlines()]


def _event(kind: str, **data) -> dict:
    return {"event": kind, "stdout": "", "event_data": data}


@pytest.mark.parametrize(
    ("name", "phase"),
    [
        ("Phase deploy: install the OS", "deploy"),
        ("Phase validate: write the golden set", "validate"),
        ("Reprovision: release the selected machines", "reprovision"),
        ("Enlist again (recommission and re-pin the boot disk)", "enlist"),
        ("Phase nonsense: x", "other"),
        ("Gather some facts", "other"),
    ],
)
def test_phase_of_play(name, phase):
    assert phase_of_play(name) == phase


def test_recorded_run():
    table = RunTable()
    lines = [line for event in _recorded() for line in table.feed(event)]
    assert lines == [
        "preflight: Phase preflight: both hosts answer",
        "configure: Phase configure: one host fails",
        "configure: FAILED bad-host (Fail on bad-host): bad-host is broken",
    ]
    # the ignored failure counts as ok; bad-host's change is hidden behind its failure
    assert table.counts("preflight") == {**dict.fromkeys(STATES, 0), "ok": 2}
    assert table.counts("configure") == {**dict.fromkeys(STATES, 0), "changed": 1, "failed": 1}
    assert table.counts_line("configure") == "configure: 1 changed, 1 failed"
    assert table.stats is not None and table.stats["failures"] == {"bad-host": 1}
    assert table.render() == [
        "PHASE      RUNNING  OK  CHANGED  FAILED  UNREACHABLE  SKIPPED",
        "preflight        0   2        0       0            0        0",
        "configure        0   0        1       1            0        0",
    ]


def test_running_until_the_task_ends_and_failure_sticks():
    table = RunTable()
    table.feed(_event("playbook_on_play_start", play="Phase deploy: install the OS"))
    table.feed(_event("playbook_on_task_start", task="Deploy"))
    for host in ("a", "b", "c"):
        table.feed(_event("runner_on_start", host=host, task="Deploy"))
    assert table.counts_line("deploy") == "deploy: 3 running"
    assert table.render()[-1] == "deploy: Deploy"  # the task in flight, under the table
    table.feed(_event("runner_on_ok", host="a", task="Deploy", res={"changed": True}))
    lines = table.feed(
        _event("runner_on_unreachable", host="b", task="Deploy", res={"msg": "ssh: refused"})
    )
    assert lines == ["deploy: UNREACHABLE b (Deploy): ssh: refused"]
    table.feed(_event("runner_on_skipped", host="c", task="Deploy"))
    assert table.counts_line("deploy") == "deploy: 1 changed, 1 unreachable, 1 skipped"
    # a later task: a host that failed stays failed and is not announced twice
    table.feed(_event("runner_on_start", host="b", task="Next"))
    assert table.feed(_event("runner_on_failed", host="b", task="Next", res={"msg": "x"})) == []
    table.feed(_event("runner_on_start", host="a", task="Next"))
    assert table.counts("deploy")["running"] == 1 and table.counts("deploy")["unreachable"] == 1


def test_failure_messages_hide_no_log_and_keep_one_line():
    table = RunTable()
    table.feed(_event("playbook_on_play_start", play="Phase enlist: machines"))
    censored = table.feed(_event("runner_on_failed", host="a", task="t", res={"censored": "x"}))
    long = table.feed(
        _event("runner_on_failed", host="b", task="t", res={"stderr": "first\nsecond"})
    )
    empty = table.feed(_event("runner_on_failed", host="c", task="t", res={}))
    assert censored == ["enlist: FAILED a (t): details hidden (no_log)"]
    assert long == ["enlist: FAILED b (t): first"]
    assert empty == ["enlist: FAILED c (t): failed without a message"]


def test_passes_on_errors_warnings_and_discovery_progress_only():
    table = RunTable()
    stdout = (
        "\x1b[0;35m[WARNING]: redfish: 1 of 9 BMCs failed\x1b[0m\r\n"
        "discover: 8 answered, 1 failed, 0 pending, 0:00:12\r\n"
        "PLAY [x] ****\r\n"
    )
    assert table.feed({"event": "verbose", "stdout": stdout, "event_data": {}}) == [
        "[WARNING]: redfish: 1 of 9 BMCs failed",
        "discover: 8 answered, 1 failed, 0 pending, 0:00:12",
    ]
    assert table.feed({"event": "verbose", "stdout": "ERROR! no inventory"}) == [
        "ERROR! no inventory"
    ]


def test_unknown_and_hostless_events_change_nothing():
    table = RunTable()
    for event in (
        {},
        _event("runner_on_ok", res={}),
        _event("runner_item_on_ok", host="a", res={}),
        _event("playbook_on_include"),
    ):
        assert table.feed(event) == []
    assert table.phases == {}
