"""Name the cause of a failed host from the evidence its run left behind.

Pure: :class:`HostEvidence` in (the reasons phases recorded, the BMC's Redfish facts, MAAS's
triage, the health verdict's reasons), a :class:`Diagnosis` out. Every line of evidence is
matched on its own, so a ticket can quote exactly the lines behind each cause; when several
causes match, the most specific (hardware before process, per the order of
:data:`racksmith.triage.causes.CAUSES`) is the primary one and the others are listed.
A host no rule recognises is ``unclassified`` with all its evidence: never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from racksmith.triage.causes import CAUSES, Cause, cause

#: (cause, pattern) tried on every line of evidence except the health checks' own lines.
_TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("lab_fault", r"\bLAB FAULT\b"),
        ("bmc_auth", r"credentials rejected|\bHTTP 40[13]\b|unauthori[sz]ed|login failed"),
        ("bmc_unreachable",
         r"^BMC \S+: .*(cannot connect|connection refused|no route|unreachable|timed out"
         r"|name or service not known|deadline)"),
        ("bmc_duplicate", r"\bduplicate\b|also reported by"),
        ("clock_skew", r"clock skew|BMC clock|clock .*off by|\bskew(ed)?\b|not synchroni[sz]ed"),
        ("psu_fault", r"power supply|\bPSU\d*\b"),
        ("power_control",
         r"power control|power credentials|power (on|off|cycle) failed|query node's BMC"),
        ("gpu_model", r"unexpected GPU model"),
        ("gpu_missing", r"expected \d+ GPUs?, .*reports \d+|GPUs? (not detected|missing)"),
        ("nic_missing",
         r"expected \d+ (NICs?|HCAs?|ports?)\b|(NIC|HCA|adapter)s? (not detected|missing)"
         r"|no PXE NIC"),
        ("pcie_degraded", r"\bPCIe\b.*(width|speed|degraded|x\d)|link width|trained at x\d"),
        ("disk_fault",
         r"\bNVMe\b.*(fail|error|missing|not found|fault)|no block device|boot disk"
         r"|missing disk|disk (missing|not found|failed)|\bSMART\b"),
        ("thermal", r"thermal|temperature|overheat"),
        ("hardware_critical", r"health rollup is Critical"),
        ("firmware_drift", r"^firmware/BIOS drift from baseline\b"),
        ("boot_failure",
         r"\bPXE\b|\bTFTP\b|network boot|did not boot|never booted|failed to boot"
         r"|timed the machine out|still Deploying after"),
        ("host_unreachable", r"\bunreachable\b|no answer|ssh.*(refused|timed out)"),
        ("site_config", r"no hardware expectation for model|expectation for .* has a"),
        ("bmc_error", r"^BMC \S+: |BMC's GPU list is unusable"),
    )
)

#: Health check name -> cause (racksmith.health.checks registers these names).
_CHECK_CAUSES = {
    "gpu_count": "gpu_missing",
    "pcie": "pcie_degraded",
    "clock_events": "thermal",
    "clock_sync": "clock_skew",
    "xid": "health_gpu_errors",
    "ecc": "health_gpu_errors",
    "row_remap": "health_gpu_errors",
    "recovery_action": "health_gpu_errors",
    "nvlink_state": "health_links",
    "nvlink_errors": "health_links",
    "ib_ports": "health_links",
    "ib_counters": "health_links",
}
_HEALTH_LINE = re.compile(r"^(?:(quick|load): )?(FAIL|UNKNOWN|WARN) (\w+)")

#: Redfish ``error_kind`` (racksmith.redfish.errors.ErrorKind values) -> cause.
_BMC_KINDS = {
    "unreachable": "bmc_unreachable",
    "timeout": "bmc_unreachable",
    "reset": "bmc_unreachable",
    "auth_failed": "bmc_auth",
    "duplicate": "bmc_duplicate",
}

#: What a failure in a phase means when nothing more specific matched.
_PHASE_FALLBACK = {
    "enlist": "commissioning_failed",
    "deploy": "deploy_failed",
    "reprovision": "deploy_failed",
    "configure": "configure_failed",
    "validate": "health_undecided",
    # racksmith diagnose hang: a rank outside the majority with no more specific evidence
    "diagnose": "training_hang",
}

_ORDER = {name: i for i, name in enumerate(CAUSES)}

#: A reason that names its own cause (racksmith.redfish.bmc_health: ``BMC health (psu_fault):
#: ...``): the module that judged the evidence decided the cause; it is taken as said.
_NAMED = re.compile(r"^BMC health \((\w+)\): ")


@dataclass(frozen=True)
class Line:
    """One piece of evidence and where it came from (``discover``, ``health``, ``maas``...)."""

    source: str
    text: str

    def to_dict(self) -> dict:
        return {"source": self.source, "text": self.text}


@dataclass(frozen=True)
class HostEvidence:
    host: str
    result: str
    failed_phase: str | None = None
    lines: tuple[Line, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)  # Redfish facts (no prefix)


@dataclass(frozen=True)
class Diagnosis:
    host: str
    result: str
    cause: Cause
    others: tuple[Cause, ...]
    evidence: tuple[Line, ...]  # the lines behind the primary cause
    all_evidence: tuple[Line, ...]
    facts: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "host": self.host,
            "result": self.result,
            "cause": self.cause.to_dict(),
            "other_causes": [c.to_dict() for c in self.others],
            "evidence": [line.to_dict() for line in self.evidence],
            "all_evidence": [line.to_dict() for line in self.all_evidence],
            "facts": dict(self.facts),
        }


def _health_cause(text: str) -> str | None:
    m = _HEALTH_LINE.match(text)
    if not m:
        return None
    kind, severity, check = m.groups()
    if kind == "load":
        return "health_load"
    if check in _CHECK_CAUSES:
        return _CHECK_CAUSES[check]
    if severity == "UNKNOWN":
        return "health_undecided"
    return "health_software"


#: A MAAS event line is evidence of trouble only at these levels: "INFO: PXE Request -
#: installation" is MAAS saying a boot went fine, not a boot failure.
_EVENT_TROUBLE = re.compile(r"\b(ERROR|WARNING|CRITICAL)\b")


def _line_cause(line: Line) -> str | None:
    named = _NAMED.match(line.text)
    if named and named.group(1) in CAUSES:
        return named.group(1)
    if line.source == "maas event" and not _EVENT_TROUBLE.search(line.text):
        return None
    if line.source == "health":
        named = _health_cause(line.text)
        if named:
            return named
        if re.search(r"\b(no report|did not run|could not|unreadable)\b", line.text):
            return "host_unreachable" if "unreachable:" in line.text else "health_undecided"
    for name, pattern in _TEXT_RULES:
        if pattern.search(line.text):
            return name
    return None


def classify(evidence: HostEvidence) -> Diagnosis:
    """The primary cause (most specific), the other causes, and the evidence for each."""
    found: dict[str, list[Line]] = {}
    kind = str(evidence.facts.get("error_kind") or "")
    if kind:
        bmc_line = Line("redfish", f"error_kind={kind}")
        found.setdefault(_BMC_KINDS.get(kind, "bmc_error"), []).append(bmc_line)
    if str(evidence.facts.get("health") or "") == "Critical":
        found.setdefault("hardware_critical", []).append(Line("redfish", "health=Critical"))
    for line in evidence.lines:
        name = _line_cause(line)
        if name:
            found.setdefault(name, []).append(line)
    if not found:
        fallback = _PHASE_FALLBACK.get(evidence.failed_phase or "", "unclassified")
        found[fallback] = list(evidence.lines)
    ranked = sorted(found, key=lambda n: _ORDER[n])
    primary = ranked[0]
    return Diagnosis(
        host=evidence.host,
        result=evidence.result,
        cause=cause(primary),
        others=tuple(cause(n) for n in ranked[1:]),
        evidence=tuple(found[primary]),
        all_evidence=evidence.lines,
        facts=dict(evidence.facts),
    )


def _split(text: str) -> Iterable[str]:
    """A phase joins several problems with ``; ``: each is its own line of evidence."""
    return (part.strip() for part in text.split("; ") if part.strip())


def evidence_from_report(name: str, host: Mapping[str, Any]) -> HostEvidence:
    """Evidence from one host of ``report.json`` (see racksmith.report.model.HostRecord)."""
    lines: list[Line] = []
    seen: set[str] = set()

    def add(source: str, text: Any) -> None:
        for part in _split(" ".join(str(text or "").split())):
            if part not in seen:
                seen.add(part)
                lines.append(Line(source, part))

    add("quarantine", host.get("quarantine_reason"))
    add(host.get("failed_phase") or "failure", host.get("failure_reason"))
    for phase, outcome in (host.get("phases") or {}).items():
        add(phase, (outcome or {}).get("reason"))
    for reason in host.get("health_reasons") or []:
        add("health", reason)
    for reason in (host.get("golden") or {}).get("reasons") or []:
        if not str(reason).startswith("failed before validation:"):  # already listed above
            add("health", reason)
    maas = host.get("maas") or {}
    add("maas", maas.get("cause"))
    for event in (maas.get("events") or [])[:10]:
        add("maas event", event)
    for log_line in (maas.get("log_tail") or [])[-5:]:
        add("install log", log_line)
    if not lines and host.get("result") == "INCOMPLETE":
        lines.append(Line("report", "no phase recorded a verdict for this host"))
    return HostEvidence(
        host=name,
        result=str(host.get("result") or "?"),
        failed_phase=host.get("failed_phase"),
        lines=tuple(lines),
        facts=dict(host.get("facts") or {}),
    )
