"""``racksmith lab maas``: a MAAS 3.5 API simulator faithful enough for python-libmaas.

Built from ``maas-api.md``: OAuth PLAINTEXT with the 300 s window and nonce check, ``op``
dispatch, form and multipart bodies, the status state machine on an accelerated clock with
MAAS's 409/400/404/401 bodies, ``version/`` and ``describe/``, events, block devices in a new
random order on every commissioning, and injectable faults. With ``--rack`` it knows the lab's
servers by PXE MAC and boots the matching nspawn host when it deploys one (see labhosts.py).

The first line of output is the admin API key (``consumer:token:secret``); when the key is
adopted from a file (the lab's ``secrets/maas.env``), it names that file instead, so the
daemon's log never holds a copy. State (machines, keys) is kept under ``--lab-dir``/maas/ so
a restart finds the same region.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import App, SimHTTPServer
from racksmith.lab.maassim.state import Store

__all__ = ["configure", "main"]


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"--listen {text!r}: expected HOST:PORT")
    return host or "127.0.0.1", int(port)


def _boot_concurrency(text: str) -> int | None:
    from racksmith.lab.maassim.labhosts import parse_boot_concurrency

    try:
        return parse_boot_concurrency(text, "--boot-concurrency")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument(
        "--listen",
        type=_listen,
        default=("127.0.0.1", 5240),
        metavar="HOST:PORT",
        help="address to serve on (default 127.0.0.1:5240)",
    )
    parser.add_argument(
        "--machines",
        type=int,
        default=0,
        metavar="N",
        help="enlist N commissioned machines ready to deploy (sim-0001...)",
    )
    parser.add_argument(
        "--rack",
        type=Path,
        metavar="FILE",
        help="rack spec: know its servers by PXE MAC, boot their lab hosts on deploy",
    )
    parser.add_argument(
        "--lab-dir",
        type=Path,
        metavar="DIR",
        help="lab state dir; the simulator keeps DIR/maas/state.json "
        "(default with --rack: $RACKSMITH_LAB_DIR or /var/lib/racksmith/lab)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="state file (overrides --lab-dir); without either, state is in memory",
    )
    parser.add_argument(
        "--api-key-file",
        type=Path,
        metavar="FILE",
        help="adopt the admin key from FILE (MAAS_API_KEY=... or the bare key); "
        "default with a lab dir: DIR/secrets/maas.env when it exists",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=60.0,
        help="clock acceleration: MAAS minutes pass this many times faster (default 60)",
    )
    parser.add_argument(
        "--boot-concurrency",
        type=_boot_concurrency,
        metavar="N",
        help="with --rack: lab hosts booting at once (default: $RACKSMITH_LAB_BOOT_CONCURRENCY,"
        " else 2 per CPU, at least 2; 'auto' for that sizing)",
    )
    parser.add_argument("--seed", type=int, help="random seed (disk order, system ids)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    parser.set_defaults(func=main)


def build_store(args: argparse.Namespace) -> Store:
    from racksmith.lab import paths

    rack = hosts = None
    lab_dir = args.lab_dir
    if args.rack is not None:
        from racksmith.errors import UsageError
        from racksmith.lab import spec
        from racksmith.lab.maassim.labhosts import BOOT_CONCURRENCY_ENV, LabHosts

        rack = spec.load(args.rack)
        lab_dir = paths.lab_dir(lab_dir)
        try:
            hosts = LabHosts(rack, lab_dir, concurrency=getattr(args, "boot_concurrency", None))
        except ValueError as exc:  # $RACKSMITH_LAB_BOOT_CONCURRENCY is not a slot count
            raise UsageError(f"lab maas: {exc}") from None
        logging.getLogger("racksmith.lab.maassim").info(
            "lab hosts boot %d at a time (%s overrides)", hosts.concurrency, BOOT_CONCURRENCY_ENV
        )
    state = args.state or (paths.LabPaths(lab_dir).maas / "state.json" if lab_dir else None)
    store = Store(clock=SimClock(args.speed), path=state, rack=rack, hosts=hosts, seed=args.seed)
    key_file = args.api_key_file
    if key_file is None and lab_dir is not None:
        candidate = paths.LabPaths(lab_dir).secrets / "maas.env"
        key_file = candidate if candidate.exists() else None
    if key_file is not None:
        store.set_admin_key(_read_key(key_file))
        store.key_source = key_file
    if args.machines:
        with store.lock:
            store.enlist_ready(args.machines)
    return store


def _read_key(path: Path) -> str:
    from racksmith.secrets import read_env_file

    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise SystemExit(f"cannot read the API key file {path}: {exc.strerror}") from None
    key = read_env_file(path).get("MAAS_API_KEY") if "=" in text else text
    if not key:
        raise SystemExit(f"{path} has no MAAS_API_KEY")
    return key


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    store = build_store(args)
    try:
        server = SimHTTPServer(args.listen, App(store))
    except OSError as exc:
        print(
            f"cannot listen on {args.listen[0]}:{args.listen[1]}: {exc.strerror}", file=sys.stderr
        )
        return 1
    # The key on the first line, as callers expect, unless it came from a file: the lab keeps
    # it there (mode 0600) and this output goes to a log, which must not hold a second copy.
    source = store.key_source
    print(f"API key: MAAS_API_KEY in {source}" if source else store.admin_key(), flush=True)
    print(
        f"MAAS simulator at {server.url} (clock x{args.speed:g}, {len(store.machines)} machines, "
        f"state {store.path or 'in memory'})",
        flush=True,
    )
    store.save()
    store.start_saver()
    store.resume_hosts()
    stop = threading.Event()

    def _term(signum, frame) -> None:
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _term)
    signal.signal(signal.SIGINT, _term)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        store.close()
    return 0
