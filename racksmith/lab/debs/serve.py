"""Serve the LAB STAND-IN repositories over HTTP on the lab bridge, as a site mirror would.

Hosts reach only the bridge. apt-cacher-ng there refuses anything but the Debian archive
(``ForceManaged``), so the repositories get their own small HTTP server on the controller
address, port :data:`PORT`; hosts reach it directly (apt's per-host ``DIRECT`` proxy setting,
``base_apt_proxy_direct_hosts`` in the base role). The daemon is recorded like the lab's
others (``run/labrepo.pid``), serves one immutable build directory and only GET/HEAD.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from racksmith.lab.debs.build import KEY_NAME, LabRepo, ensure_built
from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths
from racksmith.lab.proc import alive, log_tail, running, start_daemon, stop

DAEMON = "labrepo"
PORT = 3143


def base_url(bind: str, port: int = PORT) -> str:
    return f"http://{bind}:{port}"


def _answers(url: str, timeout: float = 0.5) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 (http on the bridge)
            return reply.status == 200
    except (OSError, urllib.error.URLError):
        return False


def ensure_running(
    lab: LabPaths, *, bind: str, port: int = PORT, timeout: float = 10.0
) -> tuple[LabRepo, str]:
    """Build (or reuse) the repository and serve it on ``bind:port``; returns it and its URL.

    A running server for an older build is replaced, so hosts never see a stale repository.
    """
    repo = ensure_built()
    url = base_url(bind, port)
    probe = f"{url}/{repo.repos[0]}/{KEY_NAME}"
    pidfile = lab.pidfile(DAEMON)
    record = running(pidfile)
    if record is not None:
        if str(repo.root) in record.argv and _answers(probe):
            return repo, url
        stop(pidfile)
    logfile = lab.logfile(DAEMON)
    record = start_daemon(
        [sys.executable, "-m", "racksmith.lab.debs", "serve", "--listen", bind,
         "--port", str(port), "--dir", str(repo.root)],
        pidfile=pidfile, logfile=logfile,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not _answers(probe):
        if not alive(record):
            raise LabError(f"the lab repository server exited; log tail:\n{log_tail(logfile)}")
        if time.monotonic() > deadline:
            stop(pidfile)
            raise LabError(
                f"the lab repository server did not answer on {url} within {timeout:.0f}s;"
                f" log tail:\n{log_tail(logfile)}"
            )
        time.sleep(0.1)
    return repo, url


def stop_serving(lab: LabPaths) -> bool:
    return stop(lab.pidfile(DAEMON))


class _Handler(SimpleHTTPRequestHandler):
    def list_directory(self, path):  # no directory listings: apt never needs them
        self.send_error(404, "LAB STAND-IN repository: no directory listings")
        return None

    def log_message(self, format: str, *args) -> None:
        sys.stdout.write(f"{self.address_string()} {format % args}\n")
        sys.stdout.flush()


def serve(listen: str, port: int, directory: Path) -> None:
    if not (directory / ".ready").exists():
        raise LabError(f"{directory} is not a finished lab repository build")
    handler = functools.partial(_Handler, directory=str(directory))
    with ThreadingHTTPServer((listen, port), handler) as server:
        print(f"racksmith lab repository: serving {directory} on {base_url(listen, port)}",
              flush=True)  # fmt: skip
        server.serve_forever()


def main(argv: Sequence[str] | None = None) -> int:
    from racksmith.lab import paths, spec

    parser = argparse.ArgumentParser(prog="python -m racksmith.lab.debs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build the stand-in repository (cached) and print its path")
    run = sub.add_parser("serve", help="serve a built repository in the foreground")
    run.add_argument("--listen", required=True)
    run.add_argument("--port", type=int, default=PORT)
    run.add_argument("--dir", type=Path, required=True)
    for name, text in (("up", "build and serve it on this lab's bridge (idempotent)"),
                       ("down", "stop this lab's repository server")):  # fmt: skip
        cmd = sub.add_parser(name, help=text)
        paths.add_lab_arguments(cmd)
        cmd.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(ensure_built().root)
        elif args.command == "serve":
            serve(args.listen, args.port, args.dir)
        else:
            lab = LabPaths(paths.lab_dir(args.lab_dir))
            if args.command == "down":
                print("stopped" if stop_serving(lab) else "not running")
            else:
                rack = spec.load(paths.rack_file(args.rack))
                repo, url = ensure_running(lab, bind=rack.controller_ip, port=args.port)
                print(f"{url} ({repo.root})")
    except (LabError, spec.SpecError, OSError) as exc:
        print(f"racksmith lab repository: {exc}", file=sys.stderr)
        return 1
    return 0
