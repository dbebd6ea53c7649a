"""Benchmark: a whole batch of machines through enlist and deploy at once (racksmith.maas.fleet),
against the MAAS time model.

Part 1 drives N simulated machines (default 512) through ``fleet.run`` in-process: enlist
(commission + pin), deploy, then both again (the rerun must change nothing). Each row prints the
wall time in MAAS minutes beside the model: the simulator's own duration of the slowest single
operation (commissioning 5 MAAS minutes, deploying 10), and what ``forks``-capped waves would
take (ceil(N / forks) x that duration), so "every deploy in flight at once" is a number.

Part 2 runs ``racksmith.core.maas_fleet`` through ``ansible-playbook`` (a small playbook written
to a temporary directory, like the play the deploy phase would use) on M machines with forks 8
and forks 64: the deploy wall time must not depend on forks.

MAAS time runs ``--speed`` times faster on both sides (simulator clock and client ScaledClock);
controller CPU is this process's (the simulator runs in it too) plus, for part 2, the children's.

    python tests/bench/bench_fleet.py            # 512 machines, 64 through ansible-playbook
    python tests/bench/bench_fleet.py --quick    # 48; 8 through ansible-playbook, forks 2 and 8
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import DURATIONS, Store
from racksmith.maas import fleet, lifecycle
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import RateLimiter, ScaledClock
from racksmith.maas.storage import BootDiskRule
from racksmith.testing.fleet import batch_host

REPO = Path(__file__).resolve().parents[2]
RULE = BootDiskRule.from_dict({"model": "DELLBOSS*"})
PLAYBOOK = """\
- name: Deploy the batch with maas_fleet
  hosts: bmc_ok
  gather_facts: false
  tasks:
    - name: This host's entry
      ansible.builtin.set_fact:
        racksmith_fleet_entry: {name: "{{ inventory_hostname }}", pxe_mac: "{{ redfish_pxe_mac }}"}
    - name: Deploy every host at once
      racksmith.core.maas_fleet:
        state: deployed
        hwe_kernel: hwe-22.04
        poll_interval: "{{ poll }}"
        request_rate: 400
        hosts: "{{ ansible_play_hosts | map('extract', hostvars, 'racksmith_fleet_entry') | list }}"
      run_once: true
      delegate_to: localhost
      register: fleet
    - name: Fail the hosts that did not deploy
      ansible.builtin.fail:
        msg: "{{ fleet.hosts[inventory_hostname].cause or fleet.hosts[inventory_hostname].msg }}"
      when: fleet.hosts[inventory_hostname].failed
"""


def host(i: int) -> fleet.FleetHost:
    high, low = i >> 8, i & 255
    return batch_host(f"fleet{i:04d}", f"02:5d:{high:02x}:{low:02x}:01:00", f"10.9.{high}.{low}")


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Connect:
    """One client per host thread, sharing one request-rate bound; counts requests."""

    def __init__(self, url: str, key: str, speed: float, limiter: RateLimiter):
        self.creds = Credentials(url, ApiKey.parse(key))
        self.speed, self.limiter = speed, limiter
        self.clients: list[MaasClient] = []

    def __call__(self) -> MaasClient:
        client = MaasClient(self.creds, clock=ScaledClock(self.speed), limiter=self.limiter)
        self.clients.append(client)  # list.append is atomic under the GIL
        return client

    def requests(self) -> int:
        return sum(c.requests_sent for c in self.clients)


def batch(label, hosts, operation, *, url, key, speed, limiter, model, forks) -> dict:
    connect = Connect(url, key, speed, limiter)
    policy = lifecycle.WaitPolicy.build(clock=ScaledClock(speed))
    lines: list[str] = []
    cpu0, t0 = cpu(), time.monotonic()
    run = fleet.run(
        hosts,
        operation,
        connect=connect,
        policy=policy,
        phase=label.split()[0],
        progress=lambda p: lines.append(p.line()),
    )
    wall = time.monotonic() - t0
    return {
        "label": label,
        "n": len(hosts),
        "wall": wall,
        "maas_min": wall * speed / 60,
        "model_min": model / 60,
        "overhead": wall - model / speed,
        "waves_min": math.ceil(len(hosts) / forks) * model / 60 if model else 0.0,
        "changed": sum(r.changed for r in run.results.values()),
        "failed": run.failed,
        "req": connect.requests() / len(hosts),
        "reads": run.batch_reads,
        "rounds": run.rounds,
        "cpu": cpu() - cpu0,
        "last": lines[-1] if lines else "",
    }


def ansible_deploy(url: str, key: str, hosts, speed: float, forks: int, workdir: Path) -> dict:
    inv = workdir / f"inventory-{forks}.yml"
    inv.write_text(
        yaml.safe_dump(
            {"bmc_ok": {"hosts": {h.name: {"redfish_pxe_mac": h.pxe_mac.upper()} for h in hosts}}}
        )
    )
    book = workdir / "fleet.yml"
    book.write_text(PLAYBOOK)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        MAAS_URL=url,
        MAAS_API_KEY=key,
        RACKSMITH_RUN_DIR=str(workdir / f"run-{forks}"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS=str(forks),
        RACKSMITH_PROGRESS_INTERVAL="1",
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    )
    cpu0, t0 = cpu(), time.monotonic()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inv),
            str(book),
            "-e",
            f"poll={12.0 / speed:.4f}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    wall = time.monotonic() - t0
    recap = done.stdout.split("PLAY RECAP", 1)[-1].splitlines()
    failed = sum(1 for line in recap if " failed=" in line and " failed=0 " not in line)
    if done.returncode not in (0, 2) or (done.returncode and not failed):
        raise SystemExit(f"ansible-playbook failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    progress = [line for line in done.stdout.splitlines() if line.startswith("deploy: ")]
    return {
        "wall": wall,
        "maas_min": wall * speed / 60,
        "overhead": wall - DURATIONS["deploying"] / speed,
        "failed": failed,
        "cpu": cpu() - cpu0,
        "progress_lines": len(progress),
    }


def main(argv: list[str] | None = None) -> int:
    # This bench measures the batch and its polling in accelerated MAAS time. The fleet's power
    # pacing (commission/deploy/release take a slot) is real time: at its default 20 a minute
    # the slots alone would take minutes, and waits past the accelerated budgets are refused.
    # So it is off here, for this process and the ansible-playbook it starts;
    # tests/unit/maas/test_maas_pacing.py tests the pacing itself.
    os.environ["RACKSMITH_POWER_ACTIONS_PER_MINUTE"] = "0"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="48 + 8 machines at x300 (CI smoke)")
    parser.add_argument("--machines", type=int, help="library part (default 512, quick 48)")
    parser.add_argument("--ansible-machines", type=int, help="ansible part (default 64, quick 8)")
    parser.add_argument("--speed", type=float, help="MAAS time acceleration (default 60)")
    parser.add_argument("--rate", type=float, default=400.0, help="request rate bound (req/s)")
    parser.add_argument("--forks", type=int, default=64, help="forks for the waves model")
    args = parser.parse_args(argv)
    n = args.machines or (48 if args.quick else 512)
    m = args.ansible_machines if args.ansible_machines is not None else (8 if args.quick else 64)
    speed = args.speed or (300.0 if args.quick else 60.0)

    store = Store(clock=SimClock(speed), seed=42)
    limiter = RateLimiter(args.rate, burst=max(1, int(args.rate // 40)))
    print(
        f"MAAS simulator in-process, clock x{speed:g} (commissioning "
        f"{DURATIONS['commissioning']:.0f} s, deploying {DURATIONS['deploying']:.0f} s MAAS time);"
        f" one shared poll every 10-15 MAAS s; request bound {args.rate:g}/s; all in flight"
    )
    hosts = [host(i) for i in range(1, n + 1)]
    deploy = fleet.deploy_operation(lifecycle.DeployOptions(hwe_kernel="hwe-22.04"), rule=RULE)
    ready = fleet.ready_operation(RULE)
    rows = []
    ansible_rows = []
    with running(store) as server:
        common = {"url": server.url, "key": store.admin_key(), "speed": speed, "limiter": limiter}
        for label, op, model in (
            ("enlist (commission+pin)", ready, DURATIONS["commissioning"]),
            ("deploy", deploy, DURATIONS["deploying"]),
            ("enlist rerun", ready, 0.0),
            ("deploy rerun", deploy, 0.0),
        ):
            rows.append(batch(label, hosts, op, model=model, forks=args.forks, **common))
        if m:
            with tempfile.TemporaryDirectory() as tmp:
                for forks in (2, 8) if args.quick else (8, 64):
                    group = [host(10000 + forks * 100 + i) for i in range(1, m + 1)]
                    batch("enlist", group, ready, model=0.0, forks=forks, **common)
                    result = ansible_deploy(
                        server.url, store.admin_key(), group, speed, forks, Path(tmp)
                    )
                    ansible_rows.append((forks, result))

    print()
    print(
        f"{'batch':<24} {'hosts':>6} {'wall s':>7} {'MAAS min':>9} {'model min':>10} "
        f"{'waves(forks ' + str(args.forks) + ') min':>20} {'over s':>7} {'changed':>8} "
        f"{'failed':>7} {'req/host':>9} {'reads':>6} {'CPU s':>6}"
    )
    for r in rows:
        model = f"{r['model_min']:.1f}" if r["model_min"] else "-"
        waves = f"{r['waves_min']:.1f}" if r["waves_min"] else "-"
        print(
            f"{r['label']:<24} {r['n']:>6} {r['wall']:>7.1f} {r['maas_min']:>9.1f} {model:>10} "
            f"{waves:>20} {r['overhead']:>7.1f} {r['changed']:>8} {len(r['failed']):>7} "
            f"{r['req']:>9.1f} "
            f"{r['reads']:>6} {r['cpu']:>6.1f}"
        )
    for forks, r in ansible_rows:
        print(
            f"{'ansible-playbook forks ' + str(forks):<24} {m:>6} {r['wall']:>7.1f} "
            f"{r['maas_min']:>9.1f} {DURATIONS['deploying'] / 60:>10.1f} "
            f"{math.ceil(m / forks) * DURATIONS['deploying'] / 60:>20.1f} {r['overhead']:>7.1f} "
            f"{'':>8} "
            f"{r['failed']:>7} {'':>9} {'':>6} {r['cpu']:>6.1f}"
        )
    print()
    print(
        "model min: the simulator's duration of the slowest single operation; waves: what forks-"
        "capped waves of it take; over s: real seconds beyond the model (the controller's and the"
        " simulator's own work, which the accelerated clock turns into MAAS minutes)"
    )
    for r in rows:
        print(f"last progress line of {r['label']}: {r['last']}")
    for forks, r in ansible_rows:
        print(f"ansible-playbook forks {forks}: {r['progress_lines']} progress lines printed")
    bad = [r for r in rows if r["failed"]] + [
        r for r in rows if "rerun" in r["label"] and r["changed"]
    ]
    bad += [r for _, r in ansible_rows if r["failed"]]
    for r in bad:
        print(f"FAILED: {r.get('label', 'ansible-playbook')}: {r['failed'] or 'rerun changed'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
