"""HTTP for the UFM simulator (standard library ``http.server``), basic auth on every call."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from racksmith.lab.ufmsim.state import ApiError, UfmState

log = logging.getLogger("racksmith.lab.ufmsim")


class _Handler(BaseHTTPRequestHandler):
    server: UfmHTTPServer
    protocol_version = "HTTP/1.1"

    def _reply(self, status: int, body=None, headers: dict | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        state = self.server.state
        want = base64.b64encode(f"{state.username}:{state.password}".encode()).decode()
        return self.headers.get("Authorization", "") == f"Basic {want}"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._authorised():
            self._reply(401, {"error": "Unauthorized"}, {"WWW-Authenticate": 'Basic realm="UFM"'})
            return
        path = urlsplit(self.path).path.rstrip("/")
        state = self.server.state
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._reply(400, {"error": "body is not JSON"})
            return
        try:
            with state.lock:
                state.calls.append((self.command, path))
                self._route(state, path, body)
        except ApiError as exc:
            self._reply(exc.status, {"error": exc.message})

    def _route(self, state: UfmState, path: str, body) -> None:
        method = self.command
        if method == "GET" and path == "/ufmRest/resources/ports":
            self._reply(200, state.list_ports())
        elif method == "GET" and path == "/ufmRest/app/events":
            self._reply(200, list(state.events))
        elif method == "GET" and path == "/ufmRest/app/unhealthy_ports":
            self._reply(200, state.list_unhealthy())
        elif method == "PUT" and path == "/ufmRest/app/unhealthy_ports":
            state.set_unhealthy(body)
            self._reply(200, {})
        elif method == "POST" and path == "/ufmRest/actions":
            job = state.action(body)
            self._reply(202, None, {"Location": f"/ufmRest/jobs/{job}"})
        elif method == "GET" and path.startswith("/ufmRest/jobs/"):
            job = state.jobs.get(
                int(path.rsplit("/", 1)[1]) if path.rsplit("/", 1)[1].isdigit() else -1
            )
            if job is None:
                raise ApiError(404, "no such job")
            self._reply(200, job)
        else:
            raise ApiError(404, f"{method} {path}: not simulated")

    do_GET = do_PUT = do_POST = _serve

    def log_message(self, format: str, *args) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class UfmHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: UfmState):
        self.state = state
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


@contextlib.contextmanager
def running(state: UfmState, host: str = "127.0.0.1", port: int = 0) -> Iterator[UfmHTTPServer]:
    """Serve ``state`` on an ephemeral port in a background thread; stop on exit."""
    server = UfmHTTPServer((host, port), state)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="ufmsim", daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
