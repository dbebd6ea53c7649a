"""``racksmith report`` on a generated run directory of 512 hosts: how long JSON, terminal
text, HTML, Prometheus textfile and every ticket take together (budget: 2 s), and how big the
HTML page is (budget: 1 MB).

The run directory is generated (report.json and golden-set.json as site.yml writes them,
with a real rack's failure mix: tests/unit/report/report_support.py). Timed in process
(load, triage, write everything) and end to end as the command (Python start included).

    python tests/bench/bench_report.py [--quick] [--hosts 512] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "report"))

from report_support import generate  # noqa: E402

from racksmith.report.publish import load_run, publish  # noqa: E402

BUDGET_S = 2.0
BUDGET_HTML = 1_000_000


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each (seconds)")
    parser.add_argument("--hosts", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs" / "20261130-000000-bench"
        expected = generate(folder, args.hosts)
        failed = sum(1 for r, _ in expected.values() if r != "GOLDEN")
        in_process = []
        for _ in range(runs):
            start = time.perf_counter()
            published = publish(load_run(folder), folder)
            in_process.append(time.perf_counter() - start)
        command = []
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "racksmith", "report", str(folder)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=60,
                                  check=False)
            command.append(time.perf_counter() - start)
            if proc.returncode:
                print(proc.stderr, file=sys.stderr)
                return 1
        sizes = {k: p.stat().st_size for k, p in published.paths.items()}
        tickets = len(list((folder / "tickets").glob("*.md")))
    best_cmd = min(command)
    print(f"racksmith report, {args.hosts} hosts ({failed} failed: {tickets} tickets), "
          f"{runs} run(s)")
    print(f"  in process (load, triage, tickets, json+text+html+prom): median "
          f"{statistics.median(in_process):.3f} s, max {max(in_process):.3f} s")
    print(f"  command end to end (python start included): median "
          f"{statistics.median(command):.3f} s, best {best_cmd:.3f} s; budget {BUDGET_S:.1f} s "
          f"-> {'within' if statistics.median(command) < BUDGET_S else 'OVER'}")
    print(f"  sizes: html {sizes['html'] / 1024:.0f} KiB (budget {BUDGET_HTML / 1e6:.0f} MB -> "
          f"{'within' if sizes['html'] < BUDGET_HTML else 'OVER'}), json "
          f"{sizes['json'] / 1024:.0f} KiB, text {sizes['text'] / 1024:.0f} KiB, prom "
          f"{sizes['prom'] / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
