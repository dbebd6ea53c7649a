"""``racksmith diagnose hang`` on a real hung job: four gloo ranks on this machine, rank 2
stopped before the step's all_reduce (hang_job.py), read by the real probe and the real
py-spy, hosts resolved by the real ansible-inventory (one host, ``ansible_connection: local``).

The 4-host version of this test runs in the lab (test_hang_lab.py). The run's wall time is
printed, not asserted: speed is a benchmark's business on a shared machine.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from racksmith import cli

JOB = Path(__file__).with_name("hang_job.py")
WORLD = 4
HANG_RANK, HANG_STEP = 2, 3


#: Collectives each rank has enqueued once the job hangs (two all_reduces a step: weight, bias):
#: the waiting ranks are inside step HANG_STEP's first one, the hung rank is one behind.
WANT = {r: 2 * HANG_STEP + (0 if r == HANG_RANK else 1) for r in range(WORLD)}


def enqueued(dump: Path) -> int | None:
    """The last enqueued collective of a rank's flight-recorder dump (None: no dump yet)."""
    try:
        status = json.loads(dump.read_text())["pg_status"]["0"]
    except (OSError, ValueError, KeyError):
        return None
    return int(status["last_enqueued_collective"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def hung_job(tmp_path):
    """The job, started and waited for until every rank reached the hang step."""
    port = _free_port()
    procs = []
    try:
        for rank in range(WORLD):
            env = {
                **os.environ,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(WORLD),
                "TORCH_FR_BUFFER_SIZE": "2000",
                "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "fr_rank_"),
            }
            argv = [
                sys.executable,
                str(JOB),
                "--hang-rank",
                str(HANG_RANK),
                "--hang-step",
                str(HANG_STEP),
            ]
            log = (tmp_path / f"rank-{rank}.log").open("w")
            procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 300  # importing torch on a loaded 2-core machine
        while time.monotonic() < deadline:
            dead = [p.args for p in procs if p.poll() is not None]
            assert not dead, f"a rank exited: {dead}"
            seen = {r: enqueued(tmp_path / f"fr_rank_{r}") for r in range(WORLD)}
            if seen == WANT:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the job did not reach its hang: {seen}, want {WANT}")
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=30)


def test_diagnose_hang_names_rank_2_of_a_real_gloo_job_and_nothing_else(hung_job, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    trainer:\n      ansible_connection: local\n")
    out = io.StringIO()
    start = time.monotonic()
    with redirect_stdout(out):
        code = cli.main(
            [
                "diagnose",
                "hang",
                "-i",
                str(inventory),
                "--match",
                JOB.name,
                "--json",
                "--out",
                str(tmp_path / "diag"),
                "--deadline",
                "60",
            ]
        )
    took = time.monotonic() - start
    doc = json.loads(out.getvalue())
    print(f"diagnose hang on the local 4-rank gloo job: {took:.1f} s {doc['seconds']}")
    shown = {
        k: doc[k]
        for k in (
            "decided",
            "undecided",
            "unanswered_hosts",
            "unread_ranks",
            "ranks_seen",
            "stack_groups",
            "collective_groups",
        )
    }
    assert code == 1, shown
    pids = {p.pid for p in hung_job}
    assert [(s["host"], s["rank"]) for s in doc["suspects"]] == [("trainer", HANG_RANK)], shown
    (suspect,) = doc["suspects"]
    assert suspect["pid"] == hung_job[HANG_RANK].pid and suspect["pid"] in pids
    assert any("wait_for_batch" in why for why in suspect["reasons"])
    assert any(why.startswith("flight recorder: pg 0:") for why in suspect["reasons"])
    assert doc["named_hosts"][0]["host"] == "trainer" and len(doc["named_hosts"]) == 1
    assert doc["unanswered_hosts"] == [] and doc["unread_ranks"] == []
    assert doc["decided"] and doc["world_size"] == WORLD and doc["ranks_seen"] == WORLD
    assert doc["health"]["trainer"], "the quick checks' outcome (or why they did not run)"
    ticket = json.loads((tmp_path / "diag" / "tickets" / "trainer.json").read_text())
    assert ticket["result"] == "HANG_SUSPECT"
    assert any("rank 2" in e["text"] for e in ticket["all_evidence"])
    assert json.loads((tmp_path / "diag" / "hang.json").read_text())["suspects"] == doc["suspects"]
