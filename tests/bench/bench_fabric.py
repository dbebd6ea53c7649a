#!/usr/bin/env python3
"""Benchmark: the fabric tools at the size of issue 12's cluster.

    python tests/bench/bench_fabric.py            # 4,096 HCAs, 3 tiers; 1,000,000 event lines
    python tests/bench/bench_fabric.py --quick    # 2,048 HCAs; 100,000 event lines (seconds)

1. Burn-in plan: generate a 3-tier fat tree of radix-64 switches (4,096 HCAs: 320 switches,
   12,288 links), write and re-read it as ``ibnetdiscover`` text, plan the burn-in. Prints
   the inter-switch coverage, the stage count against the planner's lower bound, and the
   seconds. Goals: 100 % coverage, stages within 1.2x of the bound, under 30 s. A partly
   populated tree (3,000 HCAs) is planned too, where the bound is above 1.
2. Cabling check of the same fabric with every fault kind injected (seconds, findings).
3. UFM triage: a generated ``event.log`` of 1,000,000 lines (background churn, one reboot
   storm, bad links), parsed from the file and triaged against the topology. Goal: < 10 s;
   the bad links found must be the ones injected.

Figures, not a pass/fail test: the exit code is non-zero only when a result is wrong
(coverage below 100 %, bad links missed or invented).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from racksmith.fabric import burnin, cabling, events, ibnetdiscover, triage, wiring
from racksmith.lab import fabricgen


def _timed(fn, *args, **kwargs):
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - started


def bench_burnin(hcas: int, seed: int) -> bool:
    fabric, t_gen = _timed(fabricgen.generate, hcas, 3, seed)
    text = ibnetdiscover.render(fabric.topology)
    topo, t_parse = _timed(ibnetdiscover.parse, text, "bench")
    plan, t_plan = _timed(burnin.plan, topo, seed)
    ratio = len(plan.stages) / plan.lower_bound
    print(
        f"burn-in {hcas} HCAs, 3 tiers: {len(topo.switches())} switches, {len(topo.links)} links"
        f" | inter-switch coverage {plan.covered_inter_switch}/{plan.inter_switch_links}"
        f" = {100 * plan.coverage:.1f} % | HCA links {plan.covered_hca}/{plan.hca_links}"
        f" | stages {len(plan.stages)} vs lower bound {plan.lower_bound} (ratio {ratio:.2f})"
        f" | plan {t_plan:.2f} s (generate {t_gen:.2f} s, parse {t_parse:.2f} s)"
    )
    return plan.coverage == 1.0


def bench_cabling(hcas: int, seed: int) -> None:
    fabric = fabricgen.generate(
        hcas, 3, seed, faults=("miscabling", "missing", "degraded", "renamed")
    )
    plan = wiring.parse(wiring.render(fabric.plan), "plan")
    report, seconds = _timed(cabling.check, fabric.topology, plan)
    print(
        f"cabling {hcas} HCAs: {len(report.findings)} findings {report.counts()} "
        f"for {len(fabric.faults)} injected faults | {seconds:.2f} s"
    )


def bench_triage(hcas: int, lines: int, seed: int) -> bool:
    fabric = fabricgen.generate(hcas, 3, seed)
    (log, truth), t_gen = _timed(fabricgen.event_log, fabric, lines, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "event.log"
        path.write_text("\n".join(log) + "\n")
        size = os.path.getsize(path)
        del log
        started = time.perf_counter()
        with path.open() as fh:
            result = triage.triage(events.parse_lines(fh, str(path)), fabric.topology, cap=10**6)
        seconds = time.perf_counter() - started
    found = {frozenset(str(e) for e in a.issue.ends) for a in result.isolate}
    want = {frozenset(t["ends"]) for t in truth}
    print(
        f"UFM triage {lines:,} lines ({size / 1e6:.0f} MB): {seconds:.2f} s"
        f" ({lines / seconds / 1e3:.0f}k lines/s) | {len(found)} bad links found,"
        f" {len(want)} injected, {len(found & want)} match | {result.burst_dropped} events in"
        f" {result.bursts} burst(s) dropped | (generate {t_gen:.1f} s)"
    )
    return found == want


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hcas", type=int, default=4096)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="2,048 HCAs (two pods), 100,000 lines")
    args = parser.parse_args()
    if args.quick:
        args.hcas, args.lines = 2048, 100_000
    ok = bench_burnin(args.hcas, args.seed)
    if not args.quick:
        ok &= bench_burnin(3000, args.seed)
    bench_cabling(args.hcas, args.seed)
    ok &= bench_triage(args.hcas, args.lines, args.seed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
