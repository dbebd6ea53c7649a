"""Hosts per phase and state, from ansible-runner's event stream. Pure: no I/O, no clock.

An event is the dict ansible-runner hands its ``event_handler`` (``event``, ``event_data``,
``stdout``). A play's phase comes from its name (``Phase deploy: ...``; the reprovision
playbook's own plays name the phase too). A host's state in a phase is the worst outcome of
its tasks there (unreachable > failed > changed > ok > skipped), shown as ``running`` while a
task is in flight on it and nothing failed yet. A failed task whose errors are ignored counts
as ok, as in the report callback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from racksmith.report import PHASES
from racksmith.secrets import redact

#: Columns of the table, in order.
STATES = ("running", "ok", "changed", "failed", "unreachable", "skipped")
_RANK = {"skipped": 0, "ok": 1, "changed": 2, "failed": 3, "unreachable": 4}
_ENDED = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Lines of ansible-playbook's own output worth passing on (the rest is in the event stream):
#: errors, warnings, and discovery progress from the Redfish inventory plugin.
_PASS_ON = re.compile(r"^(ERROR!|\[ERROR\]|\[WARNING\]|discover: )")
OTHER = "other"


def phase_of_play(name: str) -> str:
    """``Phase deploy: install the OS`` -> ``deploy``; a play naming no phase -> ``other``."""
    low = name.lower()
    match = re.match(r"\s*phase\s+(\w+)", low)
    if match and match.group(1) in PHASES:
        return match.group(1)
    return next((p for p in PHASES if re.search(rf"\b{p}", low)), OTHER)


def _message(result: Mapping[str, Any]) -> str:
    if result.get("censored"):
        return "details hidden (no_log)"
    for key in ("msg", "stderr", "reason", "module_stderr"):
        if result.get(key):
            return redact(str(result[key]).strip().splitlines()[0])[:300]
    return "failed without a message"


@dataclass
class HostState:
    worst: str | None = None  # the worst ended outcome, None before any task ended
    running: bool = False

    @property
    def state(self) -> str:
        if self.worst in ("failed", "unreachable") or not self.running:
            return self.worst or "running"
        return "running"


@dataclass
class RunTable:
    """Feed it events in order; read :meth:`counts`, :meth:`render` and the lines to show."""

    phases: dict[str, dict[str, HostState]] = field(default_factory=dict)
    phase: str = OTHER
    task: str = ""
    stats: dict[str, dict[str, int]] | None = None

    def feed(self, event: Mapping[str, Any]) -> list[str]:
        """Apply one event; return the lines to show at once (a phase starting, a host
        failing, ansible-playbook's errors and warnings, discovery progress)."""
        kind = str(event.get("event", ""))
        data = event.get("event_data") or {}
        if kind == "playbook_on_play_start":
            name = str(data.get("play") or data.get("name") or "")
            self.phase = phase_of_play(name)
            self.phases.setdefault(self.phase, {})
            self.task = ""
            return [f"{self.phase}: {name}"]
        if kind == "playbook_on_task_start":
            self.task = str(data.get("task") or data.get("name") or "")
            return []
        if kind == "playbook_on_stats":
            self.stats = {
                key: dict(data.get(key) or {})
                for key in ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")
            }
            return []
        if kind == "verbose":
            text = _ANSI.sub("", str(event.get("stdout") or "")).strip()
            return [redact(line) for line in text.splitlines() if _PASS_ON.match(line)]
        host = data.get("host")
        if not host or not (kind == "runner_on_start" or kind in _ENDED):
            return []
        cell = self.phases.setdefault(self.phase, {}).setdefault(str(host), HostState())
        if kind == "runner_on_start":
            cell.running = True
            return []
        outcome = _ENDED[kind]
        result = data.get("res") or {}
        if outcome == "failed" and data.get("ignore_errors"):
            outcome = "ok"
        if outcome == "ok" and result.get("changed"):
            outcome = "changed"
        cell.running = False
        was_bad = cell.worst in ("failed", "unreachable")
        if cell.worst is None or _RANK[outcome] > _RANK[cell.worst]:
            cell.worst = outcome
        if outcome in ("failed", "unreachable") and not was_bad:
            task = str(data.get("task") or self.task)
            return [f"{self.phase}: {outcome.upper()} {host} ({task}): {_message(result)}"]
        return []

    def counts(self, phase: str) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for cell in self.phases.get(phase, {}).values():
            out[cell.state] += 1
        return out

    def counts_line(self, phase: str) -> str:
        """``deploy: 3 running, 10 ok, 2 failed`` (states with hosts only)."""
        counts = self.counts(phase)
        parts = [f"{n} {state}" for state, n in counts.items() if n]
        return f"{phase}: {', '.join(parts) or 'no hosts yet'}"

    def render(self) -> list[str]:
        """The table: one row per phase seen, one column per state, host counts in cells."""
        rows = [("PHASE", *(s.upper() for s in STATES))]
        rows += [(p, *map(str, self.counts(p).values())) for p in self.phases]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in rows
        ]
        if self.task and self.stats is None:
            lines.append(f"{self.phase}: {self.task}")
        return lines
