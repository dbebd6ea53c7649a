"""The report: one verdict per host with every reason, as JSON for machines and as text for
people. The JSON carries provenance (host, profile, agent, what each check read and from
where, and the lab stand-in marker when outputs were replayed) so a verdict can be traced to
the evidence behind it."""

from __future__ import annotations

import json
import platform
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import REPORT_SCHEMA
from .outcome import CheckResult, Severity, Verdict, verdict_of


@dataclass
class Report:
    kind: str  # "quick" (host agent) or "load" (racksmith.gpu)
    profile: str
    profile_source: str
    results: Sequence[CheckResult]
    started: float  # epoch seconds
    duration_s: float
    standin: str = ""
    hostname: str = field(default_factory=socket.gethostname)
    notes: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)  # headline measurements (load checks)

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.results)[0]

    @property
    def exit_code(self) -> int:
        return verdict_of(self.results)[1]

    def reasons(self) -> list[str]:
        """One line per problem, worst first: what a ticket or a golden-set entry shows."""
        lines = []
        for result in sorted(self.results, key=lambda r: -r.status):
            for finding in result.problems():
                subject = f" [{finding.subject}]" if finding.subject else ""
                lines.append(f"{finding.severity.label} {result.name}{subject}: {finding.reason}")
        return lines

    def to_dict(self) -> dict:
        verdict, code = verdict_of(self.results)
        counts = {s.label: 0 for s in Severity}
        for result in self.results:
            counts[result.status.label] += 1
        return {
            "schema": REPORT_SCHEMA,
            "kind": self.kind,
            "host": self.hostname,
            "verdict": verdict.value,
            "exit_code": code,
            "decided": code != 2,
            "reasons": self.reasons(),
            "profile": {"name": self.profile, "source": self.profile_source},
            "standin": self.standin or None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "duration_s": round(self.duration_s, 3),
            "counts": counts,
            "agent": {"python": platform.python_version(), "argv": sys.argv[1:]},
            "notes": list(self.notes),
            **({"figures": self.figures} if self.figures else {}),
            "checks": [r.to_dict() for r in self.results],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    def to_text(self, *, verbose: bool = False) -> str:
        verdict, code = verdict_of(self.results)
        out = []
        if self.standin:
            out.append(f"*** LAB STAND-IN: {self.standin} ***")
        undecided = " (could not decide)" if code == 2 else ""
        out.append(
            f"{self.hostname}: {verdict.value}{undecided}  [{self.kind} checks, profile "
            f"{self.profile}, {self.duration_s:.2f} s]"
        )
        for note in self.notes:
            out.append(f"  note: {note}")
        for result in self.results:
            out.append(f"  {result.status.label:<8} {result.name:<16} {_summary(result)}")
            shown = result.findings if verbose else result.problems()
            if len(shown) > 1:
                for finding in shown:
                    subject = f"{finding.subject}: " if finding.subject else ""
                    out.append(f"      - {finding.severity.label} {subject}{finding.reason}")
            # one fix per severity present, worst first, each with its own severity's text
            seen: set = set()
            for finding in result.problems():
                if finding.remediation and finding.severity not in seen:
                    seen.add(finding.severity)
                    label = f" ({finding.severity.label})" if len(result.severities()) > 1 else ""
                    out.append(f"        fix{label}: {finding.remediation}")
        return "\n".join(out)


def _summary(result: CheckResult) -> str:
    problems = result.problems()
    if not problems:
        return result.findings[0].reason if result.findings else ""
    first = problems[0]
    subject = f"{first.subject}: " if first.subject else ""
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{subject}{first.reason}{more}"
