"""``racksmith lab up|down|status``: the whole simulated rack as one unit.

``up`` is idempotent: it reuses whatever of this lab already runs and starts the rest --
bridge, apt cache, SSH key, lab CA, credentials, the cached image, then the BMC emulator
and the MAAS simulator as PID-recorded daemons, waiting until their ports answer. Test hosts
are not booted here: MAAS boots each one when it deploys it, as in a real rack. ``down``
stops everything by recorded PID and removes this lab's network. If ``up`` fails, it stops
what that invocation started, so a failed start leaves nothing behind.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from racksmith.lab import aptcache, creds, hosts, image, limits, net, ntp, paths, vm
from racksmith.lab.debs import serve as debs_serve
from racksmith.lab.errors import LabError
from racksmith.lab.proc import (
    ProcRecord,
    ensure_port_free,
    owns_listener,
    running,
    start_daemon,
    stop,
    wait_for_port,
)
from racksmith.lab.spec import RackSpec, SpecError, load

DAEMON_TIMEOUT = 60.0  # seconds for a simulator to answer on all its ports


@dataclass(frozen=True)
class Daemon:
    """A simulator ``lab up`` runs: its CLI command, the module providing it, its ports."""

    name: str
    module: str
    argv: tuple[str, ...]
    endpoints: tuple[tuple[str, int], ...]


def split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise LabError(f"listen address {listen!r} is not HOST:PORT")
    return host, int(port)


def daemons(rack: RackSpec, lab: paths.LabPaths, python: str = sys.executable) -> list[Daemon]:
    """The simulators, in start order. BMC ports of servers with the ``bmc_unreachable``
    fault are closed on purpose, so readiness does not wait for them."""
    common = ("--rack", str(rack.path), "--lab-dir", str(lab.root))
    bmc_ports = tuple(
        (rack.bmc_listen, s.bmc_port) for s in rack.servers if "bmc_unreachable" not in s.faults
    )
    return [
        Daemon(
            name="bmc",
            module="racksmith.lab.bmc",
            argv=(python, "-m", "racksmith", "lab", "bmc", *common),
            endpoints=bmc_ports,
        ),
        Daemon(
            name="maas",
            module="racksmith.lab.maassim",
            argv=(python, "-m", "racksmith", "lab", "maas", "--listen", rack.maas_listen, *common),
            endpoints=(split_listen(rack.maas_listen),),
        ),
    ]


def available(module: str) -> bool:
    """Whether a simulator's module exists yet (they are built by other work streams)."""
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return False
        raise
    return hasattr(imported, "configure")  # a package being written has no command yet


def _serving(record: ProcRecord | None, daemon: Daemon) -> bool:
    return record is not None and all(owns_listener(record, h, p) for h, p in daemon.endpoints)


def start_simulator(
    lab: paths.LabPaths, daemon: Daemon, *, timeout: float = DAEMON_TIMEOUT
) -> bool:
    """Start ``daemon`` unless this lab's instance serves already. True if started now."""
    pidfile = lab.pidfile(daemon.name)
    record = running(pidfile)
    if _serving(record, daemon):
        return False
    if record is not None:  # alive but not serving every port: replace it
        stop(pidfile)
    for host, port in daemon.endpoints:
        ensure_port_free(host, port, what=f"the {daemon.name} simulator")
    (lab.root / daemon.name).mkdir(parents=True, exist_ok=True)
    logfile = lab.logfile(daemon.name)
    record = start_daemon(daemon.argv, pidfile=pidfile, logfile=logfile)
    deadline = time.monotonic() + timeout
    for host, port in daemon.endpoints:
        wait_for_port(
            host,
            port,
            timeout=max(1.0, deadline - time.monotonic()),
            what=f"the {daemon.name} simulator (pid {record.pid})",
            record=record,
            logfile=logfile,
        )
    return True


class _Steps:
    """Timed, printed steps, so a slow or failing `lab up` says where its time went."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def run(self, label: str, func: Callable[[], object]) -> object:
        t = time.monotonic()
        print(f"[lab] {label} ...", flush=True)
        result = func()
        print(f"[lab] {label}: done in {time.monotonic() - t:.1f}s", flush=True)
        return result

    @property
    def total(self) -> float:
        return time.monotonic() - self.t0


def clean_stale(rack: RackSpec, lab: paths.LabPaths) -> list[str]:
    """Remove what a crashed run left: dead hosts' netns/veths, this lab's orphan netns and
    bridge ports. Running hosts and daemons are kept (``up`` is idempotent)."""
    cleaned = []
    live = {h.name for h in hosts.list_hosts(lab) if hosts.host_running(lab, h.name)}
    keep_netns = {net.netns_name(rack.bridge, n) for n in live}
    keep_veth = {h.veth for h in hosts.list_hosts(lab) if h.name in live} | vm.live_taps(lab)
    for host in hosts.list_hosts(lab):
        if host.name not in live and hosts.leftovers(lab, host):
            hosts.stop_host(lab, host.name, wipe=False)  # keeps its disk, like a power-off
            cleaned.append(f"leftovers of stopped host {host.name}")
    for ns in net.netns_list():
        if ns.startswith(f"{rack.bridge}-") and ns not in keep_netns:
            net.delete_host_net(netns=ns, veth="")
            cleaned.append(f"netns {ns}")
    for port in net.bridge_ports(rack.bridge):
        if port not in keep_veth:
            net.delete_host_net(netns="", veth=port)
            cleaned.append(f"veth {port}")
    return cleaned


def up(rack: RackSpec, lab: paths.LabPaths) -> int:
    hosts.require_root("racksmith lab up")
    steps = _Steps()
    started: list[str] = []
    try:
        limits.ensure(len(rack.servers))
        for item in clean_stale(rack, lab):
            print(f"[lab] cleaned stale {item}")
        fresh_bridge = not net.link_exists(rack.bridge)
        steps.run(
            f"bridge {rack.bridge} ({rack.network}), apt cache, NTP, SSH key",
            lambda: hosts.ensure_network(
                lab,
                bridge=rack.bridge,
                controller_ip=rack.controller_ip,
                proxy_port=rack.apt_proxy_port,
                prefixlen=rack.prefixlen,
            ),
        )
        if fresh_bridge:
            started.append("network")
        steps.run(
            "lab CA and credentials",
            lambda: (
                creds.ensure_ca(lab),
                creds.ensure_credentials(lab, maas_listen=rack.maas_listen),
            ),
        )
        steps.run("test-host image (built once, unpacked once)", image.ensure_tree)
        steps.run(
            "LAB STAND-IN apt repository (NVIDIA toolkit, DCGM, fabric manager)",
            lambda: debs_serve.ensure_running(lab, bind=rack.controller_ip),
        )
        for daemon in daemons(rack, lab):
            if not available(daemon.module):
                print(
                    f"[lab] NOTE: `racksmith lab {daemon.name}` is not available in this checkout"
                    f" ({daemon.module} is missing); continuing without the {daemon.name} simulator"
                )
                continue
            if steps.run(f"{daemon.name} simulator", lambda d=daemon: start_simulator(lab, d)):
                started.append(daemon.name)
    except (LabError, OSError) as exc:
        print(f"racksmith lab up: {exc}", file=sys.stderr)
        if started:
            print(f"[lab] stopping what this run started: {', '.join(started)}", file=sys.stderr)
            _rollback(rack, lab, started)
        return 1
    print(f"[lab] up in {steps.total:.1f}s; see `racksmith lab status`, stop: `racksmith lab down`")
    return 0


def _rollback(rack: RackSpec, lab: paths.LabPaths, started: list[str]) -> None:
    for name in reversed(started):
        if name == "network":
            stop(lab.pidfile(ntp.DAEMON))
            stop(lab.pidfile(aptcache.DAEMON))
            debs_serve.stop_serving(lab)
            net.delete_bridge(rack.bridge)
        else:
            stop(lab.pidfile(name))


def down(rack: RackSpec, lab: paths.LabPaths) -> int:
    """Stop simulators (MAAS first: it boots hosts), hosts in parallel, the apt cache, then
    remove this lab's network. Keeps keys, CA, credentials and the apt cache's files."""
    hosts.require_root("racksmith lab down")
    problems: list[str] = []

    def attempt(label: str, func: Callable[[], object]) -> None:
        try:
            if func():
                print(f"[lab] stopped {label}")
        except (LabError, OSError) as exc:
            problems.append(f"{label}: {exc}")

    for daemon in reversed(daemons(rack, lab)):
        attempt(f"{daemon.name} simulator", lambda d=daemon: stop(lab.pidfile(d.name)))
    names = [h.name for h in hosts.list_hosts(lab)]
    if lab.machines.is_dir():
        names += [d.name for d in lab.machines.iterdir() if d.is_dir() and d.name not in names]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for name in names:
            pool.submit(attempt, f"test host {name}", lambda n=name: hosts.stop_host(lab, n))
    attempt("VMs", lambda: ", ".join(vm.stop_all(lab)))
    attempt(aptcache.DAEMON, lambda: stop(lab.pidfile(aptcache.DAEMON)))
    attempt("LAB STAND-IN apt repository", lambda: debs_serve.stop_serving(lab))
    attempt("NTP server", lambda: stop(lab.pidfile(ntp.DAEMON)))
    attempt("stale network", lambda: clean_stale(rack, lab))
    attempt(
        f"bridge {rack.bridge}",
        lambda: net.link_exists(rack.bridge) and (net.delete_bridge(rack.bridge) or True),
    )
    for problem in problems:
        print(f"racksmith lab down: {problem}", file=sys.stderr)
    return 1 if problems else 0


def status_report(rack: RackSpec, lab: paths.LabPaths) -> dict:
    """What runs, as data (``lab status --json``); the text view is rendered from this."""
    img = image.image_path()
    report: dict = {
        "rack": str(rack.path),
        "lab_dir": str(lab.root),
        "bridge": {
            "name": rack.bridge,
            "address": f"{rack.controller_ip}/{rack.prefixlen}",
            "up": net.link_exists(rack.bridge),
        },
        "image": {
            "path": str(img),
            "cached": img.exists(),
            "mib": img.stat().st_size >> 20 if img.exists() else 0,
        },
        "daemons": [],
        "hosts": [],
    }
    proxy = Daemon(aptcache.DAEMON, "", (), ((rack.controller_ip, rack.apt_proxy_port),))
    clock = Daemon(ntp.DAEMON, "", (), ((rack.controller_ip, ntp.PORT),))
    for daemon in [proxy, clock, *daemons(rack, lab)]:
        record = running(lab.pidfile(daemon.name))
        serving = _ntp_answers(rack) if daemon is clock and record else _serving(record, daemon)
        report["daemons"].append(
            {
                "name": daemon.name,
                "pid": record.pid if record else None,
                "serving": serving,
                "endpoints": [f"{h}:{p}" for h, p in daemon.endpoints],
                "log": str(lab.logfile(daemon.name)),
            }
        )
    for host in hosts.list_hosts(lab):
        report["hosts"].append(
            {
                "name": host.name,
                "ip": host.ip,
                "mac": host.mac,
                "running": hosts.host_running(lab, host.name),
            }
        )
    return report


def _ntp_answers(rack: RackSpec) -> bool:
    try:
        ntp.query(rack.controller_ip, timeout=0.5)
    except LabError:
        return False
    return True


def render_status(report: dict) -> str:
    image_state = (
        f"cached, {report['image']['mib']} MiB" if report["image"]["cached"] else "not built"
    )
    lines = [
        f"rack     {report['rack']}",
        f"lab dir  {report['lab_dir']}",
        f"bridge   {report['bridge']['name']} {report['bridge']['address']}"
        f" {'up' if report['bridge']['up'] else 'absent'}",
        f"image    {report['image']['path']} {image_state}",
        "",
        f"{'DAEMON':14} {'PID':>7}  {'STATE':8} ENDPOINTS",
    ]
    for d in report["daemons"]:
        state = "serving" if d["serving"] else ("starting" if d["pid"] else "stopped")
        endpoints = ", ".join(d["endpoints"][:3]) + (" ..." if len(d["endpoints"]) > 3 else "")
        lines.append(f"{d['name']:14} {d['pid'] or '-':>7}  {state:8} {endpoints}")
    lines += ["", f"{'HOST':14} {'IP':16} {'MAC':18} STATE"]
    for h in report["hosts"]:
        state = "running" if h["running"] else "stopped"
        lines.append(f"{h['name']:14} {h['ip']:16} {h['mac'] or '-':18} {state}")
    if not report["hosts"]:
        lines.append("(no test hosts; MAAS boots them on deploy, molecule with `lab host up`)")
    return "\n".join(lines)


def _main(args: argparse.Namespace) -> int:
    try:
        rack = load(paths.rack_file(args.rack))
        lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
        if args.lab_command == "up":
            return up(rack, lab)
        if args.lab_command == "down":
            return down(rack, lab)
        report = status_report(rack, lab)
        print(json.dumps(report, indent=2) if args.json else render_status(report))
        return 0
    except (LabError, SpecError) as exc:
        print(f"racksmith lab {args.lab_command}: {exc}", file=sys.stderr)
        return 1


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    paths.add_lab_arguments(parser)
    if name == "status":
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=_main, lab_command=name)
