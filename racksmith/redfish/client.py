"""One BMC's Redfish conversation: login, bounded requests, logout that always happens.

Why a plain ``requests.Session`` and not the DMTF ``redfish`` library: that library retries
ten times by default (a refused port took 10 s to fail, a slow BMC 21 s), does not verify TLS
by default and GETs the service root in its constructor. At fleet scale every one of those
multiplies; here every retry, timeout and certificate decision is explicit and visible.

Rules this module keeps:

- TLS is verified (system store or ``ca_bundle``). ``verify=False`` is an explicit opt-out and
  logs a warning naming the BMC every time a client is built with it.
- Every request ends within the smaller of its own timeout (connect + read) and what is left
  of the per-BMC deadline, however slowly the BMC trickles bytes (:mod:`racksmith.transport`
  cuts the socket); the error says which of the two ran out. Answers larger than
  ``max_answer_bytes`` are refused before they are parsed. Sleeping for a backoff never runs
  past the deadline either.
- Retries are bounded and only where they are safe: GETs on connection errors, anything on
  503 (the BMC said it did not process the request), never on a read timeout.
- iDRAC's 503 ``RAC0218`` (session limit) gets a longer, jittered backoff so that a rack of
  collectors does not hammer a BMC whose session table is full.
- A session is always DELETEd, also after errors and deadline expiry (with its own short
  budget, since the deadline may be spent by then).
- Redirects are not followed (a token header would follow a redirect to another host).
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
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target, resolve
from racksmith.secrets import redact
from racksmith.transport import Deadline

__all__ = ["ClientOptions", "Deadline", "RedfishClient", "RequestStats", "Response"]

log = logging.getLogger(__name__)

SERVICE_ROOT = "/redfish/v1"
SESSIONS = "/redfish/v1/SessionService/Sessions"
EXPAND_QUERY = "$expand=.($levels=1)"  # iDRAC advertises ExpandQuery MaxLevels 1
SESSION_LIMIT_ID = "RAC0218"
MAX_PAGES = 64


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


def _short(exc: BaseException) -> str:
    """A one-line description of a transport error, without URLs' noise."""
    text = str(exc)
    for marker in ("Caused by ", "Failed to establish a new connection: "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return redact(text.strip("()'\" "))[:200]


class RedfishClient:
    """A context manager: ``with RedfishClient(...) as c: c.get(...)`` logs in and always out."""

    def __init__(
        self,
        target: Target,
        credentials: Credentials,
        options: ClientOptions | None = None,
        *,
        deadline: Deadline | None = None,
    ) -> None:
        if target.is_name and not target.address:
            target = resolve([target])[0]  # once; every request goes to that one address
        self.target = target
        self.options = options or ClientOptions()
        self.deadline = deadline or Deadline(None)
        self.stats = RequestStats()
        self._credentials = credentials
        self._base = target.url(self.options.scheme)
        self._token: str | None = None
        self._session_uri: str | None = None
        self._expand_ok = self.options.expand == "auto"
        self._http = transport.session()  # no proxies/.netrc by surprise; cuttable sockets
        self._http.headers.update({"Accept": "application/json", "OData-Version": "4.0"})
        if target.is_name:
            # Connect to the address resolved once; the name goes in Host, SNI and the
            # certificate check, so TLS still verifies the name the operator gave.
            self._http.headers["Host"] = str(target)
            pool_kw = self._http.get_adapter(self._base).poolmanager.connection_pool_kw
            pool_kw["server_hostname"] = target.host
            pool_kw["assert_hostname"] = target.host
        if self.options.scheme == "https":
            if not self.options.verify:
                log.warning("TLS verification is DISABLED for BMC %s (insecure opt-out)", target)
                # Said once per BMC above; urllib3 would repeat it on every request.
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
                self._http.verify = False
            else:
                self._http.verify = self.options.ca_bundle or True

    # -- context management ------------------------------------------------------------------

    def __enter__(self) -> RedfishClient:
        try:
            self.login()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Log out (if logged in) and release the connection pool; never raises."""
        try:
            self.logout()
        finally:
            self._http.close()

    # -- authentication ----------------------------------------------------------------------

    def login(self) -> None:
        if not self.target.address:
            raise RedfishError(
                ErrorKind.UNREACHABLE,
                f"{self.target.host}: the name does not resolve",
                bmc=str(self.target),
            )
        if self.options.auth == "basic":
            self._use_basic("configured")
            return
        body = {
            "UserName": self._credentials.username,
            "Password": self._credentials.password_value(),
        }
        response = self._send("POST", SESSIONS, json=body, idempotent=False)
        if response.status in (404, 405, 501):
            self._use_basic(f"no session service (HTTP {response.status})")
            return
        self._raise_for_auth(response, "login")
        token = response.headers.get("X-Auth-Token")
        if response.status not in (200, 201) or not token:
            if response.status in (200, 201, 204) and not token:
                # Some emulators accept the POST but issue no token: fall back, say so.
                self._use_basic(f"session service issued no token (HTTP {response.status})")
                return
            raise self._error_for(response, "login")
        self._token = token
        location = response.headers.get("Location")
        if not location and isinstance(response.body, dict):
            location = response.body.get("@odata.id")
        self._session_uri = location
        self._http.headers["X-Auth-Token"] = token
        self.stats.sessions_created += 1
        self.stats.auth = "session"

    def _use_basic(self, why: str) -> None:
        log.debug("%s: using Basic auth (%s)", self.target, why)
        # As UTF-8 bytes: requests would encode a str as Latin-1 and fail on other letters.
        self._http.auth = (
            self._credentials.username.encode("utf-8"),
            self._credentials.password_value().encode("utf-8"),
        )
        self.stats.auth = "basic"

    def logout(self) -> None:
        """DELETE the session, with its own budget: the per-BMC deadline may be spent already."""
        token, uri = self._token, self._session_uri
        self._token = self._session_uri = None
        self._http.headers.pop("X-Auth-Token", None)
        if not token:
            return
        if not uri:
            log.warning(
                "%s: BMC gave no session URI; the session expires on its idle timeout", self.target
            )
            return
        url = uri if uri.startswith("http") else self._base + uri
        try:
            resp = transport.request(
                self._http,
                "DELETE",
                url,
                headers={"X-Auth-Token": token},
                budget=self.options.logout_timeout,
                connect_timeout=self.options.connect_timeout,
                max_bytes=self.options.max_answer_bytes,
            )
            self._count("DELETE")
            log.debug("%s: DELETE session -> %s in %.2fs", self.target, resp.status, resp.elapsed)
            if resp.status in (200, 202, 204, 404):
                self.stats.sessions_deleted += 1  # 404: already gone
            else:
                log.warning(
                    "%s: logout answered HTTP %s; session may persist until idle timeout",
                    self.target,
                    resp.status,
                )
        except (requests.RequestException, transport.LimitReached) as exc:
            self._count("DELETE")
            log.warning(
                "%s: logout failed (%s); session may persist until idle timeout",
                self.target,
                _short(exc),
            )

    # -- requests ----------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        """GET a resource as a JSON object; every non-200 answer is a typed error."""
        response = self._send("GET", path, idempotent=True)
        self._raise_for_auth(response, f"GET {path}")
        if response.status != 200:
            raise self._error_for(response, f"GET {path}")
        if not isinstance(response.body, dict):
            # Redact the whole text before cutting it: a cut secret would no longer match.
            snippet = redact(response.text)[:80].replace("\n", " ")
            raise RedfishError(
                ErrorKind.MALFORMED,
                f"GET {path}: answer is not a JSON object ({snippet!r})",
                bmc=str(self.target),
                status=response.status,
            )
        return response.body

    def get_collection(self, path: str) -> list[dict[str, Any]]:
        """All members of a collection as documents, using ``$expand`` where the BMC has it.

        Falls back to one GET per member when the BMC rejects the query (sushy-static answers
        404) or ignores it (members come back as bare links), and follows ``nextLink`` pages.
        """
        doc: dict[str, Any] | None = None
        if self._expand_ok:
            try:
                doc = self.get(f"{path}?{EXPAND_QUERY}")
                self.stats.expand = True
            except RedfishError as exc:
                if exc.kind is not ErrorKind.HTTP or exc.status not in (400, 404, 405, 501):
                    raise
                log.debug(
                    "%s: $expand rejected (HTTP %s); fetching members one by one",
                    self.target,
                    exc.status,
                )
                self._expand_ok = False
                self.stats.expand = False
        if doc is None:
            doc = self.get(path)
        documents: list[dict[str, Any]] = []
        for _page in range(MAX_PAGES):
            members = doc.get("Members")
            if not isinstance(members, list):
                raise RedfishError(
                    ErrorKind.MALFORMED,
                    f"GET {path}: no Members list in a collection",
                    bmc=str(self.target),
                )
            for member in members:
                if not isinstance(member, dict) or not isinstance(member.get("@odata.id"), str):
                    raise RedfishError(
                        ErrorKind.MALFORMED,
                        f"GET {path}: a member is not a link",
                        bmc=str(self.target),
                    )
                if any(not key.startswith("@odata.") for key in member):
                    documents.append(member)
                else:
                    documents.append(self.get(member["@odata.id"]))
            next_link = doc.get("Members@odata.nextLink")
            if not next_link:
                return documents
            doc = self.get(next_link)
        raise RedfishError(
            ErrorKind.MALFORMED, f"GET {path}: more than {MAX_PAGES} pages", bmc=str(self.target)
        )

    def post(self, path: str, body: dict[str, Any]) -> Response:
        """POST (an action); the caller interprets the status (409 PSU501 is not an error)."""
        response = self._send("POST", path, json=body, idempotent=False)
        self._raise_for_auth(response, f"POST {path}")
        return response

    def patch(
        self, path: str, body: dict[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> Response:
        """PATCH; ``headers`` adds request headers (``If-Match`` for BMCs that want the ETag)."""
        response = self._send("PATCH", path, json=body, idempotent=False, headers=headers)
        self._raise_for_auth(response, f"PATCH {path}")
        return response

    # -- internals ---------------------------------------------------------------------------

    def _count(self, method: str) -> None:
        self.stats.requests += 1
        self.stats.by_method[method] = self.stats.by_method.get(method, 0) + 1

    def _budget(self, what: str) -> tuple[float, str]:
        """Seconds this request may take, and the name of the limit that sets it."""
        own = self.options.connect_timeout + self.options.read_timeout
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise RedfishError(
                ErrorKind.TIMEOUT,
                f"{what}: per-BMC deadline of {self.deadline.seconds:g}s exceeded",
                bmc=str(self.target),
            )
        if remaining < own:
            return remaining, f"per-BMC deadline of {self.deadline.seconds:g}s"
        return own, (
            f"request timeout of {own:g}s (connect {self.options.connect_timeout:g}s"
            f" + read {self.options.read_timeout:g}s)"
        )

    def _timeout_error(self, what: str, event: str, limit: str) -> RedfishError:
        return RedfishError(
            ErrorKind.TIMEOUT, f"{what}: {event}: the {limit} ran out", bmc=str(self.target)
        )

    def _sleep(self, seconds: float, error: RedfishError) -> None:
        """Back off, unless the deadline would expire first (then give up with ``error``)."""
        if seconds >= self.deadline.remaining():
            raise error
        time.sleep(seconds)

    def _backoff(self, base: float, attempt: int, retry_after: str | None = None) -> float:
        if retry_after and retry_after.isdigit():
            return min(float(retry_after), 60.0)
        return base * (2**attempt) * random.uniform(0.8, 1.2)  # noqa: S311 (jitter, not crypto)

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        idempotent: bool,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        url = path if path.startswith("http") else self._base + path
        what = f"{method} {path}"
        attempt = busy_attempt = 0
        while True:
            budget, limit = self._budget(what)
            started = time.monotonic()
            try:
                answer = transport.request(
                    self._http,
                    method,
                    url,
                    json=json,
                    headers=dict(headers) if headers else None,
                    budget=budget,
                    connect_timeout=self.options.connect_timeout,
                    read_timeout=self.options.read_timeout,
                    max_bytes=self.options.max_answer_bytes,
                )
            except transport.BudgetExpired as exc:
                self._count(method)
                # Not retried: a slow BMC asked again only gets slower.
                raise self._timeout_error(
                    what, f"no complete answer after {exc.elapsed:.1f}s ({exc.stage})", limit
                ) from None
            except transport.AnswerTooLarge as exc:
                self._count(method)
                raise RedfishError(
                    ErrorKind.MALFORMED,
                    f"{what}: {exc} (max_answer_bytes); refused unread",
                    bmc=str(self.target),
                ) from None
            except requests.exceptions.SSLError as exc:
                self._count(method)
                raise RedfishError(
                    ErrorKind.TLS, f"{what}: TLS failed: {_tls_reason(exc)}", bmc=str(self.target)
                ) from None
            except requests.exceptions.ConnectTimeout:
                self._count(method)
                connect_limit = (
                    limit
                    if budget < self.options.connect_timeout
                    else f"connect timeout of {self.options.connect_timeout:g}s"
                )
                error = self._timeout_error(what, "no connection", connect_limit)
                if attempt >= self.options.retries:
                    raise error from None
            except requests.exceptions.ReadTimeout:
                self._count(method)
                raise self._timeout_error(
                    what, "no answer", f"read timeout of {self.options.read_timeout:g}s"
                ) from None
            except requests.exceptions.ConnectionError as exc:
                self._count(method)
                kind = _classify_connection_error(exc)
                error = RedfishError(
                    kind, f"{what}: {_describe(kind)} ({_short(exc)})", bmc=str(self.target)
                )
                # Refused: nothing was sent, safe to retry. Reset: only if the request is safe.
                if attempt >= self.options.retries or (kind is ErrorKind.RESET and not idempotent):
                    raise error from None
            except requests.RequestException as exc:
                self._count(method)
                raise RedfishError(
                    ErrorKind.HTTP, f"{what}: {_short(exc)}", bmc=str(self.target)
                ) from None
            else:
                self._count(method)
                response = _response(answer)
                log.debug(
                    "%s: %s -> %s in %.2fs",
                    self.target,
                    what,
                    response.status,
                    time.monotonic() - started,
                )
                if response.status != 503:
                    return response
                ids = response.message_ids()
                limit = any(SESSION_LIMIT_ID in i for i in ids)
                error = RedfishError(
                    ErrorKind.BUSY,
                    f"{what}: HTTP 503 "
                    f"{'RAC0218 session limit reached' if limit else response.message()}"
                    f" after {busy_attempt + 1} attempt(s)",
                    bmc=str(self.target),
                    status=503,
                    message_id=next(iter(ids), None),
                )
                if busy_attempt >= self.options.busy_retries:
                    raise error
                delay = self._backoff(
                    self.options.busy_backoff, busy_attempt, response.headers.get("Retry-After")
                )
                log.info(
                    "%s: %s busy (503%s); backing off %.1fs",
                    self.target,
                    what,
                    " RAC0218" if limit else "",
                    delay,
                )
                busy_attempt += 1
                self.stats.retries += 1
                self._sleep(delay, error)
                continue
            delay = self._backoff(self.options.backoff, attempt)
            log.debug(
                "%s: %s failed (%s); retrying in %.1fs", self.target, what, error.reason, delay
            )
            attempt += 1
            self.stats.retries += 1
            self._sleep(delay, error)

    def _raise_for_auth(self, response: Response, what: str) -> None:
        if response.status in (401, 403):
            raise RedfishError(
                ErrorKind.AUTH,
                f"{what}: HTTP {response.status} "
                f"({'credentials rejected' if response.status == 401 else 'not permitted'})",
                bmc=str(self.target),
                status=response.status,
            )

    def _error_for(self, response: Response, what: str) -> RedfishError:
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


def _tls_reason(exc: BaseException) -> str:
    """``certificate verify failed: unable to get local issuer certificate`` from urllib3's
    wrapping."""
    match = re.search(r"\[SSL: [A-Z_]+\] ([^(]+?)\s*\(_ssl", str(exc))
    return match.group(1) if match else _short(exc)


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
