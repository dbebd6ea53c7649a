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

import errno
import ipaddress
import math
import re
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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

# -- where a request may go: addresses, URLs, one origin -------------------------------------
#
# A password that opens every BMC, or a key that can erase every disk, goes only where the
# operator pointed, decided here and never by the system resolver or a URL parser's guess:
#
# - a host that reads as a number in any base (``127.1``, ``0x7f000001``, ``017700000001``,
#   with or without a trailing dot) is an address attempt: it must be a dotted quad, else it
#   is refused; the resolver would quietly turn it into an address (WHATWG's "ends in a
#   number" rule, plus whatever ``inet_aton`` takes);
# - the unspecified addresses (``0.0.0.0``, ``::``) mean "this host" to a connect: refused;
# - a URL carries no userinfo, no backslash, no control character, an ASCII port;
# - every request of a conversation goes to the origin (scheme, host, port) it started with;
#   a link from an answer is a path on that origin, or it is refused before anything is sent.

_LDH_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = re.compile(rf"(?=.{{1,253}}$){_LDH_LABEL}(?:\.{_LDH_LABEL})*\.?", re.ASCII)
_NUMBER = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*", re.ASCII)
_PORT = re.compile(r"[0-9]{1,5}", re.ASCII)
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")


class AddressError(ValueError):
    """A host or URL that does not name exactly one place; the message quotes it."""


class OriginError(ValueError):
    """A link that would take a request (and its credentials) off the endpoint's origin."""


def numeric_host(host: str) -> bool:
    """True when ``host`` reads as a number to some resolver or URL parser: its last label
    (trailing dots ignored) is decimal, octal or ``0x`` hex, or ``inet_aton`` accepts it.
    Such a host is never a DNS name (RFC 1123 2.1); only a canonical dotted quad is usable."""
    text = host.rstrip(".")
    if not text:
        return False
    if _NUMBER.fullmatch(text.rsplit(".", 1)[-1]):
        return True
    try:
        socket.inet_aton(text)
    except (OSError, ValueError):  # ValueError: an embedded NUL
        return False
    return True


def check_host(host: str, what: str, *, allow_names: bool = True) -> str:
    """``host`` (IPv6 without brackets) if it names exactly one place, else
    :class:`AddressError` naming ``what``: a dotted quad, an IPv6 address, or (when allowed)
    an ASCII DNS name that is not numeric. Unspecified addresses are refused."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        if getattr(address, "ipv4_mapped", None) is not None:
            address = address.ipv4_mapped
        if address.is_unspecified:
            raise AddressError(
                f"{what}: {host!r} is the unspecified address (it means 'this host' to a "
                "connect); give the endpoint's own address"
            )
        return host
    if numeric_host(host) or not host.isascii():
        raise AddressError(
            f"{what}: {host!r} is not a dotted-quad IPv4 address (four decimal octets 0-255) "
            "and is never treated as a host name"
        )
    if not HOSTNAME.fullmatch(host):
        raise AddressError(f"{what}: {host!r} is not an address or a host name")
    if not allow_names:
        raise AddressError(f"{what}: {host!r}: host names are disabled; give an address")
    return host


@dataclass(frozen=True)
class Origin:
    """Scheme, host and port of an endpoint: where every request of one conversation goes."""

    scheme: str
    host: str  # lower case; IPv6 without brackets
    port: int

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}"


def _port_of(netloc: str, scheme: str, what: str, text: str) -> int:
    tail = netloc.rsplit("]", 1)[-1] if netloc.startswith("[") else netloc
    _, colon, port = tail.rpartition(":") if ":" in tail else ("", "", "")
    if not colon or port == "":
        return 443 if scheme == "https" else 80
    if not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise AddressError(f"{what}: {text!r}: the port {port!r} is not a number 1-65535")
    return int(port)


def check_url(url: str, what: str, *, allow_names: bool = True) -> Origin:
    """The origin of an endpoint URL (MAAS_URL, the UFM URL), by the rules above: http or
    https, a host by :func:`check_host`, no userinfo, an ASCII port, nothing unprintable."""
    text = url.strip()
    if _UNSAFE.search(text):
        raise AddressError(f"{what}: {url!r} holds a space, a control character or a backslash")
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise AddressError(f"{what}: {url!r} must be http://HOST[:PORT]/... or https://...")
    if "@" in parts.netloc:
        raise AddressError(
            f"{what}: {url!r} carries a user name or password (user@host): put "
            "credentials in the credentials file, never in the URL"
        )
    scheme = parts.scheme.lower()
    host = (
        parts.netloc[1:].partition("]")[0]
        if parts.netloc.startswith("[")
        else (parts.netloc.rpartition(":")[0] if ":" in parts.netloc else parts.netloc)
    )
    if parts.netloc.startswith("["):
        tail = parts.netloc.partition("]")[2]
        if not _is_ipv6(host) or (tail and not tail.startswith(":")):
            raise AddressError(f"{what}: {url!r}: expected [IPv6] or [IPv6]:PORT")
    port = _port_of(parts.netloc, scheme, what, url)
    check_host(host, f"{what} {url!r}", allow_names=allow_names)
    return Origin(scheme, host.lower().rstrip("."), port)


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False


def link_url(origin: Origin, link: object, what: str, *, aliases: tuple[str, ...] = ()) -> str:
    """The URL to request for ``link`` (a path from our own code or a link from an answer:
    ``@odata.id``, ``nextLink``, ``Location``) on ``origin``, never anywhere else.

    A path must start with one ``/``. An absolute link is accepted only when it names this
    very origin (``aliases``: other spellings of its host, e.g. the name an address was
    resolved from) and is reduced to its path. Everything else (another host or port, ``http``
    on an https endpoint, ``//host``, ``@host``, userinfo, a relative path, a backslash, a
    control character) raises :class:`OriginError` naming ``what`` and the link, before any
    request is built: the credentials go with every request of the conversation.
    """
    if not isinstance(link, str) or not link:
        raise OriginError(f"{what}: link {link!r} is not a path")
    if _UNSAFE.search(link):
        raise OriginError(
            f"{what}: link {link[:200]!r} holds a space, a control character or a backslash; "
            "refused, nothing sent"
        )
    path = link
    if not link.startswith("/"):
        parts = urlsplit(link)
        if "@" in parts.netloc:
            raise OriginError(
                f"{what}: link {link[:200]!r} carries userinfo (user@host); refused, nothing sent"
            )
        if not parts.scheme or not parts.netloc:
            raise OriginError(
                f"{what}: link {link[:200]!r} does not start with '/' (it would be glued onto "
                f"{origin}); refused, nothing sent"
            )
        try:
            other = check_url(link, what)
        except AddressError as exc:
            raise OriginError(f"{exc}; link refused, nothing sent") from None
        hosts = {origin.host, *(a.lower().rstrip(".") for a in aliases)}
        if other.scheme != origin.scheme or other.port != origin.port or other.host not in hosts:
            raise OriginError(
                f"{what}: link {link[:200]!r} leaves {origin} (it names {other}); the "
                "credentials go to no other origin: refused, nothing sent"
            )
        path = link[len(parts.scheme) + 3 + len(parts.netloc) :] or "/"
    if path.startswith("//"):
        raise OriginError(
            f"{what}: link {link[:200]!r} is scheme-relative (//host names another host); "
            "refused, nothing sent"
        )
    if not path.startswith("/"):
        path = "/" + path  # an absolute link with a query or fragment only
    url = f"{origin.scheme}://{origin.netloc}{path}"
    built = urlsplit(url)
    if built.netloc != origin.netloc:  # belt and braces: the URL we send parses to our origin
        raise OriginError(f"{what}: link {link[:200]!r} does not stay on {origin}; refused")
    return url


def describe_connection_error(exc: BaseException, url: str) -> str:
    """``connection to HOST:PORT failed: [Errno N] text (ENAME)`` for a failure to reach
    ``url``: the address and the system's own error, found down the exception chain
    (requests wraps urllib3, which wraps the socket's ``OSError``), rather than the wrapper's
    class name, which says nothing an operator can act on."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:
        port = default
    host = parts.hostname or "?"
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    seen: set[int] = set()
    current: BaseException | None = exc
    innermost = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        innermost = current
        if isinstance(current, OSError) and isinstance(current.errno, int):
            name = errno.errorcode.get(current.errno) or _GAI_NAMES.get(current.errno, "")
            text = current.strerror or str(current)
            suffix = f" ({name})" if name else ""
            return f"connection to {where} failed: [Errno {current.errno}] {text}{suffix}"
        nxt = current.__cause__ or current.__context__ or getattr(current, "reason", None)
        if nxt is None and current.args and isinstance(current.args[0], BaseException):
            nxt = current.args[0]
        current = nxt if isinstance(nxt, BaseException) else None
    detail = str(innermost).split(": ", 1)[-1][:200] or type(innermost).__name__
    return f"connection to {where} failed: {type(innermost).__name__}: {detail}"


_GAI_NAMES = {
    getattr(socket, n): n
    for n in ("EAI_NONAME", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA", "EAI_SERVICE")
    if hasattr(socket, n)
}


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
        try:
            return super().request(*args, **kwargs)  # type: ignore[misc]
        finally:
            if holder is not None:
                # Kept apart from the connection: an answer with "Connection: close" makes
                # http.client drop conn.sock while the body is still being read, and the
                # watchdog then had nothing to cut (a trickled body ran for 21 s of a 2 s
                # deadline).
                holder.sock = getattr(self, "sock", None)


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
        self.sock: socket.socket | None = None
        self.stage = "connecting"
        self.expired = threading.Event()
        self.done = threading.Event()


def _watch(holder: _Holder, budget: float) -> None:
    if holder.done.wait(budget):
        return
    holder.expired.set()
    # Keep cutting until the request gives up: the socket may not exist yet (connecting).
    while not holder.done.is_set():
        sock = holder.sock or getattr(holder.conn, "sock", None)
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
