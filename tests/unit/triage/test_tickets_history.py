"""Tickets (Markdown + JSON per failed host, in the run directory), the append-only health
history, and the golden-set ranking built on it."""

from __future__ import annotations

import json

import pytest

from racksmith.triage import history, rank
from racksmith.triage.classify import classify, evidence_from_report
from racksmith.triage.history import HostRun, RunRecord
from racksmith.triage.tickets import write_tickets


def _diag(host, reason, **facts):
    return classify(evidence_from_report(host, {
        "result": "QUARANTINED", "failed_phase": "discover", "quarantine_reason": reason,
        "facts": {"service_tag": "ABC1234", "model": "PowerEdge XE9680", **facts},
    }))


def test_tickets_carry_action_evidence_and_identity(tmp_path, monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "hunter2-secret")
    written = write_tickets(
        [_diag("gpu05", "expected 8 GPUs, BMC reports 7 (Video.Slot.1-1)"),
         _diag("../evil host", "BMC refused hunter2-secret")],
        tmp_path, "run-1",
    )
    assert written == {"gpu05": "tickets/gpu05.md", "../evil host": "tickets/evil_host.md"}
    ticket = json.loads((tmp_path / "tickets" / "gpu05.json").read_text())
    assert ticket["schema"] == "racksmith.ticket/v1" and ticket["run_id"] == "run-1"
    assert ticket["cause"]["name"] == "gpu_missing" and ticket["cause"]["action"] == "reseat"
    assert ticket["evidence"][0]["text"].startswith("expected 8 GPUs")
    assert ticket["facts"]["service_tag"] == "ABC1234"
    md = (tmp_path / "tickets" / "gpu05.md").read_text()
    assert md.startswith("# gpu05: GPU not detected") and "**reseat**" in md
    assert "| service_tag | ABC1234 |" in md
    for path in (tmp_path / "tickets").iterdir():
        assert "hunter2-secret" not in path.read_text()
    assert not (tmp_path.parent / "evil host.md").exists()


def test_tickets_of_repaired_hosts_are_removed(tmp_path):
    write_tickets([_diag("a", "expected 8 GPUs, BMC reports 7"),
                   _diag("b", "expected 8 GPUs, BMC reports 7")], tmp_path, "r")
    write_tickets([_diag("b", "expected 8 GPUs, BMC reports 7")], tmp_path, "r")
    assert sorted(p.name for p in (tmp_path / "tickets").iterdir()) == ["b.json", "b.md"]


def _record(run_id, finished, **hosts):
    return RunRecord(run_id, finished, {h: HostRun(*v) if isinstance(v, tuple) else HostRun(v)
                                        for h, v in hosts.items()})


def test_history_is_append_only_and_records_a_run_once(tmp_path):
    path = tmp_path / "history.jsonl"
    r1 = _record("r1", "2026-11-01T00:00:00Z", a="GOLDEN", b=("FAILED:deploy", "deploy_failed"))
    assert history.append(path, r1) is True
    first = path.read_text()
    assert history.append(path, r1) is False
    assert path.read_text() == first
    history.append(path, _record("r2", "2026-11-08T00:00:00Z", a="GOLDEN", b="GOLDEN"))
    assert path.read_text().startswith(first)
    assert [r.run_id for r in history.read(path)] == ["r1", "r2"]
    assert history.read(path)[0].hosts["b"] == HostRun("FAILED:deploy", "deploy_failed")


def test_a_corrupt_history_line_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "history.jsonl"
    history.append(path, _record("r1", "2026-11-01T00:00:00Z", a="GOLDEN"))
    with path.open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(ValueError, match=r"history.jsonl: line 2: not a history record"):
        history.read(path)


def test_hosts_failing_repeatedly_in_different_ways_sink():
    runs = [
        _record("w1", "2026-10-01T00:00:00Z", steady="GOLDEN", once="GOLDEN", same="GOLDEN",
                varied=("FAILED:deploy", "deploy_failed")),
        _record("w2", "2026-10-08T00:00:00Z", steady="GOLDEN", once="GOLDEN",
                same=("NOT_FIT", "thermal"), varied=("NOT_FIT", "thermal")),
        _record("w3", "2026-10-15T00:00:00Z", steady="GOLDEN",
                once=("QUARANTINED", "gpu_missing"), same=("NOT_FIT", "thermal"),
                varied=("NOT_FIT", "health_gpu_errors")),
        _record("w4", "2026-10-22T00:00:00Z", steady="GOLDEN", once="GOLDEN", same="GOLDEN",
                varied="GOLDEN"),
    ]
    ranked = rank.rank(["varied", "same", "once", "steady"], runs)
    assert [s.host for s in ranked] == ["steady", "once", "same", "varied"]
    varied = ranked[-1]
    assert varied.failures == 3 and varied.causes == ("deploy_failed", "thermal",
                                                      "health_gpu_errors")
    # ranking is a function of the history alone: the same input, the same order
    assert rank.rank(["steady", "varied", "once", "same"], runs) == ranked


def test_old_failures_weigh_less_than_recent_ones():
    runs = [
        _record("old", "2026-01-01T00:00:00Z", a=("NOT_FIT", "thermal"), b="GOLDEN"),
        _record("new", "2026-11-01T00:00:00Z", a="GOLDEN", b=("NOT_FIT", "thermal")),
    ]
    assert [s.host for s in rank.rank(["a", "b"], runs)] == ["a", "b"]


def test_pick_takes_the_best_and_a_spare_margin():
    ranked = rank.rank([f"h{i:02d}" for i in range(30)], [])
    chosen = rank.pick(ranked, 20, 0.15)
    assert chosen.hosts == tuple(f"h{i:02d}" for i in range(20))
    assert chosen.spares == ("h20", "h21", "h22")  # ceil(20 * 0.15) = 3
    short = rank.pick(ranked, 28, 0.2)
    assert short.short == 0 and len(short.spares) == 2 and short.to_dict()["spares_short"] == 4
    assert rank.pick(ranked, 40, 0.1).short == 10
    with pytest.raises(ValueError, match="spare margin"):
        rank.pick(ranked, 10, 1.5)
