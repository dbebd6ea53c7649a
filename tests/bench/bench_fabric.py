#!/usr/bin/env python3
"""Benchmark: the fabric tools at the size of issue 12's cluster.

    python tests/bench/bench_fabric.py            # 4,096 HCAs, 3 tiers; 1,000,000 event lines
    python tests/bench/bench_fabric.py --quick    # 2,048 HCAs; 100,000 event lines; the
                                                  # real-path plan on 512 HCAs (seconds)

1. Burn-in plan: generate a 3-tier fat tree of radix-64 switches (4,096 HCAs: 320 switches,
   12,288 links), write and re-read it as ``ibnetdiscover`` text, plan the burn-in. Prints
   the inter-switch coverage, the stage count against the planner's lower bound, and the
   seconds. Goals: 100 % coverage, stages within 1.2x of the bound, under 30 s. A partly
   populated tree (3,000 HCAs) is planned too, where the bound is above 1.
   Then on the fabric's real paths: the same tree with the forwarding tables OpenSM's ftree
   engine computes (the lab's model of it), written as ``dump_lfts.sh`` text and read back;
   the plan made on the traced paths (stages against the lower bound on those paths, link
   coverage, both directions), and what the old plan really covers on those tables; then
   with 1 % of the inter-switch links dead and routed around.
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

from racksmith.fabric import burnin, cabling, events, ibnetdiscover, lft, pathplan, triage, wiring
from racksmith.lab import fabricgen, fabricroute


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


def bench_routed(hcas: int, seed: int, radix: int, dead_share: float) -> bool:
    fabric = fabricgen.generate(hcas, 3, seed, radix=radix)
    inter = sum(
        1
        for link in fabric.topology.links
        if {fabric.topology.nodes[g].kind for g in (link.a.guid, link.b.guid)} == {"switch"}
    )
    dead = round(inter * dead_share)
    if dead:
        fabric = fabricgen.generate(hcas, 3, seed, radix=radix, dead_links=dead)
    tables, t_route = _timed(fabricroute.ftree, fabric.topology)
    text = lft.render_ibroute(tables, fabric.topology)
    topo = ibnetdiscover.parse(ibnetdiscover.render(fabric.topology), "bench")
    read, t_read = _timed(lft.parse, text, "bench-lfts")
    plan, t_plan = _timed(pathplan.plan, topo, read, seed)
    old = burnin.plan(topo, seed)
    real = pathplan.replay(topo, read, old.stages)
    what = f"{dead} dead inter-switch links ({100 * dead_share:g} %)" if dead else "no dead link"
    print(
        f"burn-in on ftree tables, {hcas} HCAs radix {radix}, {what}: {len(topo.switches())}"
        f" switches, {plan.inter_switch_links} inter-switch links"
        f" | real-path coverage {plan.covered_inter_switch}/{plan.inter_switch_links}"
        f" = {100 * plan.coverage:.1f} % (both directions), HCA links"
        f" {plan.covered_hca}/{plan.hca_links}, {len(plan.unusable)} link directions no route"
        f" uses | stages {len(plan.stages)} vs lower bound {plan.lower_bound}"
        f" (ratio {plan.ratio:.2f}) | old plan ({len(old.stages)} stage(s), claims"
        f" {100 * old.coverage:.0f} %) really covers {100 * real.coverage:.1f} %,"
        f" {real.overloaded} link directions loaded twice | ftree {t_route:.1f} s, read"
        f" {t_read:.1f} s, plan {t_plan:.1f} s"
    )
    usable_links = plan.inter_switch_links - len({e // 2 for e in plan.unusable})
    return plan.covered_inter_switch == usable_links


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
    routed = (512, 16) if args.quick else (args.hcas, 64)
    ok &= bench_routed(*routed[:1], args.seed, routed[1], 0.0)
    ok &= bench_routed(*routed[:1], args.seed, routed[1], 0.01)
    bench_cabling(args.hcas, args.seed)
    ok &= bench_triage(args.hcas, args.lines, args.seed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
