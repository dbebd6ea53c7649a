"""Benchmark: is each package crossing the uplink once? The apt cache's figures from its log.

Parses an apt-cacher-ng transfer log with racksmith.lab.cachestats and prints bytes fetched
from upstream against bytes served to the hosts, the hit ratio and any .deb fetched more than
once, plus how fast the parser reads (a 64-server configure run's log must summarise in well
under a second).

Without ``--log`` it reads the recorded excerpt of the demo lab's log
(tests/fixtures/aptcache/, see its README): no lab needed. After a lab run, point it at the
lab's own log for that run's figures:

    python tests/bench/bench_aptcache.py --quick        # the recorded log, once (~1 s)
    python tests/bench/bench_aptcache.py                # also parse it x2000 for throughput
    python tests/bench/bench_aptcache.py --log $LAB_DIR/apt-cacher-ng/log/apt-cacher.log
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from racksmith.lab import cachestats

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "aptcache" / "apt-cacher.log"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, default=FIXTURE, help="transfer log to read")
    parser.add_argument("--quick", action="store_true", help="figures only, no throughput run")
    parser.add_argument("--repeat", type=int, default=2000, help="copies for the throughput run")
    args = parser.parse_args()

    text = args.log.read_text(errors="replace")
    stats = cachestats.summarize(cachestats.parse(text, source=str(args.log)))
    print(cachestats.format_text(stats, str(args.log)))
    span = (stats.last - stats.first) if stats.first is not None else 0
    print(f"  log: {len(text.splitlines())} lines over {span} s of lab time")
    if stats.upstream_bytes:
        print(f"  served/upstream: {stats.served_bytes / stats.upstream_bytes:.2f}x")

    repeat = 20 if args.quick else args.repeat
    big = text * repeat
    started = time.perf_counter()
    big_stats = cachestats.summarize(cachestats.parse(big, source="repeated"))
    took = time.perf_counter() - started
    lines = len(text.splitlines()) * repeat
    print(
        f"parser: {lines} lines ({len(big) / 2**20:.1f} MiB) in {took:.3f} s"
        f" = {lines / took:,.0f} lines/s; totals x{repeat} check:"
        f" {'ok' if big_stats.served_bytes == stats.served_bytes * repeat else 'MISMATCH'}"
    )
    return 0 if big_stats.served_bytes == stats.served_bytes * repeat else 1


if __name__ == "__main__":
    raise SystemExit(main())
