"""Why a BMC failed, as a small closed set of kinds plus a human reason.

The kind decides where a host lands (an inventory group, an exit code); the reason says what
an operator should look at. Reasons are built by racksmith, never copied from request
headers or bodies, and pass through :func:`racksmith.secrets.redact` so that a
secret cannot reach a log, a cache or a report through an exception.
"""

from __future__ import annotations

import enum


class ErrorKind(str, enum.Enum):
    """What went wrong, coarse enough to act on."""

    UNREACHABLE = "unreachable"  # refused, no route, DNS: nothing answered
    RESET = "reset"  # the BMC dropped the connection mid-conversation
    TLS = "tls"  # the certificate did not verify (or the handshake failed)
    TIMEOUT = "timeout"  # no answer within the per-request timeout or the per-BMC deadline
    BUSY = "busy"  # 503 (e.g. iDRAC RAC0218 session limit) that outlived our backoff
    AUTH = "auth_failed"  # 401/403: wrong credentials or no privilege
    MALFORMED = "malformed"  # the BMC answered, but not with usable Redfish
    INCOMPLETE = "incomplete"  # valid Redfish, but a required fact is missing
    HTTP = "http_error"  # any other unexpected HTTP status
    DUPLICATE = "duplicate"  # identity (MAC, serial, tag) also reported by another BMC
    UNSUPPORTED = "unsupported"  # the BMC does not offer what an action needs


#: The inventory group each kind maps to (docs/contracts.md: a fixed set of failure groups).
GROUP_BY_KIND: dict[ErrorKind, str] = {
    ErrorKind.UNREACHABLE: "bmc_unreachable",
    ErrorKind.RESET: "bmc_unreachable",
    ErrorKind.TLS: "bmc_unreachable",
    ErrorKind.BUSY: "bmc_unreachable",
    ErrorKind.HTTP: "bmc_unreachable",
    ErrorKind.UNSUPPORTED: "bmc_unreachable",
    ErrorKind.TIMEOUT: "bmc_timeout",
    ErrorKind.AUTH: "bmc_auth_failed",
    ErrorKind.MALFORMED: "bmc_malformed",
    ErrorKind.INCOMPLETE: "bmc_malformed",
    ErrorKind.DUPLICATE: "bmc_duplicate",
}


class RedfishError(Exception):
    """A failure talking to one BMC. ``str()`` is safe to log and to show."""

    def __init__(
        self,
        kind: ErrorKind,
        reason: str,
        *,
        bmc: str | None = None,
        status: int | None = None,
        message_id: str | None = None,
    ) -> None:
        self.kind = kind
        self.reason = reason
        self.bmc = bmc
        self.status = status
        self.message_id = message_id
        super().__init__(reason)

    def __str__(self) -> str:
        where = f"{self.bmc}: " if self.bmc else ""
        return f"{where}{self.kind.value}: {self.reason}"

    @property
    def group(self) -> str:
        return GROUP_BY_KIND[self.kind]
