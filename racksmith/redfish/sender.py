"""Requests to one BMC: each bounded by its timeout and the per-BMC deadline, retried only
where that is safe, every failure a typed :class:`RedfishError`.

This is the request half of the Redfish client (:mod:`racksmith.redfish.connection` holds the
other half: the HTTP session's trust settings, login and logout). Rules it keeps:

- Every request ends within the smaller of its own timeout (connect + read) and what is left
  of the per-BMC deadline, however slowly the BMC trickles bytes (:mod:`racksmith.transport`
  cuts the socket); the error says which of the two ran out. Answers larger than
  ``max_answer_bytes`` are refused before they are parsed. Sleeping for a backoff never runs
  past the deadline either.
- Retries are bounded and only where they are safe: GETs on connection errors, anything on
  503 (the BMC said it did not process the request), never on a read timeout.
- iDRAC's 503 ``RAC0218`` (session limit) gets a longer, jittered backoff so that a rack of
  collectors does not hammer a BMC whose session table is full.
- Nothing secret is logged: request bodies and headers never are; reasons are redacted.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
import urllib3

from racksmith import transport
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target
from racksmith.secrets import redact
from racksmith.transport import Deadline

log = logging.getLogger("racksmith.redfish.client")  # one logger name for the whole client

SESSION_LIMIT_ID = "RAC0218"


@dataclass(frozen=True)
class ClientOptions:
    """How to talk to BMCs. Defaults suit real iDRACs; the lab tightens the timeouts."""

    scheme: str = "https"
    verify: bool = True
    ca_bundle: str | None = None
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    retries: int = 2  # extra attempts for safe requests after connection errors
    backoff: float = 0.5  # first backoff in seconds; doubles per attempt, with jitter
    busy_retries: int = 3  # extra attempts after 503 (session limit, service busy)
    busy_backoff: float = 2.0
    auth: str = "session"  # "session" (Basic when the BMC has no session service) or "basic"
    logout_timeout: float = 3.0
    expand: str = "auto"  # "auto": try $expand, fall back per BMC; "never"
    max_answer_bytes: int = transport.DEFAULT_MAX_BYTES  # larger answers are refused unread

    def __post_init__(self) -> None:
        if self.scheme not in ("http", "https"):
            raise ValueError(f"scheme must be http or https, not {self.scheme!r}")
        if self.auth not in ("session", "basic"):
            raise ValueError(f"auth must be session or basic, not {self.auth!r}")
        if self.expand not in ("auto", "never"):
            raise ValueError(f"expand must be auto or never, not {self.expand!r}")
        for name in ("connect_timeout", "read_timeout", "logout_timeout"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):  # NaN would switch the timeout off
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        if self.max_answer_bytes < 1024:
            raise ValueError("max_answer_bytes must be at least 1024")
        if self.retries < 0 or self.busy_retries < 0:
            raise ValueError("retries cannot be negative")

    #: The option names (racksmith.redfish.options) that :meth:`from_params` reads.
    PARAMS = (
        "scheme",
        "validate_certs",
        "ca_bundle",
        "connect_timeout",
        "read_timeout",
        "retries",
        "auth",
        "max_answer_bytes",
    )

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ClientOptions:
        """The options of a module's params, a CLI namespace's ``vars()`` or an inventory
        plugin's options (the names of :attr:`PARAMS`; numbers may arrive as text)."""
        return cls(
            scheme=params["scheme"],
            verify=bool(params["validate_certs"]),
            ca_bundle=params.get("ca_bundle") or None,
            connect_timeout=float(params["connect_timeout"]),
            read_timeout=float(params["read_timeout"]),
            retries=int(params["retries"]),
            auth=params["auth"],
            max_answer_bytes=int(params["max_answer_bytes"]),
        )


@dataclass
class RequestStats:
    """What one client sent; the benchmark and the tests read these."""

    requests: int = 0
    retries: int = 0
    by_method: dict[str, int] = field(default_factory=dict)
    sessions_created: int = 0
    sessions_deleted: int = 0
    auth: str | None = None  # "session" or "basic" once logged in
    expand: bool | None = None  # whether the BMC honoured $expand


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    text: str

    def message_ids(self) -> list[str]:
        """Redfish ``@Message.ExtendedInfo`` ids (``IDRAC.2.8.PSU501``), from error or body."""
        ids: list[str] = []
        if isinstance(self.body, dict):
            blocks = [self.body.get("error"), self.body]
            for block in blocks:
                if isinstance(block, dict):
                    for info in block.get("@Message.ExtendedInfo") or []:
                        if isinstance(info, dict) and info.get("MessageId"):
                            ids.append(str(info["MessageId"]))
        return ids

    def message(self) -> str:
        """The first human message in a Redfish error body, else the status line."""
        if isinstance(self.body, dict):
            for block in (self.body.get("error"), self.body):
                if isinstance(block, dict):
                    for info in block.get("@Message.ExtendedInfo") or []:
                        if isinstance(info, dict) and info.get("Message"):
                            return str(info["Message"])
                    if isinstance(block.get("message"), str):
                        return block["message"]
        return f"HTTP {self.status}"


class _Retry(Exception):
    """One attempt failed in a way that may be retried (the caller checks the count)."""

    def __init__(self, error: RedfishError) -> None:
        super().__init__(error.reason)
        self.error = error


class Sender:
    """Sends requests to one BMC over ``http`` (a prepared ``requests.Session``)."""

    def __init__(
        self,
        target: Target,
        http: requests.Session,
        base: str,
        options: ClientOptions,
        deadline: Deadline,
        stats: RequestStats,
    ) -> None:
        self.target = target
        self.http = http
        self.base = base
        self.options = options
        self.deadline = deadline
        self.stats = stats
        #: Seconds of the deadline kept for the logout once a session exists, so that the
        #: DELETE too ends inside the deadline (set by the connection half at login).
        self.logout_reserve = 0.0

    def url(self, path: str) -> str:
        """The URL for ``path`` (ours, or a link from the BMC's answers: ``@odata.id``,
        ``nextLink``, a session ``Location``) on this BMC's own origin and no other.

        The one-origin rule (:func:`racksmith.transport.link_url`): a link naming another
        host, port or scheme, carrying userinfo, ``//host``, ``@host`` or not starting with
        ``/`` is refused here, before any request is built; the token or Basic auth goes with
        every request (issue 22: such links took the fleet's password to other hosts).
        """
        where = self.target.address or self.target.host
        origin = transport.Origin(self.options.scheme, where.lower(), self.target.port)
        try:
            return transport.link_url(
                origin, path, f"BMC {self.target}", aliases=(self.target.host,)
            )
        except transport.OriginError as exc:
            raise RedfishError(
                ErrorKind.MALFORMED, redact(str(exc)), bmc=str(self.target)
            ) from None

    def count(self, method: str) -> None:
        self.stats.requests += 1
        self.stats.by_method[method] = self.stats.by_method.get(method, 0) + 1

    def send(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        idempotent: bool,
        headers: Mapping[str, str] | None = None,
        files: Mapping[str, Any] | None = None,
    ) -> Response:
        """One request with its retries: connection errors (safe requests only) and 503.
        ``files`` sends a multipart/form-data body instead of JSON (a firmware push)."""
        what = f"{method} {path}"
        request = (method, self.url(path), json, dict(headers) if headers else None, files)
        attempt = busy_attempt = 0
        while True:
            try:
                response = self._attempt(what, request, idempotent=idempotent, attempt=attempt)
            except _Retry as retry:
                delay = self._backoff(self.options.backoff, attempt)
                log.debug(
                    "%s: %s failed (%s); retrying in %.1fs",
                    self.target,
                    what,
                    retry.error.reason,
                    delay,
                )
                attempt += 1
                self.stats.retries += 1
                self._sleep(delay, retry.error)
                continue
            if response.status != 503:
                return response
            error, session_limit = self._busy_error(what, response, busy_attempt)
            if busy_attempt >= self.options.busy_retries:
                raise error
            delay = self._backoff(
                self.options.busy_backoff, busy_attempt, response.headers.get("Retry-After")
            )
            log.info(
                "%s: %s busy (503%s); backing off %.1fs",
                self.target,
                what,
                " RAC0218" if session_limit else "",
                delay,
            )
            busy_attempt += 1
            self.stats.retries += 1
            self._sleep(delay, error)

    def _attempt(
        self,
        what: str,
        request: tuple[
            str, str, dict[str, Any] | None, dict[str, str] | None, Mapping[str, Any] | None
        ],
        *,
        idempotent: bool,
        attempt: int,
    ) -> Response:
        """One try: the answer, a final :class:`RedfishError`, or :class:`_Retry`."""
        method, url, body, headers, files = request
        extra = {"files": dict(files)} if files else {}
        budget, limit = self._budget(what)
        started = time.monotonic()
        last_try = attempt >= self.options.retries
        try:
            answer = transport.request(
                self.http,
                method,
                url,
                json=body,
                headers=headers,
                budget=budget,
                connect_timeout=self.options.connect_timeout,
                read_timeout=self.options.read_timeout,
                max_bytes=self.options.max_answer_bytes,
                **extra,
            )
        except transport.BudgetExpired as exc:
            # Not retried: a slow BMC asked again only gets slower.
            raise self._timeout_error(
                what, f"no complete answer after {exc.elapsed:.1f}s ({exc.stage})", limit
            ) from None
        except transport.AnswerTooLarge as exc:
            raise self._error(
                ErrorKind.MALFORMED, f"{what}: {exc} (max_answer_bytes); refused unread"
            ) from None
        except requests.exceptions.SSLError as exc:
            raise self._error(ErrorKind.TLS, f"{what}: TLS failed: {_tls_reason(exc)}") from None
        except requests.exceptions.ConnectTimeout:
            connect_limit = (
                limit
                if budget < self.options.connect_timeout
                else f"connect timeout of {self.options.connect_timeout:g}s"
            )
            error = self._timeout_error(what, "no connection", connect_limit)
            raise (error if last_try else _Retry(error)) from None
        except requests.exceptions.ReadTimeout:
            # The TLS handshake runs under the connect timeout (CPython's socket timeout), but
            # urllib3 reports its silence as a read timeout: a BMC that accepts the connection
            # and never answers fails after the connect timeout, so name that limit.
            if time.monotonic() - started < 0.9 * self.options.read_timeout:
                raise self._timeout_error(
                    what,
                    "connected, but no TLS handshake",
                    f"connect timeout of {self.options.connect_timeout:g}s",
                ) from None
            raise self._timeout_error(
                what, "no answer", f"read timeout of {self.options.read_timeout:g}s"
            ) from None
        except requests.exceptions.ConnectionError as exc:
            kind = _classify_connection_error(exc)
            error = self._error(kind, f"{what}: {_describe(kind)} ({short(exc)})")
            # Refused: nothing was sent, safe to retry. Reset: only if the request is safe.
            final = last_try or (kind is ErrorKind.RESET and not idempotent)
            raise (error if final else _Retry(error)) from None
        except requests.RequestException as exc:
            raise self._error(ErrorKind.HTTP, f"{what}: {short(exc)}") from None
        finally:
            self.count(method)
        response = _response(answer)
        log.debug(
            "%s: %s -> %s in %.2fs", self.target, what, response.status, time.monotonic() - started
        )
        return response

    def _busy_error(
        self, what: str, response: Response, busy_attempt: int
    ) -> tuple[RedfishError, bool]:
        """The error a 503 becomes if no retry is left, and whether it is iDRAC's session
        limit."""
        ids = response.message_ids()
        session_limit = any(SESSION_LIMIT_ID in i for i in ids)
        error = RedfishError(
            ErrorKind.BUSY,
            f"{what}: HTTP 503 "
            f"{'RAC0218 session limit reached' if session_limit else response.message()}"
            f" after {busy_attempt + 1} attempt(s)",
            bmc=str(self.target),
            status=503,
            message_id=next(iter(ids), None),
        )
        return error, session_limit

    def _error(self, kind: ErrorKind, reason: str) -> RedfishError:
        return RedfishError(kind, reason, bmc=str(self.target))

    def _budget(self, what: str) -> tuple[float, str]:
        """Seconds this request may take, and the name of the limit that sets it."""
        own = self.options.connect_timeout + self.options.read_timeout
        remaining = self.deadline.remaining() - self.logout_reserve
        if remaining <= 0:
            raise self._error(
                ErrorKind.TIMEOUT,
                f"{what}: per-BMC deadline of {self.deadline.seconds:g}s exceeded",
            )
        if remaining < own:
            return remaining, f"per-BMC deadline of {self.deadline.seconds:g}s"
        return own, (
            f"request timeout of {own:g}s (connect {self.options.connect_timeout:g}s"
            f" + read {self.options.read_timeout:g}s)"
        )

    def _timeout_error(self, what: str, event: str, limit: str) -> RedfishError:
        return self._error(ErrorKind.TIMEOUT, f"{what}: {event}: the {limit} ran out")

    def _sleep(self, seconds: float, error: RedfishError) -> None:
        """Back off, unless the deadline would expire first (then give up with ``error``)."""
        if seconds >= self.deadline.remaining() - self.logout_reserve:
            raise error
        time.sleep(seconds)

    @staticmethod
    def _backoff(base: float, attempt: int, retry_after: str | None = None) -> float:
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), 60.0)
        return base * (2**attempt) * random.uniform(0.8, 1.2)  # noqa: S311 (jitter, not crypto)

    def raise_for_auth(self, response: Response, what: str) -> None:
        if response.status in (401, 403):
            raise RedfishError(
                ErrorKind.AUTH,
                f"{what}: HTTP {response.status} "
                f"({'credentials rejected' if response.status == 401 else 'not permitted'})",
                bmc=str(self.target),
                status=response.status,
            )

    def error_for(self, response: Response, what: str) -> RedfishError:
        if 300 <= response.status < 400:
            reason = f"{what}: redirect to {response.headers.get('Location', '?')} not followed"
        else:
            reason = f"{what}: HTTP {response.status} {redact(response.message())[:160]}"
        ids = response.message_ids()
        return RedfishError(
            ErrorKind.HTTP,
            reason,
            bmc=str(self.target),
            status=response.status,
            message_id=next(iter(ids), None),
        )


def _classify_connection_error(exc: BaseException) -> ErrorKind:
    """Refused/unreachable (nothing was sent) versus reset (the BMC dropped us)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ECONNRESET, errno.EPIPE):
            return ErrorKind.RESET
        if isinstance(current, ConnectionResetError | BrokenPipeError):
            return ErrorKind.RESET
        if isinstance(current, urllib3.exceptions.ProtocolError):
            return ErrorKind.RESET
        if isinstance(current, urllib3.exceptions.NewConnectionError | ConnectionRefusedError):
            return ErrorKind.UNREACHABLE
        nxt = current.__cause__ or current.__context__
        if nxt is None and current.args and isinstance(current.args[0], BaseException):
            nxt = current.args[0]
        if nxt is None and isinstance(current, urllib3.exceptions.MaxRetryError):
            nxt = current.reason
        current = nxt
    text = str(exc).lower()
    if "reset" in text or "aborted" in text or "remotedisconnected" in text:
        return ErrorKind.RESET
    return ErrorKind.UNREACHABLE


def short(exc: BaseException) -> str:
    """A one-line description of a transport error, without URLs' noise."""
    text = str(exc)
    for marker in ("Caused by ", "Failed to establish a new connection: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return redact(text.strip("()'\" "))[:200]


def _tls_reason(exc: BaseException) -> str:
    """``certificate verify failed: unable to get local issuer certificate`` from urllib3's
    wrapping."""
    match = re.search(r"\[SSL: [A-Z_]+\] ([^(]+?)\s*\(_ssl", str(exc))
    return match.group(1) if match else short(exc)


def _describe(kind: ErrorKind) -> str:
    return {
        ErrorKind.RESET: "connection reset by the BMC",
        ErrorKind.UNREACHABLE: "cannot connect",
    }.get(kind, kind.value)


def _response(answer: transport.Answer) -> Response:
    """Parse the body as JSON when it is JSON; anything else (HTML, garbage, JSON nested past
    the parser's recursion limit) leaves ``body`` None for the caller to call malformed."""
    text = answer.text
    body: Any = None
    if text.strip():
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):
            body = None
    return Response(status=answer.status, headers=answer.headers, body=body, text=text)
