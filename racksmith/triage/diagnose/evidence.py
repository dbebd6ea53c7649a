"""Join what racksmith already knows about a run's hosts to an MFU diagnosis, to name the hosts
to look at first.

Why: a slow run of 512 GPUs is one slow host; the curve says *what kind* of fault (clocks,
links, GPUDirect), and the health reports of the last racksmith run and the health history
say *where* such a fault was already seen. Each pattern names the evidence kinds that tell
its causes apart (:attr:`racksmith.triage.diagnose.mfu.Pattern.look_at`): health checks by name
(``clock_events``, ``pcie``, ``ib_counters``, ...) read from the run directory's
``health/<host>/quick.json`` and ``load-report.json``, and ``history``, the host's failed runs
in ``history.jsonl`` with their named causes, and ``ufm``, the links of the host's HCAs in the
UFM event triage (the JSON lines of ``racksmith fabric ufm ... --hosts hosts.json --json``,
its summary line too if kept);
links between switches (a tier-2/3 problem no host owns) are listed for the whole fabric.

Fail closed: a host with no report, or a check that did not run there, is listed as missing
evidence, never counted as clean; a host is named only on evidence found.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from racksmith.triage.diagnose.mfu import Match
from racksmith.triage.history import RunRecord, runs_by_host

#: Weight of a finding when ordering hosts: a failed check counts more than a warning.
WEIGHT = {"FAIL": 2, "WARN": 1, "history": 1, "ufm": 2}


@dataclass(frozen=True)
class UfmTriage:
    """The UFM event triage, by host: the links of each host's HCAs, and the rest."""

    by_host: dict[str, tuple[str, ...]]  # host -> "link: reason"
    fabric: tuple[str, ...]  # links with no host at either end, and what needs attention


def read_ufm(path: str | Path) -> UfmTriage:
    """Read ``racksmith fabric ufm --json`` output: JSON lines, one per port (its stdout), and
    optionally its summary line (its stderr), whose ``needs_attention`` (a switch down) is a
    fabric-wide finding."""
    file = Path(path)
    try:
        lines = file.read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"{file}: {exc.strerror or exc}") from exc
    by_host: dict[str, list[str]] = {}
    fabric: list[str] = []
    summary = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            raise ValueError(f"{file}: line {number}: not JSON") from None
        if isinstance(doc, dict) and "summary" in doc:
            summary = doc["summary"]
            continue
        if not isinstance(doc, dict) or "link" not in doc:
            raise ValueError(f"{file}: line {number}: not a line of racksmith fabric ufm --json")
        item = f"{doc['link']}: {doc.get('reason') or '?'}"
        hosts = {
            str(end["host"])
            for end in (doc.get("port"), doc.get("peer"))
            if isinstance(end, dict) and end.get("kind") == "hca" and end.get("host")
        }
        for host in hosts:
            if item not in by_host.setdefault(host, []):
                by_host[host].append(item)
        if not hosts and f"{item} (no host at either end)" not in fabric:
            fabric.append(f"{item} (no host at either end)")
    for what, n in ((summary or {}).get("needs_attention") or {}).items():
        fabric.append(f"needs attention: {what} x{n}")
    return UfmTriage({h: tuple(v) for h, v in by_host.items()}, tuple(fabric))


@dataclass(frozen=True)
class Finding:
    host: str
    kind: str  # a check name or "history"
    status: str  # FAIL, WARN or "history"
    detail: str

    def to_dict(self) -> dict:
        return {"host": self.host, "kind": self.kind, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class HostEvidence:
    host: str
    findings: tuple[Finding, ...]
    missing: tuple[str, ...]  # evidence that could not be read for this host, and why
    clean: tuple[str, ...]  # kinds that were read and were OK

    @property
    def score(self) -> int:
        return sum(WEIGHT.get(f.status, 1) for f in self.findings)

    def to_dict(self) -> dict:
        return {
            "host": self.host,
            "score": self.score,
            "findings": [f.to_dict() for f in self.findings],
            "missing": list(self.missing),
            "clean": list(self.clean),
        }


def read_reports(run_dir: str | Path, host: str) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
    """{report name: parsed JSON} of ``RUN_DIR/health/<host>/`` (quick.json, load-report.json)
    and why each one is missing."""
    found: dict[str, Mapping[str, Any]] = {}
    missing: list[str] = []
    for name in ("quick.json", "load-report.json"):
        path = Path(run_dir) / "health" / host / name
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            missing.append(f"{name}: not in {path.parent}")
            continue
        except (OSError, ValueError) as exc:
            missing.append(f"{name}: unreadable ({exc})")
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
            missing.append(f"{name}: not a health report")
            continue
        found[name] = doc
    return found, missing


def _check(reports: Mapping[str, Mapping[str, Any]], name: str):
    for report_name, doc in reports.items():
        for check in doc.get("checks") or []:
            if isinstance(check, dict) and check.get("name") == name:
                yield report_name, check


def host_evidence(
    host: str,
    kinds: Sequence[str],
    reports: Mapping[str, Mapping[str, Any]],
    report_missing: Sequence[str],
    history: Sequence[RunRecord] | None,
    causes: Sequence[str] = (),
    ufm: UfmTriage | None = None,
) -> HostEvidence:
    """What the reports and the history hold on ``host`` for the evidence ``kinds``; past
    failures count only when their triage cause is one of ``causes`` (a host that once lost
    a GPU says nothing about a throttling curve)."""
    findings: list[Finding] = []
    missing: list[str] = []
    clean: list[str] = []
    for kind in kinds:
        if kind == "ufm":
            if ufm is None:
                missing.append("ufm: no UFM event triage given (--ufm)")
                continue
            for item in ufm.by_host.get(host, ()):
                findings.append(Finding(host, "ufm", "ufm", item))
            if not ufm.by_host.get(host):
                clean.append("ufm (no event on the links of its HCAs)")
            continue
        if kind == "history":
            if history is None:
                missing.append("history: no history file given or found")
                continue
            runs = runs_by_host(history).get(host, [])
            if not runs:
                missing.append("history: the host is in no recorded run")
                continue
            failed = [(when, r) for when, r in runs if not r.passed and r.result != "INCOMPLETE"]
            related = [(when, r) for when, r in failed if r.cause in causes]
            for when, r in related:
                findings.append(
                    Finding(
                        host,
                        "history",
                        "history",
                        f"{r.result} in the run finished {when}: {r.cause}",
                    )
                )
            other = sorted({r.cause or r.result for _, r in failed if r.cause not in causes})
            clean.append(
                f"history ({len(runs)} runs, {len(related)} failed for a related cause"
                + (f"; other causes: {', '.join(other)})" if other else ")")
            )
            continue
        seen = list(_check(reports, kind))
        if not seen:
            why = "; ".join(report_missing) if not reports else "not in the host's reports"
            missing.append(f"{kind}: {why}")
            continue
        for report_name, check in seen:
            status = str(check.get("status") or "")
            reasons = [
                str(f.get("reason"))
                for f in check.get("findings") or []
                if isinstance(f, dict) and f.get("severity") in ("FAIL", "WARN")
            ]
            if status in ("FAIL", "WARN"):
                findings.append(
                    Finding(host, kind, status, f"{report_name}: " + ("; ".join(reasons) or status))
                )
            elif status == "OK":
                clean.append(f"{kind} ({report_name})")
            else:
                other = [
                    str(f.get("reason")) for f in check.get("findings") or [] if isinstance(f, dict)
                ]
                missing.append(
                    f"{kind}: {status or 'no status'} in {report_name}"
                    + (f" ({'; '.join(other)[:200]})" if other else "")
                )
    return HostEvidence(host, tuple(findings), tuple(missing), tuple(clean))


def join(
    hosts: Iterable[str],
    matches: Sequence[Match],
    run_dir: str | Path | None,
    history: Sequence[RunRecord] | None,
    ufm: UfmTriage | None = None,
) -> list[HostEvidence]:
    """Every host's evidence for the host-specific patterns matched, most evidence first."""
    kinds: list[str] = []
    causes: list[str] = []
    for m in matches:
        if m.pattern.host_specific:
            kinds += [k for k in m.pattern.look_at if k not in kinds]
            causes += [c for c in m.pattern.history_causes if c not in causes]
    out = []
    for host in hosts:
        if run_dir is None:
            reports, report_missing = {}, ["no run directory given (--run-dir)"]
        else:
            reports, report_missing = read_reports(run_dir, host)
        out.append(host_evidence(host, kinds, reports, report_missing, history, causes, ufm))
    return sorted(out, key=lambda e: (-e.score, e.host))
