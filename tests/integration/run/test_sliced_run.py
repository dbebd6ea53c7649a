"""A sliced run end to end on local hosts (no lab): one process, and the deploy process, two
slices and the merge (racksmith.run.slices with the real playbooks/merge.yml and
playbooks/validate_fleet.yml) give every host the same result, the same golden set and the same
HCA ports; each slice writes only its shard, the merge the run's report, tickets and history
line once. The playbook: tests/unit/run/data/sliced.yml."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.run.slices import execute_sliced

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "unit" / "run" / "data"
HOSTS = ("h1", "h2", "h3", "h4", "h5", "h6")

pytest.importorskip("ansible_runner")


@pytest.fixture
def inventory(tmp_path: Path) -> str:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[maas_deployed]\n"
        + "".join(
            f"{h} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
            for h in HOSTS
        ),
        encoding="utf-8",
    )
    return str(path)


def _outcomes(run_dir: Path) -> dict:
    report = json.loads((run_dir / "report.json").read_text())
    golden = json.loads((run_dir / "golden-set.json").read_text())
    return {
        "results": {name: host["result"] for name, host in report["hosts"].items()},
        "phases": {
            name: {p: o["state"] for p, o in host["phases"].items()}
            for name, host in report["hosts"].items()
        },
        "golden": golden["golden"],
        "not_fit": golden["not_fit"],
        "hca": json.loads((run_dir / "fabric" / "hosts.json").read_text()),
    }


def test_one_process_and_two_slices_give_the_same_outcomes(tmp_path, inventory, monkeypatch):
    from racksmith.run.runner import RunRequest, execute

    monkeypatch.delenv("RACKSMITH_RUN_DIR", raising=False)
    monkeypatch.setenv("RACKSMITH_RUNS_DIR", str(tmp_path / "runs"))  # history.jsonl stays here
    playbook = DATA / "sliced.yml"
    one = execute(
        RunRequest(playbook, inventory, tmp_path / "runs" / "one"), io.StringIO(), tty=False
    )
    assert one.rc == 2  # h4 failed
    out = io.StringIO()
    sliced, plan = execute_sliced(
        RunRequest(playbook, inventory, tmp_path / "runs" / "two"),
        2,
        out,
        merge_playbook=REPO / "playbooks" / "merge.yml",
    )
    printed = out.getvalue()
    assert sliced.rc == 2, printed[-3000:]
    assert plan["slices"] == {"slice-1": ["h1", "h3", "h6"], "slice-2": ["h2", "h5"]}
    assert plan["merge"] == 0
    expected = _outcomes(one.run_dir)
    assert expected["results"] == {
        "h1": "GOLDEN", "h2": "GOLDEN", "h3": "NOT_FIT", "h4": "FAILED:deploy",
        "h5": "QUARANTINED", "h6": "GOLDEN",
    }  # fmt: skip
    assert expected["golden"] == ["h1", "h2", "h6"]
    assert expected["not_fit"] == ["h3", "h4", "h5"]  # h4: deployed, then failed
    assert _outcomes(sliced.run_dir) == expected
    run_dir = sliced.run_dir
    # each slice wrote its own shard: its hosts' golden entries, no tickets, no history line
    shard = json.loads((run_dir / "shards" / "slice-2" / "golden-set.json").read_text())
    assert sorted(shard["hosts"]) == ["h2", "h5"]
    assert not (run_dir / "shards" / "slice-2" / "tickets").exists()
    assert (
        yaml.safe_load((run_dir / "carry.yml").read_text())["all"]["children"]["quarantine"][
            "hosts"
        ]["h5"]["racksmith_quarantine_reason"]
        == "GPU count 7, expected 8 (test)"
    )
    history = (tmp_path / "runs" / "history.jsonl").read_text().splitlines()
    assert len(history) == 2  # one line per run: the single process and the merge
    assert "[merge]" in printed and "[slice-2]" in printed
    assert "tickets" in {p.name for p in run_dir.iterdir()}  # the merge triaged h3, h4, h5
