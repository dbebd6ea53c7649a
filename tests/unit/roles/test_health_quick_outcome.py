"""Role health's reading of the agent's run (racksmith.roles.health.quick_outcome, filter
racksmith.core.health_quick_outcome): the real agent's report is read as it is; output that is
not its JSON report becomes the error the verdict makes NOT FIT, with the agent's stderr first;
no run at all gives neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.health import quick_outcome
from racksmith.testing.plugins import plugin_filters

REPO = Path(__file__).resolve().parents[3]
FILTERS = plugin_filters("plugins/filter/health_checks.py")


def test_the_agents_real_report_is_read_as_it_is(tmp_path):
    """The agent run as the role runs it, on this machine (no GPU: NOT FIT, exit 1 or 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "racksmith.health", "check", "--json", "--profile",
         "lab-standin", "--deadline", "20"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode in (0, 1, 2), done.stderr
    run = {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    outcome = quick_outcome(run)
    assert outcome == {"quick": json.loads(done.stdout), "error": ""}
    assert outcome["quick"]["profile"]["name"] == "lab-standin"
    assert FILTERS["health_quick_outcome"](run) == outcome


@pytest.mark.parametrize(
    ("run", "error"),
    [
        (
            {"rc": 2, "stdout": "", "stderr": "Traceback ...\nImportError: no module\n"},
            "health agent did not run: Traceback ...\nImportError: no module",
        ),
        (
            {"rc": 0, "stdout": "not json", "stderr": ""},
            "health agent did not run: its output is not a JSON report (Expecting value:",
        ),
        (
            {"rc": 1, "stdout": "[1, 2]", "stderr": ""},
            "health agent did not run: its output is not a JSON report (a list)",
        ),
        (
            {"rc": 2, "stdout": "", "stderr": "x" * 400},
            "health agent did not run: " + "x" * 300,
        ),
    ],
)
def test_output_that_is_not_the_report_is_an_error(run, error):
    outcome = quick_outcome(run)
    assert outcome["quick"] == {}
    assert outcome["error"].startswith(error)


def test_no_run_gives_no_report_and_no_error():
    assert quick_outcome({}) == {"quick": {}, "error": ""}
    assert quick_outcome(None) == {"quick": {}, "error": ""}
    assert quick_outcome({"skipped": True}) == {"quick": {}, "error": ""}


def test_the_filter_refuses_what_is_not_a_run():
    with pytest.raises(AnsibleFilterError, match="health_quick_outcome: expected"):
        FILTERS["health_quick_outcome"]("text")
