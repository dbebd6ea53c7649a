"""Typed results of health checks, and the rule that turns them into one verdict per host.

Modelled on imbue's cluster-health outcome classes, with its defects fixed: a check that
cannot run is UNKNOWN (never silently healthy), every finding carries the remediation an
operator needs, and the verdict is computed from an explicit rule rather than from which
bucket a host happens to land in.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


class Severity(enum.IntEnum):
    """Ordered so that ``max()`` gives the worst. UNKNOWN ranks above FAIL: an undecided check
    is reported first, and never mistaken for a pass."""

    OK = 0
    SKIPPED = 1  # does not apply to this host type: the profile says so, with a reason
    WARN = 2  # fit, but flagged for a human
    FAIL = 3  # not fit
    UNKNOWN = 4  # could not run, timed out or could not parse: not fit (fail closed)

    @property
    def label(self) -> str:
        return self.name


class Verdict(enum.Enum):
    FIT = "FIT"
    NOT_FIT = "NOT FIT"


#: Exit codes of ``python3 -m racksmith.health check`` (and of ``racksmith.gpu``).
EXIT_FIT = 0
EXIT_NOT_FIT = 1
EXIT_UNDECIDED = 2


#: What to do when a finding carries no remediation of its own: each severity its own text
#: (a FAIL once printed the UNKNOWN text, "find out why the check could not run").
DEFAULT_REMEDIATION = {
    Severity.WARN: "Fit, but flagged: look at it at the next maintenance window.",
    Severity.FAIL: "Not fit: repair or replace the part named, then re-run the checks.",
    Severity.UNKNOWN: "Find out why the check could not run; the host is not fit until it can.",
}


@dataclass(frozen=True)
class Finding:
    """One thing a check found. ``subject`` names the part (``GPU 1 (00000000:00:07.0)``).
    A WARN, FAIL or UNKNOWN without a remediation gets its severity's default text."""

    severity: Severity
    reason: str
    remediation: str = ""
    subject: str = ""

    def __post_init__(self) -> None:
        if not self.remediation and self.severity in DEFAULT_REMEDIATION:
            object.__setattr__(self, "remediation", DEFAULT_REMEDIATION[self.severity])

    def to_dict(self) -> dict:
        out: dict = {"severity": self.severity.label, "reason": self.reason}
        if self.subject:
            out["subject"] = self.subject
        if self.remediation:
            out["remediation"] = self.remediation
        return out


def ok(reason: str, subject: str = "") -> Finding:
    return Finding(Severity.OK, reason, subject=subject)


def warn(reason: str, remediation: str, subject: str = "") -> Finding:
    return Finding(Severity.WARN, reason, remediation, subject)


def fail(reason: str, remediation: str, subject: str = "") -> Finding:
    return Finding(Severity.FAIL, reason, remediation, subject)


def unknown(reason: str, remediation: str = "", subject: str = "") -> Finding:
    return Finding(Severity.UNKNOWN, reason, remediation, subject)


@dataclass(frozen=True)
class Source:
    """What a check read: a command (with its resolved path and exit code) or a file tree."""

    what: str  # "nvidia-smi -q -x", "/sys/bus/pci/devices", "adjtimex(2)"
    path: str = ""  # resolved executable or file, so a report says what it ran against
    rc: int | None = None
    duration_s: float = 0.0
    error: str = ""

    def to_dict(self) -> dict:
        out: dict = {"what": self.what}
        if self.path:
            out["path"] = self.path
        if self.rc is not None:
            out["rc"] = self.rc
        if self.duration_s:
            out["duration_s"] = round(self.duration_s, 3)
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class CheckResult:
    """Everything one check produced. ``status`` is the worst finding's severity."""

    name: str
    title: str
    findings: tuple[Finding, ...]
    duration_s: float = 0.0
    sources: tuple[Source, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def status(self) -> Severity:
        return max((f.severity for f in self.findings), default=Severity.UNKNOWN)

    def problems(self) -> list[Finding]:
        """WARN, FAIL and UNKNOWN findings, worst first (stable within a severity)."""
        found = [f for f in self.findings if f.severity >= Severity.WARN]
        return sorted(found, key=lambda f: -f.severity)

    def severities(self) -> set[Severity]:
        return {f.severity for f in self.problems()}

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status.label,
            "duration_s": round(self.duration_s, 3),
            "findings": [f.to_dict() for f in self.findings],
            "sources": [s.to_dict() for s in self.sources],
            "metrics": dict(self.metrics),
        }


def skipped(name: str, title: str, reason: str) -> CheckResult:
    return CheckResult(name, title, (Finding(Severity.SKIPPED, f"skipped by profile: {reason}"),))


def verdict_of(results: Iterable[CheckResult]) -> tuple[Verdict, int]:
    """FIT only when every check ran and none failed. A FAIL decides NOT FIT (exit 1); with no
    FAIL, an UNKNOWN (or no checks at all) means the agent could not decide (exit 2), which is
    still NOT FIT: a host is never fit by default."""
    statuses = [r.status for r in results]
    if not statuses:
        return Verdict.NOT_FIT, EXIT_UNDECIDED
    if Severity.FAIL in statuses:
        return Verdict.NOT_FIT, EXIT_NOT_FIT
    if Severity.UNKNOWN in statuses:
        return Verdict.NOT_FIT, EXIT_UNDECIDED
    return Verdict.FIT, EXIT_FIT
