"""Serve many emulated iDRACs from one process: one listening socket per BMC, one acceptor thread.

A rack of 256 BMCs must fit on a 2-core CI runner, so there is no process (and no server thread)
per BMC: a single selector thread accepts on every port and hands each connection to a short-lived
thread that speaks HTTP/1.1 keep-alive (TLS is negotiated in that thread, so a stalled client
cannot block other connections). Latency and hangs are waits on an event that ``stop()`` sets,
so shutdown is prompt even with hung connections.

``create_farm`` wires everything: sushy-static upstream -> mockup cache -> model variants ->
one :class:`~racksmith.lab.bmc.behaviour.EmulatedBmc` per server -> sockets.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import selectors
import socket
import ssl
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timezone
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from racksmith.lab import creds
from racksmith.lab.bmc import captures, tree
from racksmith.lab.bmc.behaviour import EmulatedBmc, Faults, Settings
from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths
from racksmith.lab.spec import Server
from racksmith.redfish.targets import is_ip

log = logging.getLogger(__name__)

HANG_SECONDS = 3600.0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "racksmith-idrac-emulator"
    sys_version = ""

    def __init__(self, request: Any, client_address: Any, farm: BmcFarm, bmc: EmulatedBmc) -> None:
        self.farm = farm
        self.bmc = bmc
        super().__init__(request, client_address, farm)

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = do_GET

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        reply = self.bmc.handle(self.command, self.path, dict(self.headers.items()), body)
        if reply.action == "hang":
            self.farm.stopped.wait(HANG_SECONDS)
            self.close_connection = True
            return
        if reply.delay > 0 and self.farm.stopped.wait(reply.delay):
            self.close_connection = True
            return
        if reply.action == "reset":
            # SO_LINGER 0 makes close() send RST: the client sees "connection reset by peer".
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.close()
            return
        self.send_response(reply.status)
        headers = {"OData-Version": "4.0", "Content-Length": str(len(reply.body)), **reply.headers}
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The Date header comes from the BMC's own (possibly skewed) clock, as on real iDRACs.
        return email.utils.format_datetime(self.bmc.now().astimezone(timezone.utc), usegmt=True)

    def log_message(self, format: str, *args: Any) -> None:  # method, path and status only
        log.debug("bmc %s: " + format, self.bmc.server.name, *args)

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()


@dataclass(frozen=True)
class Endpoint:
    name: str
    index: int
    model: str
    port: int
    faults: tuple[str, ...]
    listening: bool


class BmcFarm:
    """Many EmulatedBmc objects behind their own ports, in this process."""

    def __init__(
        self,
        bmcs: Sequence[EmulatedBmc],
        ports: Sequence[int],
        *,
        listen: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
        idle_timeout: float = 60.0,
        upstream: tree.Upstreams | None = None,
    ) -> None:
        if len(bmcs) != len(ports):
            raise ValueError("one port per BMC")
        self.bmcs = list(bmcs)
        self.listen = listen
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self.idle_timeout = idle_timeout
        self.stopped = threading.Event()
        self._ports = list(ports)
        self._upstream = upstream
        self._selector = selectors.DefaultSelector()
        self._sockets: list[socket.socket] = []
        self._thread: threading.Thread | None = None

    def start(self) -> BmcFarm:
        try:
            for bmc, port in zip(self.bmcs, self._ports, strict=True):
                if bmc.faults.unreachable:
                    bmc.port = port or _closed_port(self.listen)
                    continue
                sock = socket.create_server((self.listen, port), backlog=256)
                sock.setblocking(False)
                self._selector.register(sock, selectors.EVENT_READ, bmc)
                self._sockets.append(sock)
                bmc.port = sock.getsockname()[1]
        except OSError:
            self.stop()
            raise
        self._thread = threading.Thread(target=self._accept_loop, name="bmc-accept", daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        while not self.stopped.is_set():
            for key, _ in self._selector.select(timeout=0.2):
                try:
                    conn, addr = key.fileobj.accept()  # type: ignore[union-attr]
                except (BlockingIOError, OSError):
                    continue
                threading.Thread(
                    target=self._serve, args=(conn, addr, key.data), daemon=True
                ).start()

    def _serve(self, conn: socket.socket, addr: Any, bmc: EmulatedBmc) -> None:
        try:
            conn.setblocking(True)
            conn.settimeout(self.idle_timeout)
            # Headers and body go out in separate writes; without NODELAY, Nagle plus the
            # client's delayed ACK adds ~40 ms to every answer.
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            _Handler(conn, addr, self, bmc)
        except (OSError, ssl.SSLError) as exc:
            log.debug("bmc %s: connection from %s ended: %s", bmc.server.name, addr, exc)
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def stop(self) -> None:
        self.stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for sock in self._sockets:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(sock)
            sock.close()
        self._sockets.clear()
        self._selector.close()
        if self._upstream is not None:
            self._upstream.close()

    def __enter__(self) -> BmcFarm:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def address(self, bmc: EmulatedBmc) -> str:
        return f"{self.listen}:{bmc.port}"

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint(
                b.server.name,
                b.server.index,
                b.variant.name,
                int(b.port or 0),
                tuple(sorted(b.server.faults)),
                not b.faults.unreachable,
            )
            for b in self.bmcs
        ]


def _closed_port(host: str) -> int:
    """A port nothing listens on (bound, then released) for an 'unreachable' BMC in tests."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def lab_credentials(lab_dir: Path, maas_listen: str = "127.0.0.1:5240") -> tuple[str, str]:
    """The lab's BMC user and password from ``secrets/bmc.env``, generated (as ``lab up`` does,
    with the lab's own ``racksmith.lab.creds``) when missing, so the emulation runs standalone."""
    lab = LabPaths(lab_dir)
    env_file = lab.secrets / "bmc.env"
    if not env_file.exists():
        creds.ensure_credentials(lab, maas_listen=maas_listen)
    values = creds.read_env(env_file)
    user, password = values.get("RACKSMITH_BMC_USERNAME"), values.get("RACKSMITH_BMC_PASSWORD")
    if not user or not password:
        raise LabError(f"{env_file}: needs RACKSMITH_BMC_USERNAME and RACKSMITH_BMC_PASSWORD")
    return user, password


def lab_tls_context(lab_dir: Path, listen: str = "127.0.0.1") -> ssl.SSLContext:
    """A server context whose certificate the lab CA signed (CA created when missing)."""
    lab = LabPaths(lab_dir)
    creds.ensure_ca(lab)
    out = lab_dir / "bmc" / "tls"
    hosts = dict.fromkeys([listen, "127.0.0.1", "localhost"])
    ips = [h for h in hosts if is_ip(h)]
    names = [h for h in hosts if not is_ip(h)]
    cert, key = out / "server.pem", out / "server-key.pem"
    creds.issue_server_cert(lab, names=names, ips=ips, cert_out=cert, key_out=key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


def synthesized_servers(count: int, model: str, base_port: int) -> list[Server]:
    """``count`` healthy servers with distinct identities (benchmarks, ``--count``)."""
    return [
        Server(index=i, name=f"bmc{i:04d}", model=model, ip="127.0.0.1", bmc_port=base_port + i - 1)
        for i in range(1, count + 1)
    ]


def create_farm(
    servers: Sequence[Server],
    *,
    username: str,
    password: str,
    ports: Sequence[int] | None = None,
    listen: str = "127.0.0.1",
    tls: ssl.SSLContext | None = None,
    settings: Settings | None = None,
    faults: dict[str, Faults] | None = None,
) -> BmcFarm:
    """Everything one ``racksmith lab bmc`` serves; ``faults`` overrides a server's rack faults
    by name."""
    upstream = tree.Upstreams()
    variants: dict[str, tree.Variant] = {}
    bmcs = []
    for server in servers:
        if server.model not in variants:
            variants[server.model] = captures.variant(server.model, upstream)
        bmcs.append(
            EmulatedBmc(
                server,
                variants[server.model],
                username=username,
                password=password,
                settings=settings,
                faults=(faults or {}).get(server.name),
            )
        )
    return BmcFarm(
        bmcs,
        list(ports) if ports is not None else [s.bmc_port for s in servers],
        listen=listen,
        tls=tls,
        upstream=upstream,
    )
