"""HTTP for the simulator: parse form and multipart bodies, check OAuth, dispatch, reply.

Standard library only (``http.server``), one thread per connection with HTTP/1.1 keep-alive,
every handler run under the store's lock after advancing the clock. Test-injected HTTP faults
(503 with Retry-After, 409 with Retry-After, stalls past the client's read timeout) apply after
authentication, like the rack-RPC failures they imitate.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from racksmith.lab.maassim import api
from racksmith.lab.maassim.errors import ApiError, nginx_504
from racksmith.lab.maassim.oauth import AuthFailure, verify
from racksmith.lab.maassim.state import Store

log = logging.getLogger("racksmith.lab.maassim")
MAX_BODY = 16 * 1024 * 1024


def parse_body(content_type: str, body: bytes) -> dict[str, list[str]]:
    """Form-encoded or multipart/form-data (python-libmaas sends base64 parts) -> lists."""
    if not body:
        return {}
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == "application/x-www-form-urlencoded" or not ctype:
        return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    if ctype == "multipart/form-data":
        message = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body
        )
        if not message.is_multipart():
            raise ApiError(400, "Malformed multipart body.")
        data: dict[str, list[str]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if not name:
                continue
            payload = part.get_payload(decode=True) or b""
            data.setdefault(str(name), []).append(payload.decode("utf-8", "replace"))
        return data
    raise ApiError(415, f"Unsupported content type {ctype}; MAAS reads form or multipart bodies.")


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str]


def _reply(result) -> Reply:
    if isinstance(result, str):
        return Reply(200, result.encode(), "text/plain; charset=utf-8", {})
    if result is None:
        return Reply(204, b"", "text/plain; charset=utf-8", {})
    return Reply(200, json.dumps(result).encode(), "application/json", {})


class App:
    """Request -> Reply, independent of the socket layer so it can be tested directly."""

    def __init__(self, store: Store):
        self.store = store

    def _route(self, path: str) -> tuple[api.Resource, dict[str, str]]:
        for resource in api.RESOURCES + api.SIM_RESOURCES:
            match = resource.pattern.match(path)
            if match:
                return resource, match.groupdict()
        raise ApiError(404, "Not Found")

    def handle(self, method: str, target: str, headers, body: bytes) -> Reply:
        store = self.store
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)
        try:
            resource, args = self._route(url.path)
            params = (
                query
                if method in ("GET", "DELETE")
                else parse_body(headers.get("Content-Type", ""), body)
            )
            op = (query.get("op") or params.get("op") or [None])[0]
            user = None
            auth = headers.get("Authorization")
            if auth:
                try:
                    user = verify(auth, store.users, store.nonces, store.clock.wall())
                except AuthFailure as exc:
                    raise ApiError(
                        401, str(exc), headers={"WWW-Authenticate": 'OAuth realm="OAuth"'}
                    ) from None
            action = self._action(resource, method, op, user)
            with store.lock:
                fault = store.take_http_fault(method, url.path, op) if user else None
            if fault and not fault.get("after"):
                self._apply(fault)
            ctx = api.Ctx(store, method, user, args, params, headers.get("Host", "localhost"))
            with store.lock:
                store.advance()
                result = action.fn(ctx)
            if fault:  # "after": the work is done, only the answer is lost (nginx 504, §4)
                self._apply(fault)
            reply = _reply(result)
        except ApiError as exc:
            reply = Reply(exc.status, exc.body, exc.content_type, dict(exc.headers))
        reply.headers.setdefault("X-MAAS-API-Hash", api.API_HASH)
        store.stats[f"{method} {reply.status}"] += 1
        try:
            store.persist()  # what this reply acknowledges is on disk before it is sent
        except OSError as exc:
            reply = Reply(503, f"cannot save state: {exc.strerror}".encode(), "text/plain", {})
        return reply

    @staticmethod
    def _action(resource: api.Resource, method: str, op: str | None, user) -> api.Action:
        actions = resource.auth if user is not None and resource.auth else resource.anon
        for action in actions:
            if action.method == method and action.op == op:
                return action
        if user is None and resource.auth:
            raise ApiError(
                401,
                "Authorization Error: 'Authentication credentials were not provided.'",
                headers={"WWW-Authenticate": 'OAuth realm="OAuth"'},
            )
        if op is None and not any(a.method == method for a in actions):
            raise ApiError(405, f"Method Not Allowed: {method}")
        raise ApiError(400, f"Unrecognised signature: method={method} op={op}")

    def _apply(self, fault: dict) -> None:
        if fault.get("stall"):
            time.sleep(float(fault["stall"]))  # the request then proceeds, like a slow region
            return
        if int(fault["status"]) == 504 and not fault.get("body"):
            raise nginx_504()
        headers = {"Retry-After": str(fault["retry_after"])} if fault.get("retry_after") else {}
        raise ApiError(
            int(fault["status"]), fault.get("body") or "Injected fault.", headers=headers
        )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SimHTTPServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.send_error(413)
            return
        body = self.rfile.read(length) if length else b""
        reply = self.server.app.handle(self.command, self.path, self.headers, body)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    def date_time_string(self, timestamp: float | None = None) -> str:
        return email.utils.formatdate(self.server.app.store.clock.wall(), usegmt=True)

    def log_message(self, format: str, *args) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class SimHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: App):
        self.app = app
        super().__init__(address, _Handler)

    def handle_error(self, request, client_address) -> None:
        """A client that gave up (read timeout) is normal here; anything else is logged."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        log.exception("error serving %s", client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/MAAS/"


@contextlib.contextmanager
def running(store: Store, host: str = "127.0.0.1", port: int = 0) -> Iterator[SimHTTPServer]:
    """Serve ``store`` in a background thread (tests, the benchmark); stop on exit."""
    server = SimHTTPServer((host, port), App(store))
    thread = threading.Thread(target=server.serve_forever, name="maassim", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
