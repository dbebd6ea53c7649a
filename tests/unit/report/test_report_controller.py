"""The controller (localhost, where preflight's checks, discovery's summary and the golden set
run) is reported apart from the machines: report.json's ``hosts`` never lists it (it used to,
as an INCOMPLETE host), its own plays are under ``controller`` with OK or FAILED:<phase>.
The callback's side: test_report.py (test_callback_writes_report_in_its_own_run_dir_...)."""

from __future__ import annotations

import json

from racksmith.report import RunReport
from racksmith.report.model import CONTROLLER, SCHEMA


def _report() -> RunReport:
    report = RunReport(run_id="r1", run_dir="/tmp/r1", started="2026-12-01T00:00:00Z")
    for phase in ("preflight", "discover", "validate"):
        report.record(CONTROLLER, phase, "ok")
    report.record("gpu01", "discover", "ok")
    report.attach_golden({"hosts": {"gpu01": {"verdict": "FIT", "reasons": []}}})
    report.record("gpu02", "discover", "ok")  # never validated: INCOMPLETE
    return report


def test_the_controller_is_not_one_of_the_hosts():
    data = json.loads(_report().to_json())
    assert data["schema"] == SCHEMA == "racksmith.run-report/v3"
    assert sorted(data["hosts"]) == ["gpu01", "gpu02"]
    assert data["hosts"]["gpu02"]["result"] == "INCOMPLETE"
    assert data["controller"]["name"] == CONTROLLER
    assert data["controller"]["result"] == "OK"
    assert sorted(data["controller"]["phases"]) == ["discover", "preflight", "validate"]
    assert data["summary"] == {"GOLDEN": 1, "INCOMPLETE": 1}


def test_a_failed_controller_play_is_its_result_and_reason():
    report = _report()
    report.record(CONTROLLER, "validate", "failed", "cannot write golden-set.json")
    data = json.loads(report.to_json())
    assert data["controller"]["result"] == "FAILED:validate"
    assert data["controller"]["reasons"] == ["validate: cannot write golden-set.json"]
    assert CONTROLLER not in data["hosts"]
    assert f"{CONTROLLER}: validate: cannot write golden-set.json" in report.render_text()


def test_rereading_keeps_the_controller_apart_and_moves_it_out_of_a_v2_report():
    data = json.loads(_report().to_json())
    again = json.loads(RunReport.from_dict(data).to_json())
    assert again["controller"] == data["controller"] and again["hosts"] == data["hosts"]
    v2 = {**data, "schema": "racksmith.run-report/v2", "controller": None}
    v2["hosts"] = {**data["hosts"], CONTROLLER: data["controller"]}
    moved = json.loads(RunReport.from_dict(v2).to_json())
    assert CONTROLLER not in moved["hosts"] and moved["controller"]["result"] == "OK"
    nothing = RunReport(run_id="r2", run_dir="/tmp/r2", started="x")
    assert json.loads(nothing.to_json())["controller"] is None
