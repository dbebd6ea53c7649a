"""Plan the restart of a crashed training job: the N best hosts, and why each other one is out.

Why: after a crash the job is usually restarted on the same hosts, and the host that broke it
breaks it again. The plan puts together what is known right now and before:

1. the quick checks, rerun on every candidate host now (a host whose checks fail, or do not
   run, is out: fail closed);
2. the diagnosis of the crash (``racksmith diagnose hang --json`` or ``diagnose mfu --json``):
   its suspects are out, with the diagnosis' reason;
3. the golden history (:func:`racksmith.triage.rank.rank`): the remaining hosts best first,
   so the N chosen are the ones with the cleanest record, the rest are spares.

Pure: outcomes and documents in, a :class:`Plan` out; ``restart_cli`` runs the checks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from racksmith.triage import rank
from racksmith.triage.history import RunRecord


@dataclass(frozen=True)
class QuickOutcome:
    """One host's quick checks, as rerun for the plan."""

    host: str
    fit: bool
    reasons: tuple[str, ...]  # the agent's reasons (NOT FIT), or why it did not run

    def to_dict(self) -> dict:
        return {"host": self.host, "fit": self.fit, "reasons": list(self.reasons)}


def quick_outcome(host: str, rc: int | None, stdout: str, stderr: str) -> QuickOutcome:
    """Read the agent's ``check --json`` output. Anything but its report, or a report that is
    not FIT, keeps the host out."""
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    if not isinstance(report, dict) or report.get("verdict") not in ("FIT", "NOT FIT"):
        tail = " ".join((stderr or stdout or "").strip().splitlines()[-3:])[-300:]
        why = "timed out" if rc is None else f"exit {rc}"
        return QuickOutcome(
            host, False, (f"quick checks did not run ({why}): {tail or 'no output'}",)
        )
    if report["verdict"] == "FIT" and rc == 0:
        return QuickOutcome(host, True, ())
    reasons = tuple(str(r) for r in report.get("reasons") or []) or (
        f"verdict {report['verdict']}, exit {rc}",
    )
    return QuickOutcome(host, False, reasons)


def suspects_of(doc: Mapping[str, Any], where: str) -> dict[str, str]:
    """{host: why} from a diagnosis document: ``suspect_hosts`` (hang and mfu), the hang
    report's ``unanswered_hosts`` and, for the reason, its ``suspects`` / mfu's ``hosts``."""
    if not isinstance(doc, Mapping) or "suspect_hosts" not in doc:
        raise ValueError(
            f"{where}: not a diagnosis (no suspect_hosts): give the JSON of "
            "racksmith diagnose hang or mfu"
        )
    schema = str(doc.get("schema") or "diagnosis")
    out: dict[str, str] = {}
    for host in doc.get("suspect_hosts") or []:
        out[str(host)] = f"suspect in {where} ({schema})"
    for item in doc.get("suspects") or []:  # hang: per-rank details
        if isinstance(item, Mapping):
            rank_info = item.get("rank") if isinstance(item.get("rank"), Mapping) else item
            host = rank_info.get("host") if isinstance(rank_info, Mapping) else None
            why = item.get("why") or item.get("reason")
            if host in out and why:
                who = f"rank {item['rank']}: " if item.get("rank") is not None else ""
                out[str(host)] = f"suspect in {where}: {who}{why}"
    for item in doc.get("hosts") or []:  # mfu: evidence per host
        if isinstance(item, Mapping) and item.get("host") in out and item.get("findings"):
            first = item["findings"][0]
            out[str(item["host"])] = (
                f"suspect in {where}: {first.get('kind')} "
                f"{first.get('status')}: {first.get('detail')}"
            )
    for item in doc.get("unanswered_hosts") or []:
        if isinstance(item, Mapping) and item.get("host"):
            out.setdefault(
                str(item["host"]), f"did not answer in {where}: {item.get('error') or 'no answer'}"
            )
    return out


@dataclass(frozen=True)
class Plan:
    chosen: tuple[str, ...]
    spares: tuple[str, ...]  # fit, not suspected, ranked after the chosen
    excluded: tuple[tuple[str, tuple[str, ...]], ...]  # (host, why), in candidate order
    ranked: tuple[rank.Standing, ...]
    wanted: int

    @property
    def short(self) -> int:
        return max(0, self.wanted - len(self.chosen))

    def to_dict(self) -> dict:
        return {
            "hosts": list(self.chosen),
            "limit": ",".join(self.chosen),
            "spares": list(self.spares),
            "wanted": self.wanted,
            "short": self.short,
            "excluded": [{"host": h, "why": list(why)} for h, why in self.excluded],
            "ranked": [s.to_dict() for s in self.ranked],
        }


def plan(
    candidates: Sequence[str],
    quick: Mapping[str, QuickOutcome],
    suspects: Mapping[str, str],
    history: Sequence[RunRecord],
    count: int,
    half_life_days: float = rank.HALF_LIFE_DAYS,
) -> Plan:
    """The ``count`` best candidates that pass their quick checks and no diagnosis suspects."""
    if count < 1:
        raise ValueError(f"the number of hosts must be at least 1, got {count}")
    excluded: list[tuple[str, tuple[str, ...]]] = []
    eligible: list[str] = []
    for host in candidates:
        why: list[str] = []
        if host in suspects:
            why.append(suspects[host])
        outcome = quick.get(host)
        if outcome is None:
            why.append("quick checks: no outcome (not run)")
        elif not outcome.fit:
            why += [f"quick checks NOT FIT: {r}" for r in outcome.reasons]
        if why:
            excluded.append((host, tuple(why)))
        else:
            eligible.append(host)
    ranked = rank.rank(eligible, history, half_life_days)
    names = [s.host for s in ranked]
    return Plan(tuple(names[:count]), tuple(names[count:]), tuple(excluded), tuple(ranked), count)
