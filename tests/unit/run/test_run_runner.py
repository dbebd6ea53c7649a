"""``racksmith run`` end to end on local hosts: a real ansible-runner run of data/tiny.yml
with the project's ansible.cfg and report callback (no lab), and the CLI's usage errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.run.runner import RunRequest, execute

pytest.importorskip("ansible_runner")

DATA = Path(__file__).parent / "data"
CANARY = "canary-Secret-4711"


@pytest.fixture
def inventory(tmp_path: Path) -> str:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "".join(
            f"{h} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
            for h in ("ok-host", "bad-host")
        ),
        encoding="utf-8",
    )
    return str(path)


def test_tiny_playbook_through_ansible_runner(tmp_path, inventory, monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", CANARY)  # must land in no file of the run
    monkeypatch.delenv("RACKSMITH_RUN_DIR", raising=False)
    run_dir = tmp_path / "run"
    out = io.StringIO()
    outcome = execute(RunRequest(DATA / "tiny.yml", inventory, run_dir), out, tty=False)
    assert outcome.rc == 2 and outcome.status == "failed"  # ansible-playbook: a host failed
    printed = out.getvalue().splitlines()
    assert "configure: FAILED bad-host (Fail on bad-host): bad-host is broken" in printed
    assert "preflight: 2 ok" in printed
    assert printed[-2:] == [
        "preflight        0   2        0       0            0        0",
        "configure        0   0        1       1            0        0",
    ]
    assert "\x1b[" not in out.getvalue()  # plain lines when not a terminal
    events = [json.loads(line) for line in outcome.events.read_text().splitlines()]
    assert outcome.events == run_dir / "events.jsonl"
    assert events[0]["event"] == "playbook_on_start"
    assert [e["counter"] for e in events] == sorted(e["counter"] for e in events)
    (stats,) = [e for e in events if e["event"] == "playbook_on_stats"]
    assert stats["event_data"]["failures"] == {"bad-host": 1}
    # the report callback ran in the same run directory; its report is what we hand back
    assert (run_dir / "report.json").is_file()
    assert outcome.report_text and "FAILED:configure" in outcome.report_text
    assert (run_dir / "runner" / "artifacts" / "racksmith" / "rc").read_text().strip() == "2"
    # AWX reads events from job_events/: one file per event, the same events, no colour codes
    job_events = sorted((run_dir / "runner" / "artifacts" / "racksmith" / "job_events").iterdir())
    assert len(job_events) == len(events)
    assert {json.loads(p.read_text())["uuid"] for p in job_events} == {e["uuid"] for e in events}
    assert "\x1b[" not in outcome.events.read_text()
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path


def test_live_table_on_a_terminal_redraws_in_place(tmp_path, inventory):
    out = io.StringIO()
    outcome = execute(RunRequest(DATA / "tiny.yml", inventory, tmp_path / "r"), out, tty=True)
    text = out.getvalue()
    assert outcome.rc == 2
    assert "\x1b[J" in text and "configure: FAILED bad-host" in text
    last_row = "configure        0   0        1       1            0        0"
    assert text.rstrip("\n").endswith(last_row)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "racksmith", "run", *args],
        capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ),
    )  # fmt: skip


@pytest.mark.parametrize("limit", [(), ("--limit", "all"), ("--limit", "gpu01,*")])
def test_reprovision_needs_an_explicit_limit(tmp_path, limit):
    done = _cli("reprovision", "-i", str(tmp_path), *limit, "--run-dir", str(tmp_path / "r"))
    assert done.returncode == 2 and "--limit" in done.stderr
    assert not (tmp_path / "r").exists()  # nothing was started


def test_missing_inventory_is_a_usage_error(tmp_path):
    done = _cli("site", "-i", str(tmp_path / "nope"), "--run-dir", str(tmp_path / "r"))
    assert done.returncode == 2 and str(tmp_path / "nope") in done.stderr


def test_installed_a_collection_playbook_runs_by_name_from_the_current_directory(
    tmp_path, inventory, monkeypatch
):
    """As after ``pip install racksmith`` + the collection: no checkout, the playbook by name,
    the site's directory as the project, the report callback enabled by its name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # the site's own, no racksmith settings
    run_dir = tmp_path / "run"
    request = RunRequest("racksmith.core.summary", inventory, run_dir)
    outcome = execute(request, io.StringIO(), tty=False)
    assert outcome.rc == 0, (run_dir / "runner" / "artifacts" / "racksmith" / "stdout").read_text()
    assert (run_dir / "report.json").is_file()  # the callback ran, enabled by name
    events = [json.loads(line) for line in outcome.events.read_text().splitlines()]
    (stats,) = [e for e in events if e["event"] == "playbook_on_stats"]
    summary = stats["event_data"]["artifact_data"]["racksmith"]  # set_stats, as AWX gets it
    assert summary["hosts"] == 2 and summary["results"] == {"INCOMPLETE": 2}
    assert summary["run_dir"] == str(run_dir)


def test_cli_installed_uses_the_collection_playbooks(tmp_path, monkeypatch):
    from racksmith.run import cli

    monkeypatch.setattr(cli, "in_checkout", lambda root=None: False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RACKSMITH_RUNS_DIR", raising=False)
    parser = __import__("argparse").ArgumentParser()
    cli.configure(parser)
    request = cli._request(parser.parse_args(["site", "-i", "a,b,"]))
    assert request.playbook == "racksmith.core.site"
    assert request.run_dir.parent == tmp_path / "runs"
