"""The connection half of the Redfish client: which address and trust settings the HTTP session
uses, and who we are to the BMC (a Redfish session, or Basic auth), logged out without fail.

:mod:`racksmith.redfish.sender` holds the other half (requests, retries, deadlines). Rules kept
here:

- TLS is verified (system store or ``ca_bundle``). ``verify=False`` is an explicit opt-out and
  logs a warning naming the BMC every time a client is built with it.
- A BMC given by name is contacted at the address it resolved to once; the name goes in Host,
  SNI and the certificate check, so TLS still verifies the name the operator gave.
- A session is always DELETEd, also after errors and when the requests ran out of time: once
  a session exists, the smaller of ``logout_timeout`` and half the per-BMC deadline is kept
  for the DELETE, whose budget is what is left of the deadline, so the logout too ends inside
  the deadline (issue 22: a BMC trickling the GET and the DELETE held a 5 s run for 8.3 s).
  A logout with no time left is abandoned, and the log says so.
- A session ``Location`` is held to the one-origin rule before it is kept: the DELETE carries
  the token, and goes to this BMC or nowhere.
- The password is read from :class:`~racksmith.credentials.BmcCredentials` only where the
  login body or the Basic auth header is built.
"""

from __future__ import annotations

import logging

import requests
import urllib3

from racksmith import transport
from racksmith.credentials import BmcCredentials
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.sender import ClientOptions, Sender, short
from racksmith.redfish.targets import Target

log = logging.getLogger("racksmith.redfish.client")

SESSIONS = "/redfish/v1/SessionService/Sessions"


def open_http(target: Target, options: ClientOptions) -> tuple[requests.Session, str]:
    """A ``requests.Session`` for one BMC with its trust settings, and the base URL."""
    base = target.url(options.scheme)
    http = transport.session()  # no proxies/.netrc by surprise; cuttable sockets
    http.headers.update({"Accept": "application/json", "OData-Version": "4.0"})
    if target.is_name:
        http.headers["Host"] = str(target)
        pool_kw = http.get_adapter(base).poolmanager.connection_pool_kw
        pool_kw["server_hostname"] = target.host
        pool_kw["assert_hostname"] = target.host
    if options.scheme == "https":
        if not options.verify:
            log.warning("TLS verification is DISABLED for BMC %s (insecure opt-out)", target)
            # Said once per BMC above; urllib3 would repeat it on every request.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            http.verify = False
        else:
            http.verify = options.ca_bundle or True
    return http, base


class Authentication:
    """Login (a session, or Basic when configured or when the BMC has no session service)
    and logout for one BMC, over the :class:`Sender` that carries every other request."""

    def __init__(self, sender: Sender, credentials: BmcCredentials) -> None:
        self.sender = sender
        self._credentials = credentials
        self._token: str | None = None
        self._session_uri: str | None = None

    @property
    def target(self) -> Target:
        return self.sender.target

    def login(self) -> None:
        if not self.target.address:
            raise RedfishError(
                ErrorKind.UNREACHABLE,
                f"{self.target.host}: the name does not resolve",
                bmc=str(self.target),
            )
        if self.sender.options.auth == "basic":
            self._use_basic("configured")
            return
        body = {
            "UserName": self._credentials.username,
            "Password": self._credentials.password_value(),
        }
        response = self.sender.send("POST", SESSIONS, json=body, idempotent=False)
        if response.status in (404, 405, 501):
            self._use_basic(f"no session service (HTTP {response.status})")
            return
        self.sender.raise_for_auth(response, "login")
        token = response.headers.get("X-Auth-Token")
        if response.status not in (200, 201) or not token:
            if response.status in (200, 201, 204) and not token:
                # Some emulators accept the POST but issue no token: fall back, say so.
                self._use_basic(f"session service issued no token (HTTP {response.status})")
                return
            raise self.sender.error_for(response, "login")
        location = response.headers.get("Location")
        if not location and isinstance(response.body, dict):
            location = response.body.get("@odata.id")
        if location:
            try:  # one origin: the DELETE (with the token) must go to this BMC only
                self.sender.url(location)
            except RedfishError:
                log.warning(
                    "%s: session Location refused; the session is left to the BMC's idle timeout",
                    self.target,
                )
                raise
        self._token = token
        self._session_uri = location
        if self.sender.deadline.seconds is not None:  # the DELETE, too, inside the deadline
            half = self.sender.deadline.seconds / 2
            self.sender.logout_reserve = min(self.sender.options.logout_timeout, half)
        self.sender.http.headers["X-Auth-Token"] = token
        self.sender.stats.sessions_created += 1
        self.sender.stats.auth = "session"

    def _use_basic(self, why: str) -> None:
        log.debug("%s: using Basic auth (%s)", self.target, why)
        # As UTF-8 bytes: requests would encode a str as Latin-1 and fail on other letters.
        self.sender.http.auth = (
            self._credentials.username.encode("utf-8"),
            self._credentials.password_value().encode("utf-8"),
        )
        self.sender.stats.auth = "basic"

    def logout(self) -> None:
        """DELETE the session within what is left of the per-BMC deadline (at most
        ``logout_timeout``); abandoned, and logged, when nothing is left."""
        token, uri = self._token, self._session_uri
        self._token = self._session_uri = None
        self.sender.http.headers.pop("X-Auth-Token", None)
        if not token:
            return
        if not uri:
            log.warning(
                "%s: BMC gave no session URI; the session expires on its idle timeout", self.target
            )
            return
        options = self.sender.options
        # Inside the per-BMC deadline (issue 22: a trickled DELETE held a 5 s run for 8.3 s).
        left = self.sender.deadline.remaining()
        budget = min(options.logout_timeout, left)
        limit = "logout_timeout" if budget == options.logout_timeout else "per-BMC deadline"
        if budget <= 0.01:
            log.warning(
                "%s: logout abandoned at the per-BMC deadline of %gs; the session expires on "
                "the BMC's idle timeout",
                self.target,
                self.sender.deadline.seconds,
            )
            return
        try:
            resp = transport.request(
                self.sender.http,
                "DELETE",
                self.sender.url(uri),
                headers={"X-Auth-Token": token},
                budget=budget,
                connect_timeout=options.connect_timeout,
                max_bytes=options.max_answer_bytes,
            )
            self.sender.count("DELETE")
            log.debug("%s: DELETE session -> %s in %.2fs", self.target, resp.status, resp.elapsed)
            if resp.status in (200, 202, 204, 404):
                self.sender.stats.sessions_deleted += 1  # 404: already gone
            else:
                log.warning(
                    "%s: logout answered HTTP %s; session may persist until idle timeout",
                    self.target,
                    resp.status,
                )
        except (requests.RequestException, transport.LimitReached) as exc:
            self.sender.count("DELETE")
            log.warning(
                "%s: logout failed within the %s (%s); session may persist until idle timeout",
                self.target,
                limit,
                short(exc),
            )
