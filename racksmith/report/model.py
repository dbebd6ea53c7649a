"""Typed run report: per-host, per-phase outcomes and each host's final state.

Pure data and rendering; the Ansible callback adapts task events into :meth:`RunReport.record`
and host variables into :meth:`RunReport.annotate`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from racksmith.secrets import redact

PHASES = ("preflight", "discover", "enlist", "deploy", "configure", "validate", "reprovision")

#: Task statuses as Ansible reports them, in order of precedence for a phase's summary.
STATUSES = ("unreachable", "failed", "changed", "ok", "skipped")

CONTROLLER = "localhost"


@dataclass
class PhaseOutcome:
    """Counts of task results one host had in one phase, and the first failure's reason."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0
    unreachable: int = 0
    reason: str | None = None

    @property
    def state(self) -> str:
        for status in STATUSES:
            if getattr(self, status):
                return status
        return "-"


@dataclass
class HostRecord:
    name: str
    phases: dict[str, PhaseOutcome] = field(default_factory=dict)
    quarantine_reason: str | None = None
    failed_phase: str | None = None
    failure_reason: str | None = None
    health_verdict: str | None = None
    health_reasons: list[str] = field(default_factory=list)

    @property
    def result(self) -> str:
        """Where the host ended up, the one word an operator scans for."""
        if self.quarantine_reason:
            return "QUARANTINED"
        if self.failed_phase or self.failure_reason:
            return f"FAILED:{self.failed_phase or '?'}"
        for phase, outcome in self.phases.items():
            if outcome.failed or outcome.unreachable:
                return f"FAILED:{phase}"
        if self.health_verdict == "FIT":
            return "GOLDEN"
        if self.health_verdict:
            return self.health_verdict.replace(" ", "_")
        return "INCOMPLETE"

    def cell(self, phase: str) -> str:
        """What the table shows for one phase: the phase's own verdict wins over task counts
        (a discovery that recorded an unreachable BMC ran its tasks fine, yet failed)."""
        if phase == self.failed_phase:
            return "FAILED"
        return self.phases[phase].state if phase in self.phases else "-"

    @property
    def reasons(self) -> list[str]:
        """Every reason once: a phase often records as a fact what its failed task said,
        sometimes with a prefix ("h1: deploy failed: <cause>"), so one that contains or is
        contained in a reason already listed adds nothing."""
        out: list[str] = []
        seen: list[str] = []

        def add(label: str, text: str) -> None:
            if not any(text in s or s in text for s in seen):
                seen.append(text)
                out.append(f"{label}: {text}")

        if self.quarantine_reason:
            add("quarantined", self.quarantine_reason)
        if self.failure_reason:
            add(self.failed_phase or "failed", self.failure_reason)
        for phase, outcome in self.phases.items():
            if outcome.reason:
                add(phase, outcome.reason)
        for reason in self.health_reasons:
            add("health", reason)
        return out


@dataclass
class RunReport:
    run_id: str
    run_dir: str
    started: str
    finished: str | None = None
    hosts: dict[str, HostRecord] = field(default_factory=dict)

    def host(self, name: str) -> HostRecord:
        return self.hosts.setdefault(name, HostRecord(name))

    def record(self, host: str, phase: str, status: str, message: str | None = None) -> None:
        """Count one task result; keep the first failure message of the phase (redacted)."""
        if status not in STATUSES:
            raise ValueError(f"unknown task status {status!r}")
        outcome = self.host(host).phases.setdefault(phase, PhaseOutcome())
        setattr(outcome, status, getattr(outcome, status) + 1)
        if status in ("failed", "unreachable") and message and outcome.reason is None:
            outcome.reason = redact(" ".join(message.split()))[:400]

    def annotate(self, host: str, hostvars: dict[str, Any]) -> None:
        """Take the racksmith_* facts that phases set on a host (see CONTRACTS)."""
        rec = self.host(host)

        def text(key: str) -> str | None:
            value = hostvars.get(key)
            return redact(str(value)) if value not in (None, "") else None

        rec.quarantine_reason = text("racksmith_quarantine_reason") or rec.quarantine_reason
        rec.failed_phase = text("racksmith_failed_phase") or rec.failed_phase
        rec.failure_reason = text("racksmith_failure_reason") or rec.failure_reason
        rec.health_verdict = text("racksmith_health_verdict") or rec.health_verdict
        reasons = hostvars.get("racksmith_health_reasons") or []
        if isinstance(reasons, list):
            rec.health_reasons = [redact(str(r)) for r in reasons]

    # -- rendering -------------------------------------------------------------------------

    def phases_seen(self) -> list[str]:
        seen = {p for rec in self.hosts.values() for p in rec.phases}
        return [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name, rec in self.hosts.items():
            data["hosts"][name]["result"] = rec.result
            data["hosts"][name]["reasons"] = rec.reasons
            for phase, outcome in rec.phases.items():
                data["hosts"][name]["phases"][phase]["state"] = outcome.state
        data["summary"] = self.summary()
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rec in self.machines():
            counts[rec.result] = counts.get(rec.result, 0) + 1
        return dict(sorted(counts.items()))

    def machines(self) -> list[HostRecord]:
        """Host records other than the controller, sorted by name."""
        return [self.hosts[n] for n in sorted(self.hosts) if n != CONTROLLER]

    def render_text(self) -> str:
        """A fixed-width table: one row per host, one column per phase, then the reasons."""
        phases = self.phases_seen()
        rows = [["host", *phases, "result"]]
        records = self.machines()
        controller = self.hosts.get(CONTROLLER)
        if controller and any(o.failed or o.unreachable for o in controller.phases.values()):
            records.insert(0, controller)
        for rec in records:
            cells = [rec.cell(p) for p in phases]
            rows.append([rec.name, *cells, rec.result])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"racksmith run {self.run_id}  ({self.run_dir})"]
        for row in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        summary = ", ".join(f"{n} {k}" for k, n in self.summary().items()) or "no hosts"
        lines.append(f"hosts: {summary}")
        for rec in records:
            for reason in rec.reasons:
                lines.append(f"  {rec.name}: {reason}")
        return "\n".join(lines)
