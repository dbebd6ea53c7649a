"""Why did a machine fail? Collect MAAS's evidence and name one cause an operator can act on.

``classify`` is pure (state, events, log text in; a sentence out) so each rule is tested on
its own; ``collect`` does the I/O: the machine's events at DEBUG level, its
``error_description`` and ``status_message``, and the tail of the installation (or
commissioning) log (maas-api.md §5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasError, Triage
from racksmith.maas.model import Event, Machine, NodeStatus, parse_events

#: Lines of an installation log that say what broke (curtin prints these on failure).
_LOG_ERROR = re.compile(
    r"(error|failed|failure|exception|traceback|no space left|not found|timed out)", re.IGNORECASE
)
_TOOL_ERROR = re.compile(r"\b(error|fatal):\s", re.IGNORECASE)
_REVERT = re.compile(r"(aborting|reverting)", re.IGNORECASE)
_TIMEOUT = re.compile(r"timed out after", re.IGNORECASE)


def log_error_lines(log_text: str, limit: int = 5) -> list[str]:
    """The last few lines that look like errors, in log order."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if _LOG_ERROR.search(ln)]
    return hits[-limit:]


def _telling_line(lines: list[str]) -> str:
    """A tool's own ``prog: error: what`` line says more than the wrapper's "command failed"."""
    specific = [ln for ln in lines if _TOOL_ERROR.search(ln)]
    return (specific or lines)[-1]


def classify(
    phase: str,
    status: NodeStatus,
    events: Sequence[Event],
    *,
    error_description: str = "",
    log_text: str = "",
    reverted_to: NodeStatus | None = None,
    budget_note: str = "",
) -> str:
    """One sentence naming the cause, most specific evidence first.

    Order: a silent revert (power/BMC), MAAS's own timeout, the installer's error line, an
    ERROR event, ``error_description``, then the bare state. ``events`` are newest first.
    """
    errors = [e for e in events if e.level.upper() in ("ERROR", "CRITICAL")]
    if reverted_to is not None:
        reason = next((e.text for e in events if _REVERT.search(e.text)), "")
        return f"{phase} reverted to {reverted_to.display} without a failure status" + (
            f": {reason}"
            if reason
            else " (no event explains it; check the BMC and power parameters)"
        )
    if budget_note:
        last = events[0].text if events else "no events"
        return f"{budget_note}; last event: {last}"
    timeout = next((e.text for e in events if _TIMEOUT.search(e.text)), "")
    if timeout:
        return f"MAAS timed the machine out: {timeout}"
    log_lines = log_error_lines(log_text)
    if log_lines:
        lead = errors[0].text if errors else f"{phase} failed"
        line = _telling_line(log_lines)
        return lead if line in lead else f"{lead}: {line}"
    if errors:
        return errors[0].text
    if error_description:
        return error_description
    return f"{phase} ended in state {status.display} and MAAS recorded no error event"


def collect(
    client: MaasClient,
    machine: Machine,
    phase: str,
    *,
    reverted_to: NodeStatus | None = None,
    budget_note: str = "",
) -> Triage:
    """Gather events and the relevant log; a failure to gather is noted, never raised."""
    notes: list[str] = []
    unread: list[str] = []
    events: list[Event] = []
    try:
        events = parse_events(
            client.get(
                "events/", {"id": machine.system_id, "level": "DEBUG", "limit": 50}, op="query"
            )
        )
    except (MaasError, ValueError) as exc:
        notes.append(f"(could not read events: {exc})")
        unread.append(f"events: {client.redact(str(exc))}")
    result = "current-installation" if phase in ("deploy", "deploying") else "current-commissioning"
    log_text = ""
    try:
        body = client.get(f"nodes/{machine.system_id}/results/{result}/", op="download")
        log_text = body if isinstance(body, str) else ""
    except MaasError as exc:
        notes.append(f"(no {result} log: {getattr(exc, 'summary', exc)})")
    cause = classify(
        phase,
        machine.status,
        events,
        error_description=machine.error_description,
        log_text=log_text,
        reverted_to=reverted_to,
        budget_note=budget_note,
    )
    tail = [ln for ln in log_text.splitlines() if ln.strip()][-20:]
    return Triage(
        system_id=machine.system_id,
        hostname=machine.hostname,
        phase=phase,
        status_name=machine.status.display,
        cause=client.redact(cause),
        error_description=machine.error_description,
        status_message=machine.status_message,
        events=[client.redact(e.line()) for e in events[:20]] + notes,
        log_tail=[client.redact(ln) for ln in tail],
        unread=unread,
    )
