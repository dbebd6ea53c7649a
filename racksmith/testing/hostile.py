"""A hostile HTTP endpoint: what a half-broken BMC, a wedged MAAS or a stray web server does.

racksmith talks to hundreds of endpoints it does not control, with a password that opens all
of them. Every client (Redfish, MAAS, the inventory plugins, the CLIs) is tested against this
server, so that each promise in ``docs/security.md`` (deadlines hold, reads are capped, errors
are typed and redacted) is proven against a real socket, not a mocked transport.

It speaks raw HTTP/1.1 over a plain TCP socket so it can misbehave at any byte: hold a
connection without answering, trickle the status line and headers, trickle the body, reset
mid-body, send far more than any sane answer, or answer with the wrong thing entirely.

Modes (:class:`Mode`):

========== ===================================================================================
silent     accept, read the request, never answer (until the server stops)
trickle_headers  status line and then one header byte per ``interval``
trickle_body     headers announcing a body, then one body byte per ``interval``
trickle_tls      (for an https client) a TLS record header announcing a long handshake
                 message, then one byte per ``interval``: the handshake never completes
reset      headers and half the announced body, then a TCP reset
huge       200 with ``huge_bytes`` of JSON-looking bytes and no Content-Length
wrong_shape  200, valid JSON of a shape no client expects (``body`` overrides it)
html       200 with an HTML page (a captive portal, a login page, the wrong port)
error500   500 with an HTML body
echo       ``status`` (401 by default) whose JSON body echoes the whole request back,
           headers and body, the way some BMCs put the request into their error message
routes     a scripted service: each request path is answered by the :class:`Route` of
           ``routes`` whose key matches it (exact path, else the longest prefix; the query
           counts when the key has one), else 404. A compromised BMC that hands out links to
           another origin (``@odata.id``, ``nextLink``, a session ``Location``), a MAAS
           whose events answer is unusable, a trickled logout: the body and the headers
           (``{port}`` in them becomes the server's port) are the test's
========== ===================================================================================

Use as a context manager: ``with HostileServer("trickle_body") as srv: srv.url``. A second
server in ``echo`` mode is the "collector" of the origin tests: whatever reaches it is what a
hostile link would have stolen (``collector.seen`` must stay empty).
"""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass, field

MODES = (
    "silent",
    "trickle_headers",
    "trickle_body",
    "trickle_tls",
    "reset",
    "huge",
    "wrong_shape",
    "html",
    "error500",
    "echo",
)
#: ``MODES`` are misbehaviours every client is run against; ``routes`` is scripted per test.
ALL_MODES = (*MODES, "routes")

_HEAD_LIMIT = 1 << 20
WRONG_SHAPE = json.dumps(["not", "what", {"you": "expected"}]).encode()
HTML = b"<!DOCTYPE html><html><head><title>Login</title></head><body>Sign in</body></html>\n"


@dataclass
class Seen:
    """One request as the server received it (the tests check what was sent, e.g. no secret
    went to a host it should not have)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Route:
    """One scripted answer of ``routes`` mode. ``body`` (bytes, or data sent as JSON) and the
    header values may hold ``{port}``, the server's own port; ``trickle`` sends the body one
    byte per ``interval`` (a BMC that trickles its logout)."""

    status: int = 200
    body: bytes | dict | list | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    trickle: bool = False


@dataclass
class HostileServer:
    """A threaded loopback server behaving as ``mode``; ``port=0`` picks a free port."""

    mode: str
    interval: float = 0.2  # seconds between trickled bytes
    trickle_bytes: int = 10_000  # how many bytes a trickle lasts at most
    huge_bytes: int = 64 << 20
    status: int = 401  # for ``echo``
    body: bytes | None = None  # overrides the body of wrong_shape / html / error500
    host: str = "127.0.0.1"
    port: int = 0
    routes: dict[str, Route] = field(default_factory=dict)  # for ``routes``
    tls: ssl.SSLContext | None = None  # a server context: speak HTTPS (an "https BMC")
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in ALL_MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose from {', '.join(ALL_MODES)}")
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._threads: list[threading.Thread] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> HostileServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(64)
        sock.settimeout(0.1)
        self._sock = sock
        self.port = sock.getsockname()[1]
        thread = threading.Thread(target=self._accept, name=f"hostile-{self.mode}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=2)
        if self._sock is not None:
            self._sock.close()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    # -- serving -----------------------------------------------------------------------------

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            if self.tls is not None:  # a failed handshake (plain HTTP sent to us) ends here
                conn = self.tls.wrap_socket(conn, server_side=True)
            if self.mode == "trickle_tls":  # a ClientHello, not an HTTP request
                request: Seen | None = Seen("TLS", "", {}, conn.recv(65536))
            else:
                request = self._read_request(conn)
            if request is None:
                return
            with self._lock:
                self.seen.append(request)
            getattr(self, f"_do_{self.mode}")(conn, request)
        except OSError:
            pass  # the client gave up: that is what these modes are for
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _read_request(self, conn: socket.socket) -> Seen | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk or len(data) > _HEAD_LIMIT:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = [*lines[0].split(" "), "", ""][:2]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        while len(body) < min(length, _HEAD_LIMIT):
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return Seen(method, path, headers, body)

    def _wait(self, seconds: float) -> bool:
        """Sleep; False when the server is stopping."""
        return not self._stop.wait(seconds)

    @staticmethod
    def _head(status: int, reason: str, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def _answer(self, conn: socket.socket, status: int, reason: str, ctype: str, body: bytes):
        headers = {"Content-Type": ctype, "Content-Length": str(len(body)), "Connection": "close"}
        conn.sendall(self._head(status, reason, headers) + body)

    def _do_silent(self, conn: socket.socket, request: Seen) -> None:
        while self._wait(0.05):
            pass

    def _do_trickle_headers(self, conn: socket.socket, request: Seen) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        header = b"X-Slow: " + b"a" * self.trickle_bytes
        for byte in header:
            if not self._wait(self.interval):
                return
            conn.sendall(bytes([byte]))

    def _do_trickle_body(self, conn: socket.socket, request: Seen) -> None:
        body = b'{"Id": "' + b"x" * self.trickle_bytes + b'"}'
        conn.sendall(
            self._head(
                200,
                "OK",
                {"Content-Type": "application/json", "Content-Length": str(len(body))},
            )
        )
        for byte in body:
            if not self._wait(self.interval):
                return
            conn.sendall(bytes([byte]))

    def _do_trickle_tls(self, conn: socket.socket, request: Seen) -> None:
        conn.sendall(b"\x16\x03\x03\x40\x00")  # handshake record, 16 KiB to come
        for _ in range(self.trickle_bytes):
            if not self._wait(self.interval):
                return
            conn.sendall(b"\x02")

    def _do_reset(self, conn: socket.socket, request: Seen) -> None:
        body = b'{"Members": [' + b'{"@odata.id": "/x"},' * 100
        conn.sendall(
            self._head(
                200,
                "OK",
                {"Content-Type": "application/json", "Content-Length": str(2 * len(body))},
            )
            + body
        )
        time.sleep(0.05)
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _do_huge(self, conn: socket.socket, request: Seen) -> None:
        conn.sendall(self._head(200, "OK", {"Content-Type": "application/json"}))
        chunk = b'{"padding": "' + b"x" * 65000 + b'"},\n'
        sent = 0
        conn.sendall(b"[")
        while sent < self.huge_bytes and not self._stop.is_set():
            conn.sendall(chunk)
            sent += len(chunk)

    def _do_wrong_shape(self, conn: socket.socket, request: Seen) -> None:
        self._answer(conn, 200, "OK", "application/json", self.body or WRONG_SHAPE)

    def _do_html(self, conn: socket.socket, request: Seen) -> None:
        self._answer(conn, 200, "OK", "text/html", self.body or HTML)

    def _do_error500(self, conn: socket.socket, request: Seen) -> None:
        body = self.body or b"<html><body><h1>500 Internal Server Error</h1></body></html>"
        self._answer(conn, 500, "Internal Server Error", "text/html", body)

    def _route(self, target: str) -> Route | None:
        path = target.partition("?")[0]
        for key in (target, path):
            if key in self.routes:
                return self.routes[key]
        prefixes = [k for k in self.routes if target.startswith(k) or path.startswith(k)]
        return self.routes[max(prefixes, key=len)] if prefixes else None

    def _do_routes(self, conn: socket.socket, request: Seen) -> None:
        route = self._route(request.path)
        if route is None:
            self._answer(conn, 404, "Not Found", "application/json", b'{"error": "no route"}')
            return
        body = route.body
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        body = body.replace(b"{port}", str(self.port).encode())
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        headers.update({k: v.replace("{port}", str(self.port)) for k, v in route.headers.items()})
        headers["Connection"] = "close"
        conn.sendall(self._head(route.status, "Scripted", headers))
        if not route.trickle:
            conn.sendall(body)
            return
        for byte in body:
            if not self._wait(self.interval):
                return
            conn.sendall(bytes([byte]))

    def _do_echo(self, conn: socket.socket, request: Seen) -> None:
        echoed = "\n".join(
            [f"{request.method} {request.path}"]
            + [f"{k}: {v}" for k, v in request.headers.items()]
            + ["", request.body.decode("utf-8", errors="replace")]
        )
        body = json.dumps(
            {"error": {"message": f"rejected request: {echoed}", "code": "Base.1.0.Error"}}
        ).encode()
        self._answer(conn, self.status, "Echo", "application/json", body)


# -- the compromised BMC of issue 22: links to another origin ---------------------------------

SESSIONS = "/redfish/v1/SessionService/Sessions"
SYSTEMS = "/redfish/v1/Systems"

#: form -> a link a hostile BMC hands out; ``{c}`` is the collector's port, ``{b}`` the BMC's.
LINK_FORMS = {
    "absolute": "http://127.0.0.1:{c}/redfish/v1/Systems/1",
    "scheme_relative": "//127.0.0.1:{c}/redfish/v1/Systems/1",
    "at_host": "@127.0.0.1:{c}/redfish/v1/Systems/1",
    "userinfo": "http://root:x@127.0.0.1:{c}/redfish/v1/Systems/1",
    "other_scheme_same_port": "https://127.0.0.1:{b}/redfish/v1/Systems/1",
    "relative": "redfish/v1/Systems/1",
    "backslash": "/\\\\127.0.0.1:{c}/redfish/v1/Systems/1",
}
#: where a link sits: a collection member, the collection's nextLink, the session Location
LINK_PLACES = ("member", "next_link", "location")


def session_route(location: str = SESSIONS + "/1", token: str = "hostile-token") -> Route:  # noqa: S107
    """A session POST that succeeds, with ``location`` as the session's Location."""
    return Route(201, {"@odata.id": SESSIONS + "/1"}, {"X-Auth-Token": token, "Location": location})


def link_routes(place: str, link: str, *, basic_fallback: bool = False) -> dict[str, Route]:
    """A small Redfish service that hands out ``link`` at ``place`` (one of LINK_PLACES);
    ``basic_fallback``: the session POST answers 405, so the client falls back to Basic auth
    and every request carries the password."""
    if place not in LINK_PLACES:
        raise ValueError(f"unknown place {place!r}; choose from {', '.join(LINK_PLACES)}")
    routes = {
        SESSIONS: Route(405) if basic_fallback else session_route(),
        SESSIONS + "/1": Route(204),
        SYSTEMS: Route(body={"Members": [{"@odata.id": SYSTEMS + "/1"}]}),
        SYSTEMS + "/1": Route(body={"@odata.id": SYSTEMS + "/1", "Id": "1"}),
    }
    if place == "member":
        routes[SYSTEMS] = Route(body={"Members": [{"@odata.id": link}]})
    elif place == "next_link":
        routes[SYSTEMS] = Route(body={"Members": [], "Members@odata.nextLink": link})
    elif not basic_fallback:
        routes[SESSIONS] = session_route(location=link)
    return routes
