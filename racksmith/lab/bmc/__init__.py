"""``racksmith lab bmc``: serve emulated iDRACs (one process, one loopback port per BMC).

With ``--rack`` every server of the rack file gets a BMC with that server's identity, model
and faults, on ``bmc.base_port + index - 1`` (or ``--base-port + position``). With
``--count N`` there is no rack: N healthy BMCs with synthesized identities (benchmarks).

Credentials are read from ``$LAB_DIR/secrets/bmc.env`` and TLS uses a certificate signed by
``$LAB_DIR/ca``; both are created when missing. Nothing secret is taken from the command line.
The command writes ``$LAB_DIR/bmc/state.json`` (pid, scheme, ports, which ports listen) once
every port is bound, and runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from racksmith.lab import paths, spec
from racksmith.lab.bmc.behaviour import Latency, Settings
from racksmith.lab.bmc.server import (
    create_farm,
    lab_credentials,
    lab_tls_context,
    synthesized_servers,
)
from racksmith.lab.bmc.tree import MODELS
from racksmith.lab.errors import LabError

log = logging.getLogger("racksmith.lab.bmc")


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "--rack",
        type=Path,
        default=Path(os.environ.get("RACKSMITH_RACK") or spec.DEFAULT_SPEC),
        help="rack file (default: $RACKSMITH_RACK or inventory/lab/rack.yml)",
    )
    parser.add_argument(
        "--lab-dir",
        type=Path,
        default=None,
        help=f"lab state directory (default: $RACKSMITH_LAB_DIR or {paths.DEFAULT_LAB_DIR})",
    )
    parser.add_argument(
        "--count", type=int, help="serve N synthesized healthy BMCs instead of the rack's servers"
    )
    parser.add_argument(
        "--model",
        choices=MODELS,
        default="hgx-h200-8gpu",
        help="model for --count (default %(default)s)",
    )
    parser.add_argument(
        "--base-port",
        type=int,
        help="first port (default: the rack's bmc.base_port, or 18443 with --count); 0: any free "
        "ports, see state.json",
    )
    parser.add_argument(
        "--listen", help="address to listen on (default: the rack's bmc.listen, 127.0.0.1)"
    )
    parser.add_argument(
        "--scheme", choices=("http", "https"), help="default: the rack's bmc.scheme (https)"
    )
    parser.add_argument(
        "--latency",
        default="0",
        type=Latency.parse,
        help="per-request latency: seconds (0.5), a range (0.1-0.3), or idrac9/idrac8 (default 0)",
    )
    parser.add_argument(
        "--session-limit", type=int, default=8, help="live sessions before 503 RAC0218 (default 8)"
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=1800.0,
        help="idle session expiry in seconds (default 1800)",
    )
    parser.add_argument(
        "--power-delay",
        type=float,
        default=2.0,
        help="seconds a power transition takes (default 2)",
    )
    parser.add_argument(
        "--initial-power",
        choices=("on", "off"),
        default="off",
        help="power state at start (default off)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every request (method, path, status)"
    )
    parser.set_defaults(func=run)


def _servers(args: argparse.Namespace) -> tuple[list[spec.Server], list[int], str, str, str]:
    """Servers, their ports, listen address, scheme and the MAAS listen address (for secrets)."""
    if args.count:
        if args.count < 1:
            raise SystemExit("--count must be at least 1")
        base = 18443 if args.base_port is None else args.base_port
        servers = synthesized_servers(args.count, args.model, base or 1)
        ports = [0] * len(servers) if base == 0 else [s.bmc_port for s in servers]
        return servers, ports, args.listen or "127.0.0.1", args.scheme or "https", "127.0.0.1:5240"
    try:
        rack = spec.load(args.rack)
    except spec.SpecError as exc:
        raise SystemExit(str(exc)) from None
    for server in rack.servers:
        if server.model not in MODELS:
            raise SystemExit(
                f"{rack.path}: server {server.name} has model {server.model!r}; the BMC "
                f"emulation knows {', '.join(MODELS)}"
            )
    if args.base_port == 0:
        ports = [0] * len(rack.servers)
    elif args.base_port:
        ports = [args.base_port + i for i in range(len(rack.servers))]
    else:
        ports = [s.bmc_port for s in rack.servers]
    listen, scheme = args.listen or rack.bmc_listen, args.scheme or rack.bmc_scheme
    return list(rack.servers), ports, listen, scheme, rack.maas_listen


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    lab_dir = paths.lab_dir(args.lab_dir)
    servers, ports, listen, scheme, maas_listen = _servers(args)
    try:
        username, password = lab_credentials(lab_dir, maas_listen)
        tls = lab_tls_context(lab_dir, listen) if scheme == "https" else None
    except LabError as exc:
        raise SystemExit(str(exc)) from None
    settings = Settings(
        latency=args.latency,
        session_limit=args.session_limit,
        session_timeout=args.session_timeout,
        power_delay=args.power_delay,
        initial_power=args.initial_power.capitalize(),
    )
    farm = create_farm(
        servers,
        username=username,
        password=password,
        ports=ports,
        listen=listen,
        tls=tls,
        settings=settings,
    )
    try:
        farm.start()
    except OSError as exc:
        raise SystemExit(f"cannot listen on {listen} ports {ports[0]}-{ports[-1]}: {exc}") from None
    state_file = lab_dir / "bmc" / "state.json"
    endpoints = farm.endpoints()
    state = {
        "pid": os.getpid(),
        "scheme": scheme,
        "listen": listen,
        "started": time.time(),
        "bmcs": [e.__dict__ for e in endpoints],
    }
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=2) + "\n")
    listening = [e for e in endpoints if e.listening]
    log.info(
        "serving %d emulated iDRACs over %s on %s ports %s (%d refuse connections: "
        "bmc_unreachable)",
        len(listening),
        scheme,
        listen,
        ",".join(str(e.port) for e in listening),
        len(endpoints) - len(listening),
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    log.info("stopping")
    farm.stop()
    state_file.unlink(missing_ok=True)
    return 0
