"""Typed errors for everything that can go wrong talking to MAAS.

Callers branch on the type (a 409 is a state problem, a 503 with ``Retry-After`` is worth
waiting for, a 401 means the key is wrong), and operators read the message. Every message and
body stored here has already been scrubbed of the API key by the client, because MAAS itself
echoes the token key in some 401 bodies (``Invalid access token: <tk>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


class MaasError(Exception):
    """Base class: any failure of a MAAS operation. The message never contains the API key."""


class MaasConfigError(MaasError):
    """The URL, key or a setting is malformed; the message names the input, never its value."""


class MaasMalformedError(MaasError):
    """MAAS (or whatever answered at its URL) sent something that is not the API's answer:
    HTML, JSON of the wrong shape, a record missing a required field, an oversized body."""


class MaasTransportError(MaasError):
    """No HTTP answer: connection refused, reset, or a connect/read timeout."""

    def __init__(self, method: str, path: str, reason: str, *, timed_out: bool = False):
        self.method = method
        self.path = path
        self.reason = reason
        self.timed_out = timed_out
        super().__init__(f"{method} {path}: {reason}")


class MaasHTTPError(MaasError):
    """MAAS answered with a non-2xx status. ``body`` is the (redacted, truncated) response."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        body: str,
        *,
        retry_after: float | None = None,
        field_errors: dict[str, list[str]] | None = None,
    ):
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.field_errors = field_errors or {}
        super().__init__(f"{method} {path} -> HTTP {status}: {self.summary}")

    @property
    def summary(self) -> str:
        """One line: field errors as ``field: message``, else the first line of the body."""
        if self.field_errors:
            return "; ".join(f"{k}: {' '.join(v)}" for k, v in self.field_errors.items())
        text = self.body.strip()
        if text.lstrip().lower().startswith("<"):
            return "(HTML error page)"
        return text.splitlines()[0][:300] if text else "(empty body)"


class MaasAuthError(MaasHTTPError):
    """401 (bad key, expired timestamp, reused nonce) or 403 (not allowed for this user)."""


class MaasBadRequest(MaasHTTPError):
    """400: a parameter was rejected; ``field_errors`` holds MAAS's per-field messages."""


class MaasNotFound(MaasHTTPError):
    """404: no such machine, block device, tag..."""


class MaasConflict(MaasHTTPError):
    """409: the machine is in the wrong state for this operation (``Invalid transition``)."""


class MaasServerError(MaasHTTPError):
    """5xx: MAAS or its rack controller failed; a 504 may hide an operation that succeeded."""


def http_error_class(status: int) -> type[MaasHTTPError]:
    if status in (401, 403):
        return MaasAuthError
    return {400: MaasBadRequest, 404: MaasNotFound, 409: MaasConflict}.get(
        status, MaasServerError if status >= 500 else MaasHTTPError
    )


@dataclass
class Triage:
    """What MAAS says about a machine that failed: the evidence and one named cause."""

    system_id: str
    hostname: str
    phase: str
    status_name: str
    cause: str
    error_description: str = ""
    status_message: str = ""
    events: list[str] = field(default_factory=list)
    log_tail: list[str] = field(default_factory=list)
    #: Evidence MAAS did not give in a usable form (the events answer); ``maas triage`` exits 1
    unread: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "system_id": self.system_id,
            "hostname": self.hostname,
            "phase": self.phase,
            "status_name": self.status_name,
            "cause": self.cause,
            "error_description": self.error_description,
            "status_message": self.status_message,
            "events": list(self.events),
            "log_tail": list(self.log_tail),
            "unread": list(self.unread),
        }


class MachineFailed(MaasError):
    """A lifecycle step ended in a failure state, a revert, or ran past its budget."""

    def __init__(self, triage: Triage):
        self.triage = triage
        super().__init__(
            f"{triage.hostname or triage.system_id}: {triage.phase} failed: {triage.cause}"
        )


class MachineStateError(MaasError):
    """The machine is in a state from which the requested step must not proceed on its own."""


class BootDiskError(MaasError):
    """No block device, or more than one, matches the boot-disk rule (names the candidates)."""


class PacingRefused(MaasError):
    """The fleet's power pacing would hold this power action (commission, deploy, release)
    longer than its budget: the action was not sent (:mod:`racksmith.pacing`)."""
