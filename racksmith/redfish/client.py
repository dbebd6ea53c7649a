"""One BMC's Redfish conversation: login, bounded requests, logout that always happens.

Why a plain ``requests.Session`` and not the DMTF ``redfish`` library: that library retries
ten times by default (a refused port took 10 s to fail, a slow BMC 21 s), does not verify TLS
by default and GETs the service root in its constructor. At fleet scale every one of those
multiplies; here every retry, timeout and certificate decision is explicit and visible.

The client is three parts, each with its own rules:

- :mod:`racksmith.redfish.connection`: the HTTP session's address and trust settings (TLS
  verified unless opted out, names pinned to the address resolved once, redirects never
  followed), and authentication (a Redfish session or Basic, always logged out).
- :mod:`racksmith.redfish.sender`: requests, retries and deadlines (every request bounded by
  its timeout and the per-BMC deadline, retried only where safe, answers size-capped).
- this module: what callers use, resources and collections (``$expand`` where the BMC has
  it, ``nextLink`` pages), and the context manager that ties login to logout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from racksmith.credentials import BmcCredentials
from racksmith.redfish.connection import SESSIONS, Authentication, open_http
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.sender import ClientOptions, RequestStats, Response, Sender
from racksmith.redfish.targets import Target, resolve
from racksmith.secrets import redact
from racksmith.transport import Deadline

__all__ = ["SESSIONS", "ClientOptions", "Deadline", "RedfishClient", "RequestStats", "Response"]

log = logging.getLogger(__name__)

SERVICE_ROOT = "/redfish/v1"
EXPAND_QUERY = "$expand=.($levels=1)"  # iDRAC advertises ExpandQuery MaxLevels 1
MAX_PAGES = 64


class RedfishClient:
    """A context manager: ``with RedfishClient(...) as c: c.get(...)`` logs in and always out."""

    def __init__(
        self,
        target: Target,
        credentials: BmcCredentials,
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
        self._expand_ok = self.options.expand == "auto"
        self._http, base = open_http(target, self.options)
        self._sender = Sender(target, self._http, base, self.options, self.deadline, self.stats)
        self._auth = Authentication(self._sender, credentials)

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

    def login(self) -> None:
        self._auth.login()

    def logout(self) -> None:
        self._auth.logout()

    # -- requests ----------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        """GET a resource as a JSON object; every non-200 answer is a typed error."""
        response = self._sender.send("GET", path, idempotent=True)
        self._sender.raise_for_auth(response, f"GET {path}")
        if response.status != 200:
            raise self._sender.error_for(response, f"GET {path}")
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

    def get_response(self, path: str) -> Response:
        """GET whose status the caller reads (a task monitor answers 202 while it runs, 404 once
        the task is gone); only 401/403 raise."""
        response = self._sender.send("GET", path, idempotent=True)
        self._sender.raise_for_auth(response, f"GET {path}")
        return response

    def post_multipart(self, path: str, files: Mapping[str, Any]) -> Response:
        """POST a multipart/form-data body (``files`` as ``requests`` takes it: name -> (file
        name, bytes or file, content type)): a firmware push to ``MultipartHttpPushUri``. Never
        retried after the BMC may have received it."""
        response = self._sender.send("POST", path, idempotent=False, files=files)
        self._sender.raise_for_auth(response, f"POST {path}")
        return response

    def post(self, path: str, body: dict[str, Any]) -> Response:
        """POST (an action); the caller interprets the status (409 PSU501 is not an error)."""
        response = self._sender.send("POST", path, json=body, idempotent=False)
        self._sender.raise_for_auth(response, f"POST {path}")
        return response

    def patch(
        self, path: str, body: dict[str, Any], *, headers: Mapping[str, str] | None = None
    ) -> Response:
        """PATCH; ``headers`` adds request headers (``If-Match`` for BMCs that want the ETag)."""
        response = self._sender.send("PATCH", path, json=body, idempotent=False, headers=headers)
        self._sender.raise_for_auth(response, f"PATCH {path}")
        return response
