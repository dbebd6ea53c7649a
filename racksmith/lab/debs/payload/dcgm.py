#!/usr/bin/python3
"""LAB STAND-IN DCGM programs: ``nv-hostengine``, ``dcgmi`` and ``dcgm-exporter``.

One file, installed under each name (the program is chosen by the name it runs as). A lab
host has no GPU, so the host engine serves no GPU data; what is real is the wiring the roles
set up: the engine listens where DCGM's does (127.0.0.1:5555), ``dcgmi`` and the exporter
fail as the real ones do when it is not running, and the exporter serves ``/metrics`` with a
``# HELP``/``# TYPE`` pair for every field of its collectors file (which it parses and refuses,
naming the line, when malformed). Every line any of them prints carries ``LAB STAND-IN``.
"""

from __future__ import annotations

import os
import socket
import socketserver
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

try:
    from racksmith_standin import TAG, Parser, package_version, say  # on the lab host
except ImportError:  # in the checkout (unit tests)
    from racksmith.lab.debs.payload.racksmith_standin import (
        TAG,
        Parser,
        package_version,
        say,
    )

# the version of the package each program came with (DCGM 3 or 4, the exporter)
DCGM_VERSION = package_version("4.5.2")
EXPORTER_VERSION = package_version("4.8.1")
ENGINE_PORT = 5555
FIELD_TYPES = ("gauge", "counter", "label")


# --- host engine ---------------------------------------------------------------------------


class _EngineHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.rfile.readline(256)
        self.wfile.write(f"{TAG} nv-hostengine {DCGM_VERSION} gpus=0\n".encode())


def hostengine(argv: list[str]) -> int:
    parser = Parser(prog="nv-hostengine")
    parser.add_argument("-n", "--no-daemon", action="store_true")
    parser.add_argument("-b", "--bind-interface", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=ENGINE_PORT)
    parser.add_argument("--service-account", default="")
    parser.add_argument("--log-level", default="")
    parser.add_argument("-f", "--log-filename", default="")
    args = parser.parse_args(argv)
    if not args.no_daemon:
        say("the stand-in runs in the foreground only (-n); systemd runs it that way", sys.stderr)
        return 1
    socketserver.TCPServer.allow_reuse_address = True
    try:
        server = socketserver.ThreadingTCPServer((args.bind_interface, args.port), _EngineHandler)
    except OSError as exc:
        say(f"Err: Failed to start DCGM Server: {exc}", sys.stderr)
        return 1
    say(f"Started host engine version {DCGM_VERSION} using port number: {args.port}")
    say("no NVIDIA GPU on this lab host: the engine serves no GPU data")
    server.serve_forever()
    return 0


def query_engine(host: str, port: int, timeout: float = 2.0) -> str:
    """The engine's hello line; OSError when it is not running."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.sendall(b"hello\n")
        return conn.makefile().readline().strip()


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host:
        return text or "localhost", ENGINE_PORT
    return host, int(port)


# --- dcgmi ------------------------------------------------------------------------------------


def dcgmi(argv: list[str]) -> int:
    parser = Parser(prog="dcgmi")
    parser.add_argument("-v", "--version", action="store_true")
    sub = parser.add_subparsers(dest="command")
    disc = sub.add_parser("discovery")
    disc.add_argument("-l", "--list", action="store_true")
    disc.add_argument("--host", default="localhost")
    args = parser.parse_args(argv)
    if args.version:
        say(f"dcgmi  version: {DCGM_VERSION}")
        return 0
    if args.command != "discovery" or not args.list:
        say("the stand-in implements `dcgmi -v` and `dcgmi discovery -l` only", sys.stderr)
        return 2
    host, port = _host_port(args.host)
    try:
        query_engine(host, port)
    except OSError:
        say(f"Error: unable to establish a connection to the specified host: {args.host}")
        say("Error: Unable to connect to host engine. Host engine connection invalid/disconnected.")
        return 1
    say("0 GPUs found.")
    say("no NVIDIA GPU on this lab host")
    return 0


# --- dcgm-exporter ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    help: str


class CollectorsError(ValueError):
    pass


def parse_collectors(text: str, source: str) -> list[Field]:
    """dcgm-exporter's collectors CSV: ``DCGM_FI_NAME, type, help``; ``#`` comments."""
    fields = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not parts[0].startswith(("DCGM_FI_", "DCGM_EXP_")):
            raise CollectorsError(f"{source}:{number}: expected 'DCGM_FI_NAME, type, help': {raw}")
        if parts[1] not in FIELD_TYPES:
            raise CollectorsError(
                f"{source}:{number}: type {parts[1]!r} is not one of {FIELD_TYPES}"
            )
        fields.append(Field(parts[0], parts[1], parts[2]))
    if not fields:
        raise CollectorsError(f"{source}: no fields")
    return fields


def render_metrics(fields: list[Field], engine: str) -> str:
    lines = [
        f"# HELP racksmith_lab_standin {TAG}: this exporter serves no GPU data ({engine})",
        "# TYPE racksmith_lab_standin gauge",
        f'racksmith_lab_standin{{component="dcgm-exporter",version="{EXPORTER_VERSION}"}} 1',
    ]
    for field in fields:
        kind = "gauge" if field.kind == "label" else field.kind
        lines.append(f"# HELP {field.name} {field.help} ({TAG}: no GPU)")
        lines.append(f"# TYPE {field.name} {kind}")
    return "\n".join(lines) + "\n"


def exporter(argv: list[str]) -> int:
    parser = Parser(prog="dcgm-exporter")
    parser.add_argument("-f", "--collectors", default="/etc/dcgm-exporter/default-counters.csv")
    parser.add_argument("-a", "--address", default=":9400")
    parser.add_argument("-r", "--remote-hostengine-info", default="localhost:5555")
    args = parser.parse_args(argv)
    try:
        fields = parse_collectors(Path(args.collectors).read_text(), args.collectors)
    except (OSError, CollectorsError) as exc:
        say(f'level=fatal msg="cannot read collectors: {exc}"', sys.stderr)
        return 1
    engine_host, engine_port = _host_port(args.remote_hostengine_info)
    bind, _, port = args.address.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self._send(404, f"{TAG}: not found\n")
                return
            try:
                hello = query_engine(engine_host, engine_port)
            except OSError as exc:
                self._send(
                    503,
                    f"{TAG}: cannot reach nv-hostengine at {engine_host}:{engine_port}: {exc}\n",
                )
                return
            self._send(200, render_metrics(fields, hello))

        def _send(self, code: int, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:
            say(f"{self.address_string()} {format % args}")

    try:
        server = ThreadingHTTPServer((bind or "0.0.0.0", int(port)), Handler)  # noqa: S104
    except (OSError, ValueError) as exc:
        say(f'level=fatal msg="cannot listen on {args.address}: {exc}"', sys.stderr)
        return 1
    say(f'level=info msg="Starting webserver" address={args.address} fields={len(fields)}')
    server.serve_forever()
    return 0


PROGRAMS = {"nv-hostengine": hostengine, "dcgmi": dcgmi, "dcgm-exporter": exporter}


def main() -> int:
    name = os.path.basename(sys.argv[0])
    program = PROGRAMS.get(name)
    if program is None:
        say(f"run as one of {sorted(PROGRAMS)}, not {name}", sys.stderr)
        return 2
    return program(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
