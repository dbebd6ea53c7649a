"""``racksmith restart-plan`` against stand-in hosts whose quick checks are the real agent on
real captures (two with real failure overlays), a hang diagnosis, and a health history."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from racksmith.testing.inventory import write_inventory
from racksmith.triage.diagnose.restart import QuickOutcome, plan, quick_outcome, suspects_of
from racksmith.triage.history import HostRun, RunRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quick_hosts import REPO, check_command, make_hosts, profile, racksmith

HOSTS = {"h1": None, "h2": None, "h3": "thermal-slowdown", "h4": None, "h5": "pcie-x4", "h6": None}
#: The shape ``racksmith diagnose hang --json`` prints (racksmith.triage.diagnose.hang.HangReport),
#: written here by hand: rank 5 on h2 stopped before the collective the others wait in.
HANG = {
    "schema": "racksmith.diagnose.hang/v1",
    "suspect_hosts": ["h2"],
    "suspects": [{"host": "h2", "rank": 5, "why": "stack differs from the 7 others"}],
    "unanswered_hosts": [],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("restart")
    root = make_hosts(tmp, HOSTS)
    (tmp / "hosts.txt").write_text("".join(f"{h}\n" for h in HOSTS))
    (tmp / "hang.json").write_text(json.dumps(HANG))
    older = RunRecord(
        "a",
        "2026-11-01T00:00:00Z",
        {h: HostRun("GOLDEN") for h in HOSTS} | {"h1": HostRun("FAILED validate", "xid")},
    )
    newer = RunRecord("b", "2026-11-20T00:00:00Z", {h: HostRun("GOLDEN") for h in HOSTS})
    (tmp / "history.jsonl").write_text(older.to_json() + "\n" + newer.to_json() + "\n")
    return tmp, check_command(root, profile(tmp))


def test_plan_drops_failing_and_suspect_hosts_and_ranks_by_history(site):
    tmp, check = site
    out = tmp / "job-hosts.txt"
    proc = racksmith(
        "restart-plan",
        "--hosts",
        str(tmp / "hosts.txt"),
        "-n",
        "2",
        "--diagnosis",
        str(tmp / "hang.json"),
        "--history",
        str(tmp / "history.jsonl"),
        "--check",
        check,
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["hosts"] == ["h4", "h6"] and doc["limit"] == "h4,h6"
    assert doc["spares"] == ["h1"]  # fit, but it failed with an Xid before: ranked last
    assert out.read_text() == "h4\nh6\n"
    why = {e["host"]: " ".join(e["why"]) for e in doc["excluded"]}
    assert sorted(why) == ["h2", "h3", "h5"]
    assert "rank 5: stack differs" in why["h2"]
    assert "quick checks NOT FIT: FAIL clock_events" in why["h3"]
    assert "quick checks NOT FIT: FAIL pcie" in why["h5"] and "x4" in why["h5"]
    assert {q["host"]: q["fit"] for q in doc["quick"]} == {
        "h1": True,
        "h2": True,
        "h3": False,
        "h4": True,
        "h5": False,
        "h6": True,
    }


def test_too_few_hosts_exits_1_and_says_why_each_is_out(site):
    tmp, check = site
    proc = racksmith(
        "restart-plan",
        "--hosts",
        str(tmp / "hosts.txt"),
        "-n",
        "4",
        "--diagnosis",
        str(tmp / "hang.json"),
        "--check",
        check,
    )
    assert proc.returncode == 1
    assert "only 3 hosts fit and unsuspected, 4 wanted" in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "--limit h1,h4,h6"
    assert any(
        line.startswith("out: h3: quick checks NOT FIT: FAIL clock_events") for line in lines
    )


def test_the_agent_over_the_inventory_runs_where_the_host_is(tmp_path):
    """The default path, no --check: a host with ``ansible_connection: local`` runs the agent
    here (no GPU): NOT FIT, so it is out, never picked."""
    inv = write_inventory(
        tmp_path / "inv.yml",
        {"here": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
    )
    proc = racksmith(
        "restart-plan",
        "-i",
        str(inv),
        "-n",
        "1",
        "--agent-path",
        str(REPO),
        "--deadline",
        "60",
        "--json",
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["hosts"] == [] and doc["excluded"][0]["host"] == "here"
    assert doc["excluded"][0]["why"][0].startswith("quick checks NOT FIT: ")


def test_a_check_that_does_not_answer_keeps_the_host_out():
    assert quick_outcome("h", 255, "", "ssh: connect to host h port 22: No route").reasons == (
        "quick checks did not run (exit 255): ssh: connect to host h port 22: No route",
    )
    assert not quick_outcome("h", None, '{"verdict": "F', "no verdict within 5 s").fit
    assert not quick_outcome("h", 2, json.dumps({"verdict": "FIT"}), "").fit  # exit 2: undecided


def test_mfu_diagnosis_suspects_and_unanswered_hosts_are_out():
    mfu = {
        "schema": "racksmith.diagnose.mfu/v1",
        "suspect_hosts": ["b"],
        "hosts": [
            {
                "host": "b",
                "findings": [
                    {"kind": "clock_events", "status": "FAIL", "detail": "quick.json: hw_slowdown"}
                ],
            }
        ],
    }
    hang = {"suspect_hosts": [], "unanswered_hosts": [{"host": "c", "error": "timed out"}]}
    suspects = suspects_of(mfu, "mfu.json") | suspects_of(hang, "hang.json")
    assert suspects == {
        "b": "suspect in mfu.json: clock_events FAIL: quick.json: hw_slowdown",
        "c": "did not answer in hang.json: timed out",
    }
    fit = {h: QuickOutcome(h, True, ()) for h in "abcd"}
    p = plan(list("abcd"), fit, suspects, [], 2)
    assert p.chosen == ("a", "d") and [h for h, _ in p.excluded] == ["b", "c"]
    with pytest.raises(ValueError, match="not a diagnosis"):
        suspects_of({"verdict": "healthy"}, "x.json")


def test_bad_input_exits_2(site, tmp_path):
    tmp, _ = site
    hosts = str(tmp / "hosts.txt")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    for args, message in (
        (["--hosts", hosts, "-n", "2", "--diagnosis", str(bad)], "not a diagnosis"),
        (["--hosts", hosts, "-n", "2", "--check", "true"], "must contain {host}"),
        (["-n", "2"], "--hosts FILE or as --inventory"),
        (["--hosts", hosts, "-n", "0"], "-n"),
    ):
        proc = racksmith("restart-plan", *args, "--json")
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stdout)
        assert message in proc.stderr, (args, proc.stderr)
