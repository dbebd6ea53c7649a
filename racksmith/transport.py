"""Bounded HTTP for the Redfish and MAAS clients: every request ends within its budget, and no
answer is read past its cap.

Why this exists: ``requests``' read timeout applies to *each socket read*, so a server that
sends one byte a second never times out (a "5 s" BMC deadline held discovery for 44 s), and
an answer is read whole whatever its size (a 50 MB answer from a BMC was buffered). Here:

- a watchdog shuts the connection's socket down when the request's budget runs out, whether
  the server is silent, trickles the status line and headers, or trickles the body; the
  caller gets :class:`BudgetExpired` saying how far the answer got;
- the body is read in chunks and refused past ``max_bytes`` (:class:`AnswerTooLarge`), before
  it is parsed; a declared ``Content-Length`` over the cap is refused without reading;
- answers are asked for uncompressed and read undecoded (a small gzip answer cannot expand);
- no redirect is followed, and transport errors from the body read come back as the same
  ``requests`` exceptions a header read raises, so callers classify them in one place.

The watchdog needs the socket of the connection serving the request; the pool's connection
classes record themselves for the calling thread when a request starts (urllib3 sends it from
that thread).
"""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection

#: Default cap on one answer: far above any Redfish document or MAAS listing of a rack.
DEFAULT_MAX_BYTES = 16 << 20
_CHUNK = 64 << 10
_POLL = 0.05

_HEADERS = "waiting for the status line and headers"
_current = threading.local()


class LimitReached(Exception):
    """A bound of this module stopped the request (its budget or its size cap)."""


class BudgetExpired(LimitReached):
    """The request's budget ran out; ``stage`` says how far the answer had come."""

    def __init__(self, budget: float, stage: str, elapsed: float):
        self.budget = budget
        self.stage = stage
        self.elapsed = elapsed
        super().__init__(f"no complete answer within {budget:.3g}s ({stage})")


class AnswerTooLarge(LimitReached):
    """The answer was (or declared itself) larger than the cap; nothing of it was parsed."""

    def __init__(self, limit: int, declared: int | None = None):
        self.limit = limit
        self.declared = declared
        size = f"{declared} bytes declared" if declared is not None else "more"
        super().__init__(f"answer too large ({size}; the cap is {limit} bytes)")


class Deadline:
    """A wall-clock budget shared by several requests; ``None`` seconds means no budget."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = math.inf if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


@dataclass(frozen=True)
class Answer:
    """A whole answer, read within budget and under the cap."""

    status: int
    headers: Mapping[str, str]
    content: bytes
    elapsed: float

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


class _Track:
    """Mixin for urllib3 connections: record the connection serving this thread's request.

    The TLS handshake needs no cut: CPython applies the socket timeout (the connect timeout,
    clipped to the budget) to the whole handshake, not to each read."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        holder = getattr(_current, "holder", None)
        if holder is not None:
            holder.conn = self
        return super().request(*args, **kwargs)  # type: ignore[misc]



class _HTTPConnection(_Track, HTTPConnection):
    pass


class _HTTPSConnection(_Track, HTTPSConnection):
    pass


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class BoundedAdapter(HTTPAdapter):
    """An adapter whose connections the watchdog can cut; never retries on its own."""

    def __init__(self, pool_maxsize: int = 4) -> None:
        super().__init__(max_retries=0, pool_connections=1, pool_maxsize=pool_maxsize)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def session(pool_maxsize: int = 4) -> requests.Session:
    """A session for bounded requests: no proxies or ``.netrc`` picked up from the environment,
    no compression, the bounded adapter on both schemes."""
    http = requests.Session()
    http.trust_env = False
    adapter = BoundedAdapter(pool_maxsize)
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    http.headers["Accept-Encoding"] = "identity"
    return http


class _Holder:
    def __init__(self) -> None:
        self.conn: HTTPConnection | None = None
        self.stage = "connecting"
        self.expired = threading.Event()
        self.done = threading.Event()


def _watch(holder: _Holder, budget: float) -> None:
    if holder.done.wait(budget):
        return
    holder.expired.set()
    # Keep cutting until the request gives up: the socket may not exist yet (connecting).
    while not holder.done.is_set():
        sock = getattr(holder.conn, "sock", None)
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the fd, under any TLS wrapper
            except (OSError, TypeError, ValueError):
                pass
        holder.done.wait(_POLL)


def _translate(exc: Exception) -> Exception:
    """urllib3 errors from a body read -> the requests exceptions a header read gives."""
    if isinstance(exc, urllib3.exceptions.SSLError):
        return requests.exceptions.SSLError(exc)
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return requests.exceptions.ReadTimeout(exc)
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        return requests.exceptions.ConnectionError(exc)
    return exc


def request(
    http: requests.Session,
    method: str,
    url: str,
    *,
    budget: float,
    connect_timeout: float,
    read_timeout: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    **kwargs: Any,
) -> Answer:
    """One request that ends within ``budget`` seconds with at most ``max_bytes`` of body.

    ``read_timeout`` (default: the budget) bounds each silence of the server, as in
    ``requests``; the budget bounds the whole request. Raises :class:`BudgetExpired`,
    :class:`AnswerTooLarge`, or the ``requests`` exception of a transport failure (refused,
    reset, TLS, a silence longer than ``read_timeout``) that came before the budget ran out.
    """
    if not budget > 0:  # also catches NaN
        raise BudgetExpired(0.0, "not sent", 0.0)
    started = time.monotonic()
    holder = _Holder()
    watchdog = threading.Thread(target=_watch, args=(holder, budget), daemon=True)
    watchdog.start()
    _current.holder = holder
    raw: requests.Response | None = None
    try:
        try:
            raw = http.request(
                method,
                url,
                timeout=(min(connect_timeout, budget), min(read_timeout or budget, budget)),
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
        finally:
            _current.holder = None
        if holder.expired.is_set():  # cut while the headers trickled: what came is partial
            raise BudgetExpired(budget, _HEADERS, time.monotonic() - started)
        holder.stage = "reading the body"
        declared = raw.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise AnswerTooLarge(max_bytes, int(declared))
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = raw.raw.read(_CHUNK, decode_content=False)
            except Exception as exc:
                raise _translate(exc) from None
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise AnswerTooLarge(max_bytes)
            chunks.append(chunk)
        if holder.expired.is_set():  # the cut may read as a clean end of a close-framed body
            raise BudgetExpired(budget, holder.stage, time.monotonic() - started)
        answer = Answer(raw.status_code, raw.headers, b"".join(chunks), time.monotonic() - started)
        raw.raw.release_conn()  # read to the end: the connection may serve the next request
        raw = None
        return answer
    except LimitReached:
        raise
    except Exception as exc:
        # A silence as long as the whole budget is the budget running out, whichever fired.
        timed_out = isinstance(exc, requests.exceptions.ReadTimeout)
        if holder.expired.is_set() or (timed_out and time.monotonic() - started >= budget):
            stage = _HEADERS if raw is None else holder.stage
            raise BudgetExpired(budget, stage, time.monotonic() - started) from None
        raise
    finally:
        holder.done.set()
        if raw is not None:
            raw.close()
