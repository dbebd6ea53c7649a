"""Benchmark: enlist, commission and deploy a rack's worth of machines through MAAS.

Part 1 drives N simulated machines (default 512) through the same library calls the Ansible
modules make (``lifecycle.ensure_ready`` then ``lifecycle.deploy``), one client per machine as
each module process has, W at a time (default 64, the playbooks' forks), then reruns them all
(the idempotent path a second ``make demo`` takes). Part 2 runs enlist.yml and deploy.yml with
``ansible-playbook`` itself on M machines (default 64), and reruns them.

Everything runs in one process against the in-process simulator (the machine has 2 shared
cores): MAAS time runs ``--speed`` times faster on both sides (the simulator's clock and the
client's ScaledClock), so polls keep their MAAS meaning (every 10-15 s, jittered) and budgets
theirs. A shared token bucket bounds the request rate at ``--rate`` per second; the figures
show the rate MAAS actually saw.

    python tests/bench/bench_maas.py            # 512 + 64 machines
    python tests/bench/bench_maas.py --quick    # 32 + 4 machines at x300 (CI smoke, ~25 s)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import DURATIONS, Store
from racksmith.maas import lifecycle
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import RateLimiter, ScaledClock
from racksmith.maas.machines import MachineSpec
from racksmith.maas.storage import BootDiskRule

REPO = Path(__file__).resolve().parents[2]
RULE = BootDiskRule.from_dict({"model": "DELLBOSS*"})


def spec(i: int) -> MachineSpec:
    return MachineSpec(
        hostname=f"bench{i:04d}",
        pxe_mac=f"02:5b:{i >> 8:02x}:{i & 255:02x}:01:00",
        power_parameters={
            "power_address": f"10.9.{i >> 8}.{i & 255}",
            "power_user": "root",
            "power_pass": "calvin",
        },
    )


class RateMonitor:
    """Samples the simulator's request counter each real second: the rate MAAS saw."""

    def __init__(self, store: Store):
        self.store = store
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def total(self) -> int:
        return sum(self.store.stats.values())

    def _run(self) -> None:
        last = self.total()
        while not self._stop.wait(1.0):
            now = self.total()
            self.samples.append(now - last)
            last = now

    def __enter__(self) -> RateMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def library_run(
    url: str,
    key: str,
    count: int,
    workers: int,
    speed: float,
    limiter: RateLimiter,
    *,
    deploy_options: lifecycle.DeployOptions,
) -> dict:
    """Each machine as a module would do it: its own client, enlist then deploy."""
    policy = lifecycle.WaitPolicy.build(clock=ScaledClock(speed))
    creds = Credentials(url, ApiKey.parse(key))
    per_machine: list[tuple[int, float, bool]] = []
    failures: list[str] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        started = time.monotonic()
        with MaasClient(creds, clock=ScaledClock(speed), limiter=limiter) as client:
            try:
                ready = lifecycle.ensure_ready(client, spec(i), RULE, policy)
                done = lifecycle.deploy(client, ready.machine, policy, deploy_options, rule=RULE)
                changed = ready.changed or done.changed
            except Exception as exc:  # counted and shown, never hidden
                with lock:
                    failures.append(f"bench{i:04d}: {exc}")
                return
            with lock:
                per_machine.append((client.requests_sent, time.monotonic() - started, changed))

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, range(1, count + 1)))
    wall = time.monotonic() - started
    requests = [r for r, _, _ in per_machine]
    return {
        "wall": wall,
        "ok": len(per_machine),
        "changed": sum(1 for *_, c in per_machine if c),
        "failures": failures,
        "req_total": sum(requests),
        "req_mean": statistics.mean(requests) if requests else 0.0,
        "req_max": max(requests, default=0),
        "machine_p50": statistics.median([t for _, t, _ in per_machine]) if per_machine else 0.0,
    }


def ansible_run(url: str, key: str, count: int, speed: float, workdir: Path, playbook: str) -> dict:
    hosts = {}
    for i in range(1, count + 1):
        s = spec(1000 + i)
        hosts[s.hostname] = {"redfish_pxe_mac": s.pxe_mac.upper(), "redfish_bmc": f"10.8.0.{i}:443"}
    inv = workdir / "inventory"
    (inv / "group_vars").mkdir(parents=True, exist_ok=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"bmc_ok": {"hosts": hosts}}))
    (inv / "maas.yml").write_text("plugin: racksmith.core.maas\n")
    (inv / "group_vars" / "all.yml").write_text(
        yaml.safe_dump(
            {
                "racksmith_maas_boot_disk": {"model": "DELLBOSS*"},
                "racksmith_maas_hwe_kernel": "hwe-22.04",
                # 12 MAAS seconds between polls, in the module's real seconds
                "racksmith_maas_poll_interval": round(12.0 / speed, 3),
                "racksmith_maas_wait_ssh": False,
            }
        )
    )
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        MAAS_URL=url,
        MAAS_API_KEY=key,
        RACKSMITH_BMC_USERNAME="root",
        RACKSMITH_BMC_PASSWORD="calvin",
        RACKSMITH_RUN_DIR=str(workdir / "run"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(workdir / "facts"),
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    )
    started = time.monotonic()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inv),
            f"playbooks/{playbook}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - started
    recap = done.stdout.split("PLAY RECAP", 1)[-1]
    changed = sum(
        1
        for line in recap.splitlines()
        if " changed=" in line and " changed=0 " not in line and line.startswith("bench")
    )
    failed = sum(
        1
        for line in recap.splitlines()
        if " failed=" in line and " failed=0 " not in line and line.startswith("bench")
    )
    if done.returncode != 0 and failed == 0:
        raise SystemExit(
            f"ansible-playbook {playbook} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return {"wall": wall, "changed": changed, "failed": failed}


def fmt_rate(samples: list[int]) -> str:
    busy = [s for s in samples if s]
    if not busy:
        return "-"
    return f"mean {statistics.mean(busy):.0f}/s, max {max(busy)}/s"


def main(argv: list[str] | None = None) -> int:
    # This bench measures the batch and its polling in accelerated MAAS time. The fleet's power
    # pacing (commission/deploy/release take a slot) is real time: at its default 20 a minute
    # the slots alone would take minutes, and waits past the accelerated budgets are refused.
    # So it is off here, for this process and the ansible-playbook it starts;
    # tests/unit/maas/test_maas_pacing.py tests the pacing itself.
    os.environ["RACKSMITH_POWER_ACTIONS_PER_MINUTE"] = "0"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 + 4 machines at x300 (CI smoke)")
    parser.add_argument("--machines", type=int, help="library part (default 512)")
    parser.add_argument("--ansible-machines", type=int, help="ansible-playbook part (default 64)")
    parser.add_argument("--workers", type=int, default=64, help="machines in flight (forks)")
    parser.add_argument(
        "--speed", type=float, help="MAAS time acceleration (default 60, quick 300)"
    )
    parser.add_argument("--rate", type=float, default=400.0, help="request rate bound (req/s)")
    args = parser.parse_args(argv)
    n = args.machines or (32 if args.quick else 512)
    m = args.ansible_machines if args.ansible_machines is not None else (4 if args.quick else 64)
    args.speed = args.speed or (300.0 if args.quick else 60.0)

    store = Store(clock=SimClock(args.speed), seed=42)
    limiter = RateLimiter(args.rate, burst=max(1, int(args.rate // 40)))
    options = lifecycle.DeployOptions(hwe_kernel="hwe-22.04", user_data=b"#cloud-config\n{}\n")
    print(
        f"MAAS simulator in-process, clock x{args.speed:g} (commissioning "
        f"{DURATIONS['commissioning']:.0f} s, deploying {DURATIONS['deploying']:.0f} s MAAS time); "
        f"polls every 10-15 MAAS s; request bound {args.rate:g}/s; {args.workers} in flight"
    )
    rows = []
    with running(store) as server:
        url, key = server.url, store.admin_key()
        with RateMonitor(store) as first_mon:
            first = library_run(
                url, key, n, args.workers, args.speed, limiter, deploy_options=options
            )
        with RateMonitor(store) as again_mon:
            again = library_run(
                url, key, n, args.workers, args.speed, limiter, deploy_options=options
            )
        rows.append(("library: enlist+commission+deploy", n, first, first_mon))
        rows.append(("library: rerun (nothing to do)", n, again, again_mon))
        ansible_rows = []
        if m:
            with tempfile.TemporaryDirectory() as tmp:
                for label, playbook in (
                    ("enlist.yml", "enlist.yml"),
                    ("deploy.yml", "deploy.yml"),
                    ("enlist.yml rerun", "enlist.yml"),
                    ("deploy.yml rerun", "deploy.yml"),
                ):
                    before = sum(store.stats.values())
                    with RateMonitor(store) as mon:
                        result = ansible_run(url, key, m, args.speed, Path(tmp), playbook)
                    result["requests"] = sum(store.stats.values()) - before
                    ansible_rows.append((label, result, mon))

    print()
    print(
        f"{'run':<36} {'machines':>8} {'wall s':>8} {'changed':>8} {'failed':>7} "
        f"{'req/machine':>12} {'MAAS saw':>22}"
    )
    for label, count, r, mon in rows:
        print(
            f"{label:<36} {count:>8} {r['wall']:>8.1f} {r['changed']:>8} {len(r['failures']):>7} "
            f"{r['req_mean']:>12.1f} {fmt_rate(mon.samples):>22}"
        )
    for label, r, mon in ansible_rows:
        print(
            f"{'ansible-playbook: ' + label:<36} {m:>8} {r['wall']:>8.1f} {r['changed']:>8} "
            f"{r['failed']:>7} {r['requests'] / m:>12.1f} {fmt_rate(mon.samples):>22}"
        )
    print()
    print(
        f"library first pass: {first['req_total']} requests, max {first['req_max']} for one "
        f"machine, median {first['machine_p50']:.1f} s real per machine "
        f"(= {first['machine_p50'] * args.speed / 60:.1f} MAAS minutes)"
    )
    for failure in first["failures"][:5] + again["failures"][:5]:
        print(f"FAILED {failure}")
    bad = (
        first["failures"]
        or again["failures"]
        or again["changed"]
        or any(r["failed"] for _, r, _ in ansible_rows)
        or any(r["changed"] for label, r, _ in ansible_rows if "rerun" in label)
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
