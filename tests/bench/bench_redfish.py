#!/usr/bin/env python3
"""Benchmark: racksmith's Redfish inventory against community.general.redfish_info, same rack.

    python tests/bench/bench_redfish.py            # 256 BMCs, 0.5 s per request (a few minutes)
    python tests/bench/bench_redfish.py --quick    # 8 BMCs, 0.1 s per request (CI smoke, ~15 s)

One process serves N emulated iDRACs (HTTPS with a lab CA, derived HGX H200 tree, a fixed latency
d on every request, sessions, everything the lab serves). Then, in the same run and against the
same BMCs:

1. racksmith: ``ansible-inventory -i redfish.yml --list`` (the plugin, W BMCs at once).
2. the peer a user would run today: ``ansible-playbook`` with ``community.general.redfish_info``
   (Systems: inventory, CPUs/GPUs, NICs; Manager: inventory) on every BMC, ``forks`` F.

It prints both wall times and their ratio, the requests per BMC each tool made (counted by the
emulated BMCs), and racksmith's discovery time against the model T = ceil(N/W) * R * d. Goals:
within 1.3x of the model and at least 10x faster than the peer. Figures, not a pass/fail test:
the exit code is non-zero only when a tool failed to discover every BMC.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from racksmith.lab.bmc.behaviour import Latency, Settings  # noqa: E402
from racksmith.lab.bmc.server import (  # noqa: E402
    create_farm,
    lab_credentials,
    lab_tls_context,
    synthesized_servers,
)

BIN = Path(sys.executable).parent
PEER_PLAYBOOK = """\
- name: Inventory every BMC with community.general.redfish_info
  hosts: bmcs
  gather_facts: false
  module_defaults:
    community.general.redfish_info:
      baseuri: "127.0.0.1:{{ bmc_port }}"
      username: "{{ lookup('env', 'RACKSMITH_BMC_USERNAME') }}"
      password: "{{ lookup('env', 'RACKSMITH_BMC_PASSWORD') }}"
      validate_certs: true
      ca_path: "{{ bmc_ca }}"
      timeout: 120
  tasks:
    - name: Systems inventory, CPUs (GPUs are processors) and NICs
      community.general.redfish_info:
        category: Systems
        command: [GetSystemInventory, GetCpuInventory, GetNicInventory]
    - name: Manager inventory (BMC firmware)
      community.general.redfish_info:
        category: Manager
        command: GetManagerInventory
"""


def _requests(farm) -> int:
    return sum(sum(v for k, v in b.stats.items() if k.isupper()) for b in farm.bmcs)


def _reset(farm) -> None:
    for bmc in farm.bmcs:
        bmc.stats.clear()


def _env(work: Path, creds: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(creds)
    env.update({"ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_HOME": str(work / "ansible")})
    env.update(extra)
    return env


def run_racksmith(farm, work: Path, ca: Path, creds: dict[str, str], workers: int) -> dict:
    cfg = work / "racksmith.cfg"
    cfg.write_text(
        "[defaults]\ninventory_plugins = "
        f"{REPO / 'plugins' / 'inventory'}\n[inventory]\nenable_plugins = racksmith.core.redfish\n"
    )
    inventory = work / "redfish.yml"
    targets = "".join(f"  - 127.0.0.1:{b.port}\n" for b in farm.bmcs)
    inventory.write_text(
        "plugin: racksmith.core.redfish\n"
        f"targets:\n{targets}ca_bundle: {ca}\nconcurrency: {workers}\ndeadline: 300\n"
        "read_timeout: 60\n"
    )
    _reset(farm)
    started = time.monotonic()
    done = subprocess.run(
        [
            str(BIN / "ansible-inventory"),
            "-i",
            str(inventory),
            "--list",
            "-v",
            "--output",
            str(work / "inv.json"),
        ],
        env=_env(work, creds, ANSIBLE_CONFIG=str(cfg)),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    ok = 0
    if done.returncode == 0:
        listing = json.loads((work / "inv.json").read_text())
        ok = len(listing.get("bmc_ok", {}).get("hosts", []))
    match = re.search(r"redfish: (\d+)/(\d+) BMCs ok in ([\d.]+)s", done.stdout + done.stderr)
    return {
        "wall": wall,
        "discovery": float(match.group(3)) if match else float("nan"),
        "ok": ok,
        "requests": _requests(farm),
        "error": None if done.returncode == 0 else done.stderr[-2000:],
    }


def run_peer(farm, work: Path, ca: Path, creds: dict[str, str], forks: int) -> dict:
    cfg = work / "peer.cfg"
    cfg.write_text(
        f"[defaults]\nforks = {forks}\nhost_key_checking = False\nretry_files_enabled = False\n"
    )
    hosts = work / "peer-hosts.ini"
    lines = [f"bmc{b.server.index:04d} bmc_port={b.port}" for b in farm.bmcs]
    hosts.write_text(
        "[bmcs]\n" + "\n".join(lines) + "\n\n[bmcs:vars]\nansible_connection=local\n"
        f"ansible_python_interpreter={sys.executable}\nbmc_ca={ca}\n"
    )
    playbook = work / "peer.yml"
    playbook.write_text(PEER_PLAYBOOK)
    _reset(farm)
    started = time.monotonic()
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(hosts), str(playbook)],
        env=_env(work, creds, ANSIBLE_CONFIG=str(cfg), ANSIBLE_DISPLAY_OK_HOSTS="false"),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    recap = re.findall(
        r"^(\S+)\s*: ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)", done.stdout, re.M
    )
    ok = sum(
        1 for _, good, unreachable, failed in recap if good == "2" and unreachable == failed == "0"
    )
    return {
        "wall": wall,
        "ok": ok,
        "requests": _requests(farm),
        "error": None if done.returncode == 0 else done.stdout[-2000:] + done.stderr[-1000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bmcs", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per request (d)")
    parser.add_argument(
        "--workers",
        default="64,256",
        help="racksmith concurrency W; a comma list runs racksmith once per W (default 64,256)",
    )
    parser.add_argument(
        "--peer-forks", type=int, default=50, help="ansible-playbook forks for the peer"
    )
    parser.add_argument("--quick", action="store_true", help="8 BMCs at 0.1 s (CI smoke)")
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.bmcs, args.latency, args.workers, args.peer_forks = 8, 0.1, "8", 8
    workers = [int(w) for w in str(args.workers).split(",")]

    with tempfile.TemporaryDirectory(prefix="racksmith-bench-") as tmp:
        work = Path(tmp)
        user, password = lab_credentials(work / "lab")
        tls = lab_tls_context(work / "lab")
        ca = work / "lab" / "ca" / "ca.pem"
        creds = {"RACKSMITH_BMC_USERNAME": user, "RACKSMITH_BMC_PASSWORD": password}
        servers = synthesized_servers(args.bmcs, "hgx-h200-8gpu", 1)
        farm = create_farm(
            servers,
            username=user,
            password=password,
            ports=[0] * len(servers),
            tls=tls,
            settings=Settings(latency=Latency(args.latency, args.latency)),
        )
        with farm:
            print(
                f"rack: {args.bmcs} emulated iDRACs (HTTPS, hgx-h200-8gpu), {args.latency:g} s "
                "per request; "
                f"racksmith W={','.join(map(str, workers))}, peer forks={args.peer_forks}; "
                f"{os.cpu_count()} CPUs",
                flush=True,
            )
            ours = {w: run_racksmith(farm, work, ca, creds, w) for w in workers}
            peer = None if args.skip_peer else run_peer(farm, work, ca, creds, args.peer_forks)

    n, d = args.bmcs, args.latency
    for w, result in ours.items():
        r = result["requests"] / n
        model = math.ceil(n / w) * r * d
        print(
            f"racksmith W={w:<4} inventory wall {result['wall']:6.1f} s (discovery "
            f"{result['discovery']:5.1f} s)"
            f"  ok {result['ok']}/{n}  requests/BMC {r:.1f}"
        )
        print(
            f"  model ceil(N/W)*R*d = ceil({n}/{w})*{r:.1f}*{d:g} = {model:.1f} s;  "
            "racksmith/model: "
            f"discovery {result['discovery'] / model:.2f}x, end-to-end "
            f"{result['wall'] / model:.2f}x (goal <= 1.3x)"
        )
    if peer is not None:
        print(
            f"peer redfish_info (ansible-playbook, forks {args.peer_forks}) wall "
            f"{peer['wall']:6.1f} s"
            f"  ok {peer['ok']}/{n}  requests/BMC {peer['requests'] / n:.1f}"
        )
        for w, result in ours.items():
            print(
                f"  peer / racksmith W={w}: {peer['wall'] / result['wall']:.1f}x (end-to-end, "
                "goal >= 10x)"
            )
    for name, result in [*((f"racksmith W={w}", r) for w, r in ours.items()), ("peer", peer)]:
        if result and result["error"]:
            print(f"{name} failed:\n{result['error']}", file=sys.stderr)
    complete = all(r["ok"] == n for r in ours.values()) and (peer is None or peer["ok"] == n)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
