"""A small synchronous MAAS 2.0 API client on ``requests``.

What it does that a bare ``requests`` call does not (maas-api.md §1, §2, §4, §7.2):

* signs every *attempt* with a fresh nonce and timestamp (MAAS refuses a reused nonce);
* corrects clock skew from the response ``Date`` after an "Expired timestamp" 401, once,
  like MAAS's own ``maas_api_helper``;
* puts ``op`` in the query string and sends form-encoded or multipart bodies (never JSON);
* uses explicit ``(connect, read)`` timeouts;
* retries only where it is safe: a 503/409 that carries ``Retry-After`` (MAAS says "try
  again"), or a connection error / 502 / 504 on a call the caller marked idempotent. A
  non-idempotent call that times out is *not* repeated: the caller re-reads state first
  (a 504 from MAAS's proxy can hide a create that succeeded);
* raises typed errors (:mod:`racksmith.maas.errors`) with status, body and ``Retry-After``,
  with the key scrubbed out of every message.
"""

from __future__ import annotations

import email.utils
import logging
import random
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import requests
import urllib3

from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.clock import Clock, RateLimiter
from racksmith.maas.errors import (
    MaasConfigError,
    MaasHTTPError,
    MaasTransportError,
    http_error_class,
)

log = logging.getLogger("racksmith.maas")

#: (connect, read) seconds; MAAS's query_power_state alone can block 60 s.
DEFAULT_TIMEOUT = (10.0, 90.0)
#: How many times one call may be retried (gomaasapi uses 4).
DEFAULT_RETRIES = 4
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


def _retry_after(response: requests.Response) -> float | None:
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
        retries: int = DEFAULT_RETRIES,
        clock: Clock | None = None,
        limiter: RateLimiter | None = None,
        session: requests.Session | None = None,
    ):
        self.root = api_root(credentials.url)
        self._key: ApiKey = credentials.key
        self.verify = verify
        self.timeout = timeout
        self.retries = retries
        self.clock = clock or Clock()
        self.limiter = limiter
        self._session = session or requests.Session()
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
    ) -> requests.Response:
        if path.startswith(("http://", "https://")) or ".." in path.split("/"):
            raise MaasConfigError("MAAS API paths are relative to the API root, without '..'")
        query = ([("op", op)] if op else []) + _pairs(params)
        url = self.root + path.lstrip("/")
        if query:
            url += "?" + urlencode(query)
        shown = f"{path}{'?op=' + op if op else ''}"
        body = _pairs(data)
        skew_fixed = False
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._send(method, url, body, multipart)
            except requests.RequestException as exc:
                timed_out = isinstance(exc, requests.Timeout)
                if (idempotent or _never_sent(exc)) and attempt <= self.retries:
                    self._backoff(attempt, shown, type(exc).__name__)
                    continue
                reason = "timed out" if timed_out else f"connection failed: {type(exc).__name__}"
                raise MaasTransportError(
                    method, shown, self.redact(reason), timed_out=timed_out
                ) from None
            status = response.status_code
            if status < 400:
                return response
            text = self.redact(response.text or "")
            retry_after = _retry_after(response)
            if status == 401 and "expired timestamp" in text.lower() and not skew_fixed:
                if self._correct_skew(response):
                    skew_fixed = True
                    continue
            if status in (409, 503) and retry_after is not None and attempt <= self.retries:
                log.info("%s %s: HTTP %s, Retry-After %.0fs", method, shown, status, retry_after)
                self.clock.sleep(min(retry_after, MAX_RETRY_AFTER))
                continue
            if status in (502, 504) and idempotent and attempt <= self.retries:
                self._backoff(attempt, shown, f"HTTP {status}")
                continue
            raise self._error(method, shown, response, text, retry_after)

    def _send(self, method: str, url: str, body: list, multipart: bool) -> requests.Response:
        if self.limiter is not None:
            self.limiter.acquire()
        timestamp = int(self.clock.wall() + self._skew)
        headers = {
            "Authorization": self._key.authorization(timestamp=timestamp),
            "Accept": "application/json",
        }
        kwargs: dict[str, Any] = {
            "headers": headers,
            "timeout": self.timeout,
            "verify": self.verify,
        }
        if method in ("POST", "PUT"):
            if multipart:
                kwargs["files"] = [(k, (None, v)) for k, v in body] or [("", (None, ""))]
            else:
                kwargs["data"] = body
        self.requests_sent += 1
        return self._session.request(method, url, **kwargs)

    def _backoff(self, attempt: int, shown: str, why: str) -> None:
        delay = min(30.0, 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)  # noqa: S311 (jitter)
        log.info("%s: %s, retrying in %.1fs (attempt %d)", shown, why, delay, attempt)
        self.clock.sleep(delay)

    def _correct_skew(self, response: requests.Response) -> bool:
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
        method: str, shown: str, response: requests.Response, text: str, retry_after: float | None
    ) -> MaasHTTPError:
        field_errors = None
        if "json" in response.headers.get("Content-Type", ""):
            try:
                decoded = response.json()
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                field_errors = {
                    str(k): [str(m) for m in (v if isinstance(v, list) else [v])]
                    for k, v in decoded.items()
                }
        cls = http_error_class(response.status_code)
        return cls(
            method,
            shown,
            response.status_code,
            text[:2000],
            retry_after=retry_after,
            field_errors=field_errors,
        )

    @staticmethod
    def _decode(response: requests.Response) -> Any:
        ctype = response.headers.get("Content-Type", "")
        if "json" in ctype:
            return response.json() if response.content else None
        return response.text

    # -- convenience ----------------------------------------------------------------------

    def whoami(self) -> dict:
        return self.get("users/", op="whoami")

    def version(self) -> dict:
        return self.get("version/")
