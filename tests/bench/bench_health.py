"""Quick-suite wall time: how long ``python3 -m racksmith.health check`` takes end to end
(process start, every check, the verdict), against the issue's budget of 5 s.

Default: replay a captured host (tests/fixtures/<capture>) through the lab stand-in (real
subprocesses running fake tools that print the captured outputs), so it runs anywhere.
``--live --profile NAME``: time the agent on this host (run that on a GPU host).

    python tests/bench/bench_health.py [--quick] [--capture h200-x2] [--runs N]
    python tests/bench/bench_health.py --live --profile h200-x2-vm --runs 5

Prints per-run wall time, the median and max beside the budget, and each check's time in the
median run. Exit status is 0 unless the agent could not run at all (figures, not a gate).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 5.0


def run_agent(profile: str, env: dict, extra: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "racksmith.health", "check", "--json", "--profile", profile, *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.perf_counter() - start
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(
            f"agent printed no JSON (rc {proc.returncode}): {proc.stderr[-500:]}"
        ) from None
    return wall, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs (CI smoke run)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--capture", default="h200x2", help="fixture directory under tests/fixtures"
    )
    parser.add_argument("--profile", default="lab-standin")
    parser.add_argument("--live", action="store_true", help="time the agent on this host")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else args.runs

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    extra: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.live:
            sys.path.insert(0, str(ROOT))
            from racksmith.lab.standin import install

            install(ROOT / "tests/fixtures" / args.capture, tmp)
            env["PATH"] = f"{tmp}/bin{os.pathsep}{env.get('PATH', '')}"
            extra = ["--sysfs", f"{tmp}/sys"]
        walls, reports = [], []
        for _ in range(runs):
            wall, report = run_agent(args.profile, env, extra)
            walls.append(wall)
            reports.append(report)
    median = statistics.median(walls)
    mid = reports[walls.index(sorted(walls)[len(walls) // 2])]
    where = "live host" if args.live else f"replayed capture {args.capture}"
    print(f"quick suite, {where}, profile {args.profile}, {runs} runs")
    print(
        f"  verdict {mid['verdict']} (exit {mid['exit_code']}); "
        f"stand-in: {mid.get('standin') or 'no'}"
    )
    print(f"  wall s per run: {' '.join(f'{w:.2f}' for w in walls)}")
    print(
        f"  median {median:.2f} s   max {max(walls):.2f} s   budget {BUDGET_S:.1f} s   "
        f"median/budget {median / BUDGET_S:.2f}"
    )
    print("  slowest checks in the median run:")
    for check in sorted(mid["checks"], key=lambda c: -c["duration_s"])[:6]:
        print(f"    {check['name']:<16} {check['duration_s']:.3f} s  {check['status']}")
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "where": where,
                    "profile": args.profile,
                    "walls_s": walls,
                    "median_s": median,
                    "max_s": max(walls),
                    "budget_s": BUDGET_S,
                    "verdict": mid["verdict"],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
