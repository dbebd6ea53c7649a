"""`racksmith golden rank|pick|record` on generated run directories with a shared history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "unit" / "report"))

from report_support import generate  # noqa: E402


def racksmith(*args):
    return subprocess.run([sys.executable, "-m", "racksmith", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


def _runs(tmp_path):
    runs = tmp_path / "runs"
    first = generate(runs / "20261101-000000-a", 80, seed=1, fail_rate=0.3)
    second = generate(runs / "20261108-000000-b", 80, seed=2, fail_rate=0.1)
    return runs, first, second


def test_rank_sinks_hosts_that_failed_before_and_pick_takes_the_best(tmp_path):
    runs, first, second = _runs(tmp_path)
    proc = racksmith("golden", "record", str(runs / "20261101-000000-a"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["added"] is True
    assert (runs / "history.jsonl").read_text().count("\n") == 1
    again = racksmith("golden", "record", str(runs / "20261101-000000-a"))
    assert "already in" in again.stdout
    assert (runs / "history.jsonl").read_text().count("\n") == 1

    proc = racksmith("golden", "rank", str(runs / "20261108-000000-b"), "--json")
    assert proc.returncode == 0, proc.stderr
    ranked = json.loads(proc.stdout)["ranked"]
    golden_now = sorted(h for h, (r, _) in second.items() if r == "GOLDEN")
    assert sorted(s["host"] for s in ranked) == golden_now
    failed_before = {h for h, (r, _) in first.items() if r != "GOLDEN"}
    order = [s["host"] for s in ranked]
    clean = [h for h in order if h not in failed_before]
    assert order[: len(clean)] == clean  # every host with a clean history ranks first
    assert all(s["failures"] == 1 for s in ranked if s["host"] in failed_before)

    proc = racksmith("golden", "pick", str(runs / "20261108-000000-b"), "-n", "20",
                     "--spare", "0.2", "--json", "--out", str(tmp_path / "job.txt"))
    assert proc.returncode == 0, proc.stderr
    chosen = json.loads(proc.stdout)
    assert chosen["hosts"] == order[:20] and chosen["spares"] == order[20:24]
    assert (tmp_path / "job.txt").read_text().split() == order[:20]


def test_pick_more_than_the_golden_set_exits_1(tmp_path):
    runs, _, _ = _runs(tmp_path)
    proc = racksmith("golden", "pick", str(runs / "20261108-000000-b"), "-n", "500")
    assert proc.returncode == 1 and "500 wanted" in proc.stderr


def test_bad_input_exits_2(tmp_path):
    runs, _, _ = _runs(tmp_path)
    run = str(runs / "20261108-000000-b")
    proc = racksmith("golden", "pick", run, "-n", "5", "--spare", "3")
    assert proc.returncode == 2 and "spare margin" in proc.stderr
    (runs / "history.jsonl").write_text("garbage\n")
    proc = racksmith("golden", "rank", run, "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "history.jsonl: line 1: not a history record" in proc.stderr


def test_fleet_golden_set_takes_each_hosts_latest_run(tmp_path):
    runs = tmp_path / "runs"
    first = generate(runs / "20261101-000000-a", 40, seed=1, fail_rate=0.3)
    assert racksmith("golden", "record", str(runs / "20261101-000000-a")).returncode == 0
    repaired = next(h for h, (r, _) in sorted(first.items()) if r.startswith("FAILED"))
    # reprovision.yml -l <repaired>: a run of that one host, which ends GOLDEN
    rerun = runs / "20261102-000000-b"
    generate(rerun, 1, seed=5, fail_rate=0.0)
    report = json.loads((rerun / "report.json").read_text())
    report["hosts"] = {repaired: {**report["hosts"]["h0000"], "name": repaired}}
    (rerun / "report.json").write_text(json.dumps(report))
    golden = {"hosts": {repaired: {"verdict": "FIT", "reasons": []}}, "golden": [repaired]}
    (rerun / "golden-set.json").write_text(json.dumps(golden))

    only_run = json.loads(racksmith("golden", "rank", str(rerun), "--json").stdout)["ranked"]
    assert [s["host"] for s in only_run] == [repaired]
    fleet = json.loads(racksmith("golden", "rank", str(rerun), "--fleet", "--json").stdout)
    names = [s["host"] for s in fleet["ranked"]]
    before = sorted(h for h, (r, _) in first.items() if r == "GOLDEN")
    assert sorted(names) == sorted([*before, repaired])  # nothing else changed
    assert names[-1] == repaired  # it is golden again, and its failure sinks it
