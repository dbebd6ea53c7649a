"""Benchmark: the same no-change rerun in one slice and in two (issue 25, "Sliced runs").

On a generated lab rack (``racksmith lab rack``, the lab of tests/bench/bench_site.py: bridge
rslab5, /var/lib/racksmith/lab-site), after one first run of ``site.yml`` (one process,
``racksmith run site``), the same rerun twice through ``racksmith run site --slices K``: K = 1,
then K = 2 (or the ``--slices`` given). For each: wall time, the controller's CPU seconds
(racksmith, ansible-runner, every ansible-playbook process and all they start: workers, ssh,
controller-side modules; the test hosts' own work is not in it), task results (from the run's
event files, every shard's), and each host's outcome from the merged report.json: its result,
its state per phase, its changed tasks. The outcomes must be identical across K, every host
must end as its faults say (``racksmith lab check-run`` on the merged run directory) and
nothing may change on a rerun; the figures are printed side by side, no timing is asserted.

    sudo .venv/bin/python tests/bench/bench_slices.py --servers 16 --slices 1 --slices 2 --slices 4
    sudo .venv/bin/python tests/bench/bench_slices.py --servers 3 --faults 1   # the small figures
    sudo .venv/bin/python tests/bench/bench_slices.py --quick     # make test: outcomes only

``--quick`` (CI) checks outcomes only, on the smallest rack that tells: 2 servers, 1 fault,
the first run itself sliced (``--slices 2``: one server per slice), judged by check-run; no
reruns, so no side-by-side figures.

Exit 1 when outcomes differ between K, check-run fails, a rerun changed anything or a run could
not be measured. The lab is torn down at the end, also on failure and Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_site import BIN, LAB, REPO, Bench, OwnCores, cpu_seconds, lab_env, load

RUNS_ROOT = Path("/tmp/racksmith-bench-slices-runs")
_RESULTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")


@dataclass
class Figures:
    label: str
    slices: int
    wall: float
    cpu: float
    rc: int
    results: int = 0
    check_rc: int = -1
    outcomes: dict[str, dict] = field(default_factory=dict)
    load_start: str = ""
    load_end: str = ""
    rerun: bool = True  # a rerun: nothing may change


def task_results(run_dir: Path) -> int:
    """Task results of every process of the run (its event files: the run's and each shard's)."""
    total = 0
    for path in [run_dir / "events.jsonl", *sorted(run_dir.glob("shards/*/events.jsonl"))]:
        if path.is_file():
            for line in path.read_text().splitlines():
                if json.loads(line).get("event") in _RESULTS:
                    total += 1
    return total


def outcomes(report: dict) -> dict[str, dict]:
    """Host -> its result, state per phase and changed tasks (report.json, machines only)."""
    return {
        name: {
            "result": host["result"],
            "phases": {p: o["state"] for p, o in sorted(host["phases"].items())},
            "changed": sum(int(o.get("changed") or 0) for o in host["phases"].values()),
        }
        for name, host in sorted(report["hosts"].items())
    }


def differences(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    out = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            out.append(f"{name}: {a.get(name)} != {b.get(name)}")
    return out


def racksmith_run(bench: Bench, run_dir: Path, slices: int | None) -> tuple[int, float, float]:
    """``racksmith run site``; (exit status, wall s, controller CPU s). Its output goes to
    RUN_DIR.log; the lines that say where it is are shown."""
    argv = [str(BIN / "racksmith"), "run", "site", "-i", f"{bench.inventory}/"]
    argv += ["--run-dir", str(run_dir), "--progress-interval", "60"]
    if slices:
        argv += ["--slices", str(slices)]
    t0, cpu0 = time.monotonic(), cpu_seconds()[0]
    with open(f"{run_dir}.log", "w") as log:
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            env=bench.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if line.startswith(("run: ", "sliced run:")) or "] run: " in line:
                print(f"    {line.rstrip()[:120]}", flush=True)
        rc = proc.wait()
    return rc, time.monotonic() - t0, cpu_seconds()[0] - cpu0


def measure(
    bench: Bench, label: str, slices: int | None, runs_root: Path, pin: OwnCores | None = None
) -> Figures:
    run_dir = runs_root / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{label}"
    print(f"\n== {label}: racksmith run site{f' --slices {slices}' if slices else ''} -> {run_dir}")
    if pin:
        print(f"    {pin}")
    load_start = load()
    with pin or contextlib.nullcontext():
        rc, wall, cpu = racksmith_run(bench, run_dir, slices)
    fig = Figures(label, slices or 0, wall, cpu, rc, load_start=load_start, load_end=load())
    fig.results = task_results(run_dir)
    check = subprocess.run(
        [str(BIN / "racksmith"), "lab", "check-run", str(run_dir)],
        cwd=REPO,
        env=bench.env,
        capture_output=True,
        text=True,
        check=False,
    )
    fig.check_rc = check.returncode
    print(f"    check-run: {(check.stdout.strip().splitlines() or ['(no output)'])[-1]}")
    if check.returncode:
        print(check.stdout[-3000:] + check.stderr[-2000:])
    try:
        fig.outcomes = outcomes(json.loads((run_dir / "report.json").read_text()))
    except (OSError, ValueError, KeyError) as exc:
        print(f"    report.json unreadable: {exc}")
    return fig


def table(figs: list[Figures]) -> list[str]:
    hosts = max((len(f.outcomes) for f in figs), default=0) or 1
    rows = [("run", "slices", "rc", "wall s", "ctl CPU s", "ctl CPU s/host", "results",
             "ctl ms/result", "changed", "check", "load start", "load end")]  # fmt: skip
    for f in figs:
        changed = sum(o["changed"] for o in f.outcomes.values())
        rows.append(
            (
                f.label,
                str(f.slices or "-"),
                str(f.rc),
                f"{f.wall:.0f}",
                f"{f.cpu:.1f}",
                f"{f.cpu / hosts:.2f}",
                str(f.results),
                f"{1000 * f.cpu / f.results:.0f}" if f.results else "-",
                str(changed),
                "ok" if f.check_rc == 0 else f"FAIL({f.check_rc})",
                f.load_start,
                f.load_end,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI: 3 servers, 1 fault, one sliced first run (--slices 2) judged by check-run",
    )
    parser.add_argument("--servers", type=int, help="rack size (default 16, quick 2)")
    parser.add_argument("--faults", help="faulty servers: 10%% or a count (default 10%%, quick 1)")
    parser.add_argument("--seed", type=int, default=7, help="rack seed (default 7)")
    parser.add_argument(
        "--slices", type=int, action="append", help="one rerun per value (default 1 and 2)"
    )
    parser.add_argument(
        "--controller-cpus",
        type=int,
        metavar="N",
        help="reruns with the controller on the first N CPUs and everything else on the rest"
        " (bench_site.OwnCores; default: not pinned)",
    )
    parser.add_argument("--inventory", type=Path, default=Path("/tmp/racksmith-bench-slices"))
    parser.add_argument("--runs-root", type=Path, default=RUNS_ROOT)
    args = parser.parse_args(argv)
    servers = args.servers or (2 if args.quick else 16)
    faults = args.faults or ("1" if args.quick else "10%")
    slices_list = args.slices or [1, 2]
    try:
        pin = OwnCores(args.controller_cpus) if args.controller_cpus else None
    except ValueError as exc:
        print(f"bench_slices: {exc}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench_slices: the lab needs root (bridge, netns, systemd-nspawn)", file=sys.stderr)
        return 1
    lab_dir = LAB["lab_dir"]
    env = lab_env(
        args.inventory,
        RACKSMITH_PROGRESS_INTERVAL="60",
        RACKSMITH_RUNS_DIR=str(args.runs_root),  # history.jsonl here, never the checkout's
    )
    for name in ("MAAS_URL", "MAAS_API_KEY", "RACKSMITH_BMC_USERNAME", "RACKSMITH_BMC_PASSWORD"):
        env.pop(name, None)  # never another lab's credentials
    bench = Bench(inventory=args.inventory, lab_dir=lab_dir, env=env)
    if args.inventory.exists():
        shutil.rmtree(args.inventory)
    args.runs_root.mkdir(parents=True, exist_ok=True)
    bench.racksmith(
        "lab", "rack", "--servers", str(servers), "--faults", faults, "--seed", str(args.seed),
        "--bridge", LAB["bridge"], "--prefix", LAB["prefix"],
        "--bmc-base-port", str(LAB["bmc_base_port"]), "--maas-listen", LAB["maas_listen"],
        "--inventory", str(args.inventory), "--lab-dir", str(lab_dir), quiet=True,
    )  # fmt: skip
    about = (args.inventory / "rack.yml").read_text().splitlines()[:2]
    print(f"bench_slices: {about[1][2:]}\n  {about[0][2:]}\n  machine: nproc {os.cpu_count()}")

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    figs: list[Figures] = []
    problems: list[str] = []
    started = time.monotonic()
    try:
        up = bench.fresh()
        print(f"lab up (fresh) in {up:.1f} s")
        if args.quick:  # outcomes only: the first run itself sliced
            figs.append(measure(bench, "first-k2", 2, args.runs_root))
            figs[-1].rerun = False
        else:
            first = measure(bench, "first", None, args.runs_root)
            if first.check_rc:
                problems.append(f"first run: check-run exit {first.check_rc}")
            for k in slices_list:
                figs.append(measure(bench, f"rerun-k{k}", k, args.runs_root, pin))
    except KeyboardInterrupt:
        problems.append("interrupted")
    except (RuntimeError, OSError, ValueError) as exc:
        problems.append(f"could not measure: {exc}")
    finally:
        print("\ntearing the bench's lab down ...", flush=True)
        out = bench.racksmith("lab", "down", check=False, quiet=True)
        if "racksmith lab down:" in out:
            print(out)
            problems.append("lab down reported problems")

    print(f"\nbench_slices: {servers} servers, faults {faults}, seed {args.seed};"
          f" nproc {os.cpu_count()}; total {time.monotonic() - started:.0f} s")  # fmt: skip
    print("\n".join(table(figs)))
    print(
        "  ctl CPU: racksmith run and all it started (ansible-runner, every ansible-playbook,"
        " workers, ssh, controller-side modules); results: task results in the run's and every"
        " shard's events.jsonl; changed: changed tasks over all hosts (a rerun: 0)"
    )
    for f in figs:
        if f.check_rc:
            problems.append(f"{f.label}: check-run exit {f.check_rc}")
        if not f.outcomes:
            problems.append(f"{f.label}: no outcomes (report.json)")
        if f.rerun and any(o["changed"] for o in f.outcomes.values()):
            problems.append(f"{f.label}: a rerun changed something")
    base = figs[0] if figs else None
    for f in figs[1:]:
        diff = differences(base.outcomes, f.outcomes)
        if diff:
            problems.append(f"{f.label} differs from {base.label}: " + "; ".join(diff[:5]))
        else:
            print(f"  per-host outcomes of {f.label} = {base.label}: {len(f.outcomes)} hosts")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
