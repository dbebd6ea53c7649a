"""The run summary handed to AWX (set_stats, filter racksmith.core.run_summary): results and
causes from the host facts and the run's golden set, the same as the report's."""

from __future__ import annotations

import json

import pytest

from racksmith.health.golden import FIT
from racksmith.report.summary import SCHEMA, run_summary

QUARANTINED = {"racksmith_quarantine_reason": "expected 8 GPUs, BMC reports 7 (Video.Slot.1-1)"}


def test_results_and_causes_from_facts_and_the_golden_set(tmp_path):
    (tmp_path / "golden-set.json").write_text(
        json.dumps({"hosts": {"a": {"verdict": FIT}, "other": {"verdict": FIT}}})
    )
    hostvars = {"a": {}, "b": QUARANTINED, "c": {}, "localhost": {}, "other": {}}
    summary = run_summary(hostvars, iter(["localhost", "a", "b", "c"]), str(tmp_path))
    assert summary == {
        "schema": SCHEMA,
        "run_dir": str(tmp_path),
        "hosts": 3,  # not the controller, not a host of the golden set outside the run
        "golden": 1,
        "results": {"GOLDEN": 1, "INCOMPLETE": 1, "QUARANTINED": 1},
        "causes": {"gpu_missing": 1},
    }


def test_without_a_run_directory_no_host_is_golden(tmp_path):
    """Fit comes from the golden set only (as in the report), never from a fact."""
    summary = run_summary({"a": {"racksmith_health_verdict": FIT}, "b": QUARANTINED}, ["a", "b"])
    assert summary["results"] == {"INCOMPLETE": 1, "QUARANTINED": 1} and summary["run_dir"] == ""


def test_a_host_without_variables_or_a_broken_golden_set_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no host variables for 'x'"):
        run_summary({}, ["x"])
    (tmp_path / "golden-set.json").write_text("{")
    with pytest.raises(ValueError, match=r"golden-set\.json"):
        run_summary({"a": {}}, ["a"], str(tmp_path))
