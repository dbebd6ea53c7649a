"""A small synchronous MAAS 2.0 API client on ``requests``.

What it does that a bare ``requests`` call does not (maas-api.md §1, §2, §4, §7.2):

* signs every *attempt* with a fresh nonce and timestamp (MAAS refuses a reused nonce);
* corrects clock skew from the response ``Date`` after an "Expired timestamp" 401, once,
  like MAAS's own ``maas_api_helper``;
* puts ``op`` in the query string and sends form-encoded or multipart bodies (never JSON);
* bounds every call in wall time: each request ends within the smaller of its own timeout
  (connect + read) and what is left of the call's deadline (all attempts and backoffs), however
  slowly MAAS trickles bytes (:mod:`racksmith.transport`); answers over ``max_answer_bytes``
  are refused unread. A MAAS that never answers fails within the deadline (default 55 s),
  not after 5 attempts x 90 s (7.8 minutes, as before);
* retries only where it is safe: a 503/409 that carries ``Retry-After`` (MAAS says "try
  again"), or a connection error / 502 / 504 on a call the caller marked idempotent. A
  non-idempotent call that times out is *not* repeated: the caller re-reads state first
  (a 504 from MAAS's proxy can hide a create that succeeded);
* raises typed errors (:mod:`racksmith.maas.errors`) with status, body and ``Retry-After``,
  with the key scrubbed out of every message;
* sends the key to one origin only: ``MAAS_URL`` is held to the address rule of
  :func:`racksmith.transport.check_url` (names allowed, numeric short forms such as
  ``127.1`` or ``0x7f000001`` refused, no userinfo), and every request URL is checked to stay
  on that origin before it is signed (:func:`racksmith.transport.link_url`).
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import requests
import urllib3

from racksmith import transport
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.clock import Clock, RateLimiter
from racksmith.maas.errors import (
    MaasConfigError,
    MaasError,
    MaasHTTPError,
    MaasMalformedError,
    MaasTransportError,
    http_error_class,
)

log = logging.getLogger("racksmith.maas")

#: (connect, read) seconds for one request: the read part bounds the whole answer.
DEFAULT_TIMEOUT = (10.0, 30.0)
#: Seconds for one call, every attempt and backoff included: a MAAS that never answers fails
#: in under a minute. (racksmith does not call query_power_state, which can block 60 s.)
DEFAULT_DEADLINE = 55.0
#: How many times one call may be retried (gomaasapi uses 4), within the deadline.
DEFAULT_RETRIES = 4
#: Largest answer read: a listing of thousands of machines fits many times over.
DEFAULT_MAX_ANSWER_BYTES = 64 << 20
#: Never sleep longer than this on a Retry-After, whatever the server asks.
MAX_RETRY_AFTER = 60.0

Params = Mapping[str, Any] | Sequence[tuple[str, Any]] | None


def api_root(url: str) -> str:
    """``http://host:5240/MAAS/`` (or the full API URL) -> ``.../MAAS/api/2.0/``."""
    url = url.strip()
    if not url.endswith("/"):
        url += "/"
    if url.endswith("/api/2.0/"):
        return url
    return url + "api/2.0/"


def _pairs(params: Params) -> list[tuple[str, str]]:
    """Flatten a mapping or pair list; list values repeat the key (MAAS's list convention)."""
    if not params:
        return []
    items = params.items() if isinstance(params, Mapping) else params
    out: list[tuple[str, str]] = []
    for name, value in items:
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        for item in values:
            if isinstance(item, bool):
                item = "true" if item else "false"
            out.append((name, item if isinstance(item, (str, bytes)) else str(item)))
    return out


def check_seconds(name: str, value: float | None, *, allow_none: bool = False) -> None:
    """A timeout or deadline must be a positive, finite number (NaN would disable it)."""
    if value is None and allow_none:
        return
    if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
        raise MaasConfigError(f"{name} must be a positive number of seconds, not {value!r}")


def _retry_after(response: transport.Answer) -> float | None:
    """MAAS sends delta-seconds (5 or 10); anything unparsable counts as absent."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


def _never_sent(exc: requests.RequestException) -> bool:
    """True when the request cannot have reached MAAS (refused or connect timeout)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


class MaasClient:
    """One signed session against one MAAS region. Not shared between threads."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        verify: bool | str = True,
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        retries: int = DEFAULT_RETRIES,
        clock: Clock | None = None,
        limiter: RateLimiter | None = None,
        session: requests.Session | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ):
        check_seconds("connect timeout", timeout[0])
        check_seconds("read timeout", timeout[1])
        check_seconds("deadline", deadline, allow_none=True)
        try:
            self.origin = transport.check_url(credentials.url, "MAAS URL")
        except transport.AddressError as exc:
            raise MaasConfigError(str(exc)) from None
        self.root = api_root(credentials.url)
        self._key: ApiKey = credentials.key
        self.verify = verify
        self.timeout = timeout
        self.deadline = deadline
        self.retries = retries
        self.max_answer_bytes = max_answer_bytes
        self.clock = clock or Clock()
        self.limiter = limiter
        self._session = session or transport.session()
        self._skew = 0.0
        self.requests_sent = 0

    def __repr__(self) -> str:
        return f"MaasClient({self.root!r})"

    def redact(self, text: str) -> str:
        return self._key.redact(text)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> MaasClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- verbs -----------------------------------------------------------------------------

    def get(self, path: str, params: Params = None, *, op: str | None = None) -> Any:
        """GETs are read-only in MAAS, so they are always retried on transport errors."""
        return self.call("GET", path, op=op, params=params, idempotent=True)

    def post(
        self,
        path: str,
        data: Params = None,
        *,
        op: str | None = None,
        idempotent: bool = False,
        multipart: bool = False,
    ) -> Any:
        return self.call("POST", path, op=op, data=data, idempotent=idempotent, multipart=multipart)

    def put(self, path: str, data: Params = None) -> Any:
        # A PUT sets fields to given values: repeating it is harmless.
        return self.call("PUT", path, data=data, idempotent=True)

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path, idempotent=True)

    # -- core ------------------------------------------------------------------------------

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """:meth:`request`, decoded: JSON as Python data, anything else as text."""
        return self._decode(self.request(method, path, **kwargs))

    def request(
        self,
        method: str,
        path: str,
        *,
        op: str | None = None,
        params: Params = None,
        data: Params = None,
        idempotent: bool = False,
        multipart: bool = False,
    ) -> transport.Answer:
        if path.startswith(("http://", "https://")) or ".." in path.split("/"):
            raise MaasConfigError("MAAS API paths are relative to the API root, without '..'")
        query = ([("op", op)] if op else []) + _pairs(params)
        try:  # one origin: the key is signed into requests to MAAS_URL's origin only
            url = transport.link_url(self.origin, self.root + path.lstrip("/"), "MAAS")
        except transport.OriginError as exc:
            raise MaasConfigError(str(exc)) from None
        if query:
            url += "?" + urlencode(query)
        shown = f"{path}{'?op=' + op if op else ''}"
        body = _pairs(data)
        deadline = transport.Deadline(self.deadline)
        skew_fixed = False
        attempt = 0
        while True:
            attempt += 1
            budget, limit = self._budget(deadline, method, shown, attempt)
            sent_at = time.monotonic()
            try:
                response = self._send(method, url, body, multipart, budget)
            except transport.BudgetExpired as exc:
                error = MaasTransportError(
                    method,
                    shown,
                    f"no complete answer after {exc.elapsed:.1f}s ({exc.stage}): the {limit} ran"
                    f" out (attempt {attempt})",
                    timed_out=True,
                )
                if idempotent and attempt <= self.retries:
                    self._backoff(attempt, shown, "timed out", deadline, error)
                    continue
                raise error from None
            except transport.AnswerTooLarge as exc:
                raise MaasMalformedError(
                    f"{method} {shown}: {exc} (max_answer_bytes); refused unread"
                ) from None
            except requests.RequestException as exc:
                timed_out = isinstance(exc, requests.Timeout)
                where = transport.describe_connection_error(exc, url).split(" failed")[0]
                early = time.monotonic() - sent_at < 0.9 * self.timeout[1]
                if isinstance(exc, requests.ConnectTimeout):
                    reason = f"no {where}: the connect timeout of {self.timeout[0]:g}s ran out"
                elif timed_out and early and url.startswith("https:"):
                    # TLS handshake: under the connect timeout, reported as a read timeout
                    reason = (
                        f"{where} made, but no TLS handshake: the connect timeout of"
                        f" {self.timeout[0]:g}s ran out"
                    )
                elif timed_out:
                    reason = (
                        f"no answer on the {where}: the read timeout of {self.timeout[1]:g}s"
                        " ran out"
                    )
                else:
                    reason = transport.describe_connection_error(exc, url)
                error = MaasTransportError(method, shown, self.redact(reason), timed_out=timed_out)
                if (idempotent or _never_sent(exc)) and attempt <= self.retries:
                    self._backoff(attempt, shown, type(exc).__name__, deadline, error)
                    continue
                raise error from None
            status = response.status
            if status < 300:
                return response
            if status < 400:  # a redirect is not followed (the key would go along): an error
                where = self.redact(str(response.headers.get("Location", "?")))[:200]
                raise MaasHTTPError(
                    method,
                    shown,
                    status,
                    f"redirect to {where} not followed (MAAS_URL is "
                    f"{self.root}; point it at the address MAAS answers on)",
                )
            text = self.redact(response.text or "")
            retry_after = _retry_after(response)
            if status == 401 and "expired timestamp" in text.lower() and not skew_fixed:
                if self._correct_skew(response):
                    skew_fixed = True
                    continue
            error = self._error(method, shown, response, text, retry_after)
            if status in (409, 503) and retry_after is not None and attempt <= self.retries:
                log.info("%s %s: HTTP %s, Retry-After %.0fs", method, shown, status, retry_after)
                self._sleep(min(retry_after, MAX_RETRY_AFTER), deadline, error)
                continue
            if status in (502, 504) and idempotent and attempt <= self.retries:
                self._backoff(attempt, shown, f"HTTP {status}", deadline, error)
                continue
            raise error

    def _budget(
        self, deadline: transport.Deadline, method: str, shown: str, attempt: int
    ) -> tuple[float, str]:
        """Seconds the next attempt may take, and the name of the limit that sets it."""
        own = self.timeout[0] + self.timeout[1]
        remaining = deadline.remaining()
        if remaining <= 0:
            raise MaasTransportError(
                method,
                shown,
                f"the per-call deadline of {self.deadline:g}s ran out before attempt {attempt}",
                timed_out=True,
            )
        if remaining < own:
            return remaining, f"per-call deadline of {self.deadline:g}s"
        return own, (
            f"request timeout of {own:g}s (connect {self.timeout[0]:g}s"
            f" + read {self.timeout[1]:g}s)"
        )

    def _sleep(self, seconds: float, deadline: transport.Deadline, error: MaasError) -> None:
        """Wait (in MAAS time), unless the call's deadline would pass first: then ``error``."""
        if seconds / self.clock.scale >= deadline.remaining():
            raise error
        self.clock.sleep(seconds)

    def _send(
        self, method: str, url: str, body: list, multipart: bool, budget: float
    ) -> transport.Answer:
        if self.limiter is not None:
            self.limiter.acquire()
        timestamp = int(self.clock.wall() + self._skew)
        headers = {
            "Authorization": self._key.authorization(timestamp=timestamp),
            "Accept": "application/json",
        }
        kwargs: dict[str, Any] = {"headers": headers, "verify": self.verify}
        if method in ("POST", "PUT"):
            if multipart:
                kwargs["files"] = [(k, (None, v)) for k, v in body] or [("", (None, ""))]
            else:
                kwargs["data"] = body
        self.requests_sent += 1
        return transport.request(
            self._session,
            method,
            url,
            budget=budget,
            connect_timeout=self.timeout[0],
            read_timeout=self.timeout[1],
            max_bytes=self.max_answer_bytes,
            **kwargs,
        )

    def _backoff(
        self,
        attempt: int,
        shown: str,
        why: str,
        deadline: transport.Deadline,
        error: MaasError,
    ) -> None:
        delay = min(30.0, 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)  # noqa: S311 (jitter)
        log.info("%s: %s, retrying in %.1fs (attempt %d)", shown, why, delay, attempt)
        self._sleep(delay, deadline, error)

    def _correct_skew(self, response: transport.Answer) -> bool:
        """Adopt the server's clock from ``Date`` (MAAS's own clockskew fix). True if usable."""
        date = response.headers.get("Date")
        if not date:
            return False
        try:
            server_now = email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            return False
        self._skew = server_now - self.clock.wall()
        log.warning(
            "MAAS clock differs from ours by %.0fs; correcting request timestamps", self._skew
        )
        return True

    @staticmethod
    def _error(
        method: str, shown: str, response: transport.Answer, text: str, retry_after: float | None
    ) -> MaasHTTPError:
        field_errors = None
        if "json" in response.headers.get("Content-Type", ""):
            try:
                decoded = json.loads(text)
            except (ValueError, RecursionError):
                decoded = None
            if isinstance(decoded, dict):
                field_errors = {
                    str(k): [str(m) for m in (v if isinstance(v, list) else [v])]
                    for k, v in decoded.items()
                }
        cls = http_error_class(response.status)
        return cls(
            method,
            shown,
            response.status,
            text[:2000],
            retry_after=retry_after,
            field_errors=field_errors,
        )

    @staticmethod
    def _decode(response: transport.Answer) -> Any:
        """JSON as Python data, anything else as text; JSON that does not parse is malformed."""
        ctype = response.headers.get("Content-Type", "")
        if "json" in ctype:
            if not response.content.strip():
                return None
            try:
                return json.loads(response.text)
            except (ValueError, RecursionError):
                raise MaasMalformedError(
                    f"MAAS answered HTTP {response.status} with JSON that does not parse"
                ) from None
        return response.text

    # -- convenience ----------------------------------------------------------------------

    def whoami(self) -> dict:
        return self.get("users/", op="whoami")

    def version(self) -> dict:
        return self.get("version/")
