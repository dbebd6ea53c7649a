"""Bad-host bisection: how many runs of the job it takes to find 1, 2 and 3 bad hosts among
48 and among 480, beside testing one host at a time (N runs).

The job is simulated (bad hosts always fail it) and, with ``--flake P``, flaky: it also fails
with probability P when every host is good. Each figure is the mean (and max) over
``--trials`` random placements of the bad hosts, seeded, so the table is reproducible.

    python tests/bench/bench_bisect.py [--quick] [--trials 200] [--flake 0.1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from racksmith.triage.bisect import bisect, parse_groups

GROUPS = {48: "6x8,8x6", 480: "20x24,24x20"}


def trial(n: int, bad_count: int, flake: float, seed: int):
    rng = random.Random(seed)
    hosts = [f"h{i:03d}" for i in range(n)]
    bad = set(rng.sample(hosts, bad_count))

    def run_batch(groups):
        return [not (bad & set(g)) and rng.random() >= flake for g in groups]

    outcome = bisect(hosts, run_batch, groups=parse_groups(GROUPS[n], n))
    return outcome, sorted(bad) == outcome.blamed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few trials (seconds)")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--flake", type=float, default=0.1)
    args = parser.parse_args(argv)
    trials = 5 if args.quick else args.trials
    print(f"bisection, {trials} trials per row; flaky job fails {args.flake:.0%} of good runs; "
          "confirm=3")
    print(f"{'hosts':>5} {'bad':>3} {'groups':>12} {'runs mean':>9} {'max':>4} {'rounds':>6} "
          f"{'found':>7} {'clean runs':>10} {'one at a time':>13}")
    started = time.perf_counter()
    for n in (48, 480):
        for bad_count in (1, 2, 3):
            flaky = [trial(n, bad_count, args.flake, s) for s in range(trials)]
            clean = [trial(n, bad_count, 0.0, s) for s in range(trials)]
            runs = [o.runs for o, _ in flaky]
            found = sum(ok for _, ok in flaky)
            print(f"{n:>5} {bad_count:>3} {GROUPS[n]:>12} {statistics.mean(runs):>9.1f} "
                  f"{max(runs):>4} {statistics.mean(o.rounds for o, _ in flaky):>6.1f} "
                  f"{found:>3}/{trials:<3} {statistics.mean(o.runs for o, _ in clean):>10.1f} "
                  f"{n:>13}")
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
