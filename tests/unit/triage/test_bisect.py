"""Bad-host bisection against a simulated job: bad hosts always make it fail, and the job is
flaky (it also fails now and then with only good hosts). Then the command end to end."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.triage.bisect import auto_groups, bisect, parse_groups, plan

REPO = Path(__file__).resolve().parents[3]
HOSTS48 = [f"gpu{i:02d}" for i in range(48)]


def flaky_job(bad: set[str], flake: float, seed: int, masked_jobs: int = 0):
    """A batch runner: a group fails if it holds a bad host, and fails anyway with probability
    ``flake``. A bad host's first ``masked_jobs`` jobs pass (a fault that shows up late)."""
    rng = random.Random(seed)
    calls: list[tuple[str, ...]] = []
    seen: dict[str, int] = {}

    def run_batch(groups):
        out = []
        for group in groups:
            calls.append(group)
            has_bad = False
            for host in bad & set(group):
                seen[host] = seen.get(host, 0) + 1
                has_bad = has_bad or seen[host] > masked_jobs
            out.append(not has_bad and rng.random() >= flake)
        return out

    run_batch.calls = calls
    return run_batch


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("seed", range(8))
def test_finds_one_to_three_bad_hosts_among_48_despite_a_flaky_job(count, seed):
    bad = set(random.Random(1000 + seed).sample(HOSTS48, count))
    job = flaky_job(bad, flake=0.1, seed=seed)  # 1 job in 10 fails for no host's fault
    outcome = bisect(HOSTS48, job, groups=parse_groups("6x8,8x6", 48))
    assert outcome.blamed == sorted(bad, key=HOSTS48.index)
    assert outcome.unresolved == []
    assert outcome.runs == len(job.calls) < 48  # fewer than one host at a time
    assert outcome.log[0].kind == "matrix" and len(outcome.log[0].groups) == 14


def test_first_round_is_rows_and_columns_that_cross_once():
    rows_cols = plan(HOSTS48, parse_groups("6x8,8x6", 48))["first_round"]
    rows, cols = rows_cols["rows"], rows_cols["columns"]
    assert [len(r) for r in rows] == [8] * 6 and [len(c) for c in cols] == [6] * 8
    for r in rows:
        for c in cols:
            assert len(set(r) & set(c)) == 1


def test_same_inputs_same_rounds():
    bad = {"gpu05", "gpu30"}
    logs = []
    for _ in range(2):
        outcome = bisect(HOSTS48, flaky_job(bad, 0.2, seed=3))
        logs.append([(r.kind, r.groups, r.passed) for r in outcome.log])
    assert logs[0] == logs[1]


def test_a_flaky_job_with_no_bad_host_blames_nobody():
    outcome = bisect(HOSTS48, flaky_job(set(), flake=0.2, seed=11))
    assert outcome.blamed == [] and outcome.unresolved == []


def test_a_bad_host_that_passed_a_round_is_found_by_the_final_check():
    # gpu17's row passes in round 1 (its fault shows from its second job on), so round 1
    # clears it; the check on every host not blamed fails, and the search starts again.
    outcome = bisect(HOSTS48, flaky_job({"gpu17"}, flake=0.0, seed=5, masked_jobs=1),
                     groups=parse_groups("6x8,8x6", 48))
    assert outcome.blamed == ["gpu17"]
    kinds = [r.kind for r in outcome.log]
    assert kinds[0] == "matrix" and "check" in kinds and kinds.index("check") < len(kinds) - 1


def test_rounds_budget_leaves_suspects_unresolved():
    outcome = bisect(HOSTS48, flaky_job({"gpu01"}, 0.0, seed=1), max_rounds=1)
    assert outcome.blamed == [] and "gpu01" in outcome.unresolved and outcome.rounds == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("6x8", "two groupings"),
        ("6x8,axb", "not COUNTxSIZE"),
        ("5x8,8x6", "holds 40 hosts"),
        ("6x8,6x8", "at least 8 groups"),
    ],
)
def test_bad_groupings_are_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_groups(spec, 48)


def test_auto_groups_cover_every_host():
    for n in (1, 2, 7, 48, 480, 512):
        first, second = auto_groups(n)
        assert first.count * first.size >= n and second.count >= first.size


# -- the command ------------------------------------------------------------------------------

JOB = """
import sys
bad = {"gpu07", "gpu31"}
hosts = set(sys.argv[1].split(","))
print("running on", len(hosts), "hosts")
sys.exit(1 if hosts & bad else 0)
"""


def racksmith(*args, cwd):
    return subprocess.run([sys.executable, "-m", "racksmith", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_command_blames_the_bad_hosts_and_prints_json_lines(tmp_path):
    (tmp_path / "hosts.txt").write_text("# the job's hosts\n" + "\n".join(HOSTS48) + "\n")
    (tmp_path / "job.py").write_text(JOB)
    proc = racksmith("bisect", "--hosts", "hosts.txt", "--run",
                     f"{sys.executable} job.py {{hosts}}", "--groups", "6x8,8x6", "--json",
                     "--log-dir", "logs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["plan"]["groupings"] == ["6x8", "8x6"]
    last = lines[-1]
    assert last["blamed"] == ["gpu07", "gpu31"]
    assert last["runs"] == len(list((tmp_path / "logs").glob("job-*.log")))
    assert last["rounds"] == len(lines) - 2
    assert "running on" in (tmp_path / "logs" / "job-0001.log").read_text()


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    (tmp_path / "hosts.txt").write_text("\n".join(HOSTS48) + "\n")
    proc = racksmith("bisect", "--hosts", "hosts.txt", "--run", "touch ran-{hosts}",
                     "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "one host at a time would take 48 runs" in proc.stdout
    assert "rows 1: gpu00,gpu01" in proc.stdout
    assert not list(tmp_path.glob("ran-*"))


@pytest.mark.parametrize(
    ("hosts", "run", "message"),
    [
        ("a\nb\na\n", "true {hosts}", "line 3: a is already on line 1"),
        ("a b\n", "true {hosts}", "line 1: one host per line"),
        ("\n# none\n", "true {hosts}", "no hosts in the file"),
        ("a\nb\n", "true", "must contain {hosts}"),
        ("a\nb\n", "no-such-command-xyz {hosts}", "is not a command on PATH"),
    ],
)
def test_bad_input_exits_2_naming_it(tmp_path, hosts, run, message):
    (tmp_path / "hosts.txt").write_text(hosts)
    proc = racksmith("bisect", "--hosts", "hosts.txt", "--run", run, "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stdout == ""
