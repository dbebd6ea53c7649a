"""Benchmark: memory per lab test host (what sizing a 64-128 server lab on one machine needs).

Boots N free-standing test hosts with ``racksmith lab host up`` on a private bridge and prefix
of their own (default ``rslab9`` / 192.168.247, a lab directory in /tmp: never another lab's),
lets them settle, and measures per host:

- PSS: the proportional set size of every process in the host's cgroup (systemd, journald,
  sshd... shared pages counted once across hosts), from /proc/PID/smaps_rollup;
- the drop of the machine's MemAvailable per host (includes the kernel's share: page cache of
  the overlay root, network namespace, slab), noisy when other work runs.

Then it stops the hosts and the private lab (``racksmith lab down``). Needs root, nspawn and the
lab image (built by ``racksmith lab up``), like the lab lane.

    python tests/bench/bench_lab_memory.py            # 4 hosts
    python tests/bench/bench_lab_memory.py --quick    # 1 host
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from racksmith.lab import cgroup, generate

SETTLE = 5.0  # seconds after SSH answers, for first-boot units to finish


def mem_available_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    raise SystemExit("no MemAvailable in /proc/meminfo")


def host_pids(machine: str) -> list[int]:
    """Every process in the host's cgroup (the systemd hierarchy, where supervise puts it)."""
    pids: set[int] = set()
    for base in cgroup.tracking_hierarchies(Path("/proc/mounts").read_text()):
        group = base / cgroup.ROOT / machine
        for procs in group.rglob("cgroup.procs") if group.is_dir() else ():
            pids.update(int(p) for p in procs.read_text().split())
    return sorted(pids)


def pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0  # exited meanwhile
    return sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))


def lab(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", "lab", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if check and done.returncode != 0:
        raise SystemExit(f"racksmith lab {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one host")
    parser.add_argument("--hosts", type=int, help="how many (default 4, quick 1)")
    parser.add_argument("--bridge", default="rslab9")
    parser.add_argument("--prefix", default="192.168.247")
    args = parser.parse_args(argv)
    n = args.hosts or (1 if args.quick else 4)
    if os.geteuid() != 0:
        print("bench_lab_memory: needs root (test hosts are systemd-nspawn containers)")
        return 1
    with tempfile.TemporaryDirectory(prefix="rs-labmem-") as tmp:
        rack = Path(tmp) / "rack.yml"
        rack.write_text(
            generate.render(
                generate.RackPlan(
                    servers=1,
                    bridge=args.bridge,
                    prefix=args.prefix,
                    bmc_base_port=19443,
                    maas_listen="127.0.0.1:15247",
                )
            )
        )
        where = ("--rack", str(rack), "--lab-dir", str(Path(tmp) / "lab"))
        names = [f"mem{i}" for i in range(1, n + 1)]
        before = mem_available_kib()
        rows = []
        try:
            for i, name in enumerate(names):
                t0 = time.monotonic()
                lab("host", "up", name, f"{args.prefix}.{240 + i}", *where)
                rows.append([name, time.monotonic() - t0])
            time.sleep(SETTLE)
            after = mem_available_kib()
            for row in rows:
                pids = host_pids(f"{args.bridge}-{row[0]}")
                row += [len(pids), sum(pss_kib(p) for p in pids)]
        finally:
            lab("host", "down", *names, *where, check=False)
            lab("down", *where, check=False)
    print(f"{n} test host(s) on {args.bridge} ({args.prefix}.0/24), settled {SETTLE:.0f} s")
    print(f"{'host':8} {'boot s':>7} {'processes':>10} {'PSS MiB':>8}")
    for name, boot, procs, pss in rows:
        print(f"{name:8} {boot:>7.1f} {procs:>10} {pss / 1024:>8.1f}")
    mean_pss = sum(r[3] for r in rows) / len(rows) / 1024
    drop = (before - after) / len(rows) / 1024
    print(f"mean PSS per host {mean_pss:.1f} MiB; MemAvailable drop per host {drop:.1f} MiB")
    print(f"=> 128 hosts: ~{128 * max(mean_pss, drop) / 1024:.1f} GiB")
    if any(r[2] == 0 for r in rows):
        print("FAILED: a host had no processes in its cgroup (accounting not found)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
