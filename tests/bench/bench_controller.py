"""Benchmark: what ansible-playbook's main process costs per task result, by setting.

Issue 25: the controller's cost per host is task results x the main process's CPU per result,
and the main process is one process whatever the cores. This bench runs one synthetic play on
``--hosts`` local hosts (connection local: no lab, no root) with the two kinds of task a
racksmith phase is made of: tasks that finish at once in the worker (``debug``, as
``set_fact``/``assert``/skips do) and tasks whose module takes a while (``command: sleep``, as
apt or a probe on a busy host does), and measures, for each ``internal_poll_interval``:

- main CPU: ansible-playbook's own process (the strategy: queueing, results, variables,
  callbacks, and the loop that polls the workers every ``internal_poll_interval`` seconds);
- worker CPU: the forked workers and the modules they started (on a site the modules run on
  the hosts; here everything is this machine);
- ms per result of each.

It prints the figures (no timing is asserted) and exits 1 only when a run fails or its
results cannot be counted. The value ansible.cfg sets (``internal_poll_interval``) comes from
this table (docs/fleet.md, "The controller's cost per host").

    .venv/bin/python tests/bench/bench_controller.py                # 32 hosts, 4 intervals
    .venv/bin/python tests/bench/bench_controller.py --quick        # 2 hosts, 1 interval
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Runs ansible-playbook in this process and writes its own CPU (the main process) and its
#: waited-for children's (workers, modules) on exit.
WRAPPER = """\
import atexit, json, os, resource, sys
from ansible import constants as C
from ansible.cli.playbook import main
# what `internal_poll_interval` in ansible.cfg sets (it has no environment variable)
C.DEFAULT_INTERNAL_POLL_INTERVAL = float(os.environ["BENCH_POLL"])
pid = os.getpid()
def _say():
    if os.getpid() != pid:
        return
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["BENCH_RUSAGE"], "w") as out:
        json.dump({"main": me.ru_utime + me.ru_stime, "kids": kids.ru_utime + kids.ru_stime}, out)
atexit.register(_say)
sys.argv = ["ansible-playbook", *sys.argv[1:]]
main()
"""


def playbook(quick_tasks: int, slow_tasks: int, sleep: float) -> str:
    """A play of ``quick_tasks`` debug tasks and ``slow_tasks`` ``command: sleep`` tasks."""
    tasks = []
    for i in range(quick_tasks):
        tasks.append(f"    - name: quick {i}\n      ansible.builtin.debug:\n        msg: q{i}\n")
    for i in range(slow_tasks):
        tasks.append(
            f"    - name: slow {i}\n      ansible.builtin.command: sleep {sleep}\n"
            "      changed_when: false\n"
        )
    return "- hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(tasks)


def run(
    work: Path, hosts: int, forks: int, poll: float, play: str = "play.yml"
) -> dict[str, float]:
    inventory = work / "hosts.json"
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory.write_text(json.dumps({"all": {"hosts": {f"h{i:03d}": local for i in range(hosts)}}}))
    rusage = work / "rusage.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_CALLBACKS_ENABLED="racksmith_report",  # as in a run (its report in work/)
        RACKSMITH_RUN_DIR=str(work / "run"),
        BENCH_POLL=str(poll),
        ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
        ANSIBLE_NOCOLOR="1",
        BENCH_RUSAGE=str(rusage),
    )
    argv = [sys.executable, "-c", WRAPPER, str(work / play), "-i", str(inventory)]
    t0 = time.monotonic()
    done = subprocess.run(
        [*argv, "--forks", str(forks)], cwd=REPO, env=env, capture_output=True, text=True
    )
    wall = time.monotonic() - t0
    if done.returncode:
        raise RuntimeError(f"poll {poll}: exit {done.returncode}\n{done.stdout[-2000:]}")
    results = sum(
        1 for line in done.stdout.splitlines() if line.startswith(("ok: [", "changed: ["))
    )
    if not results and play == "play.yml":
        raise RuntimeError(f"poll {poll}: no task results in the output")
    cpu = json.loads(rusage.read_text())
    return {"wall": wall, "results": results, **cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 hosts, 1 interval (CI smoke)")
    parser.add_argument("--hosts", type=int, help="local hosts (default 32, quick 2)")
    parser.add_argument("--forks", type=int, default=64)
    parser.add_argument("--sleep", type=float, default=0.5, help="seconds of each slow task")
    parser.add_argument(
        "--poll", type=float, action="append", help="internal_poll_interval values to compare"
    )
    args = parser.parse_args(argv)
    polls = args.poll or ([0.01] if args.quick else [0.001, 0.005, 0.01, 0.05])
    hosts = args.hosts or (2 if args.quick else 32)
    quick_tasks, slow_tasks = (4, 1) if args.quick else (20, 5)
    rows = []
    with tempfile.TemporaryDirectory(prefix="racksmith-bench-ctl-") as tmp:
        work = Path(tmp)
        (work / "play.yml").write_text(playbook(quick_tasks, slow_tasks, args.sleep))
        (work / "empty.yml").write_text(playbook(0, 0, 0).replace("tasks:\n", "tasks: []\n"))
        print(
            f"bench_controller: {hosts} local hosts, forks {args.forks}, {quick_tasks} debug +"
            f" {slow_tasks} 'sleep {args.sleep}' tasks; nproc {os.cpu_count()},"
            f" load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"
        )
        try:
            start = run(work, hosts, args.forks, polls[0], "empty.yml")["main"]
            for poll in polls:
                rows.append((poll, run(work, hosts, args.forks, poll)))
        except (RuntimeError, OSError, ValueError) as exc:
            print(f"FAILED: {exc}")
            return 1
    print(
        f"{'poll s':>7} {'wall s':>7} {'results':>8} {'main CPU s':>11} {'worker CPU s':>13}"
        f" {'main ms/result':>15} {'worker ms/result':>17}"
    )
    print(f"  (main CPU less {start:.2f} s: ansible-playbook's start and end, from an empty play)")
    for poll, r in rows:
        main_s, n = r["main"] - start, r["results"]
        print(
            f"{poll:7.3f} {r['wall']:7.1f} {n:8d} {main_s:11.2f} {r['kids']:13.2f}"
            f" {1000 * main_s / n:15.1f} {1000 * r['kids'] / n:17.1f}"
        )
    print(
        "  main: ansible-playbook's own process (the strategy; one process whatever the cores);"
        " worker: forked workers and the modules they ran (on a site the modules run on the hosts)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
