"""The golden set: which hosts of a run are fit to train on, and why each other one is not.

Controller side (the validate phase calls ``python -m racksmith.health golden``). Input: one
entry per host the phase targeted, with the paths of its quick and load reports (fetched from
the host) or the reason it has none. A host is golden only when its quick report says FIT and
its load report says FIT, or load checks were explicitly not required for it (the lab, whose
hosts have no GPU) and the entry says why. A missing or unreadable report is NOT FIT: an
unreachable host is never reported healthy.

:func:`judge` is that rule, and the only copy of it: the health role calls it through the
``health_fit`` filter (``plugins/filter/fit.py``) and the rack report through the golden set.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "racksmith.golden-set/v1"


#: The two words of a fit verdict, as the health agent and every consumer spell them.
FIT = "FIT"
NOT_FIT = "NOT FIT"


@dataclass(frozen=True)
class Fitness:
    """One host's fit verdict and every reason against it. ``load`` says what the load checks
    contributed: their verdict, ``not run``, or ``not required: <why>``."""

    fit: bool
    reasons: tuple[str, ...]
    load: str

    @property
    def verdict(self) -> str:
        return FIT if self.fit else NOT_FIT

    def to_dict(self) -> dict:
        return {
            "fit": self.fit,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "load": self.load,
        }


def _report_reasons(kind: str, report: Mapping[str, Any]) -> list[str]:
    if report.get("verdict") == FIT:
        return []
    listed = [f"{kind}: {r}" for r in report.get("reasons") or []]
    return listed or [f"{kind}: {report.get('verdict') or 'no verdict'}"]


def judge(
    quick: Mapping[str, Any] | None,
    load: Mapping[str, Any] | None = None,
    *,
    load_required: bool = True,
    load_why_not: str = "",
    failure: str = "",
    quick_error: str = "",
    load_error: str = "",
) -> Fitness:
    """THE fit rule: the only place that decides whether a host may join the golden set.

    The health role (through the ``health_fit`` filter), the golden set and the rack report
    all call this, so the verdict a host is shown with can never differ between them.

    A host is fit only when nothing below gives a reason against it:

    - ``failure``: it failed before or outside the checks (deploy, unreachable, a rescue);
    - ``quick``: the quick report (parsed JSON) must exist and say FIT;
    - ``quick_error``/``load_error``: a check that could not run is a reason (fail closed);
    - ``load``: the load report, when present, must say FIT; when absent it must not be
      required (the lab: no GPU), and ``load_why_not`` says why it is absent.
    """
    reasons: list[str] = []
    if failure:
        reasons.append(f"failed before validation: {failure}")
    if quick_error:
        reasons.append(quick_error)
    if quick:
        reasons += _report_reasons("quick", quick)
    elif not failure and not quick_error:
        reasons.append("quick checks: no report (host unreachable or the agent did not run)")
    if load_error:
        reasons.append(load_error)
    if load:
        reasons += _report_reasons("load", load)
        load_state = str(load.get("verdict") or "no verdict")
    elif load_required or failure or load_error:
        load_state = "not run"
        if not reasons:  # otherwise the host is already not fit, and this is why load was skipped
            reasons.append(f"load checks: {load_why_not or 'no report'}")
    else:
        load_state = f"not required: {load_why_not or 'no reason given'}"
    return Fitness(fit=not reasons, reasons=tuple(reasons), load=load_state)


def _load(path: str | None) -> tuple[dict | None, str]:
    if not path:
        return None, "no report"
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        return None, f"report {path} unreadable: {exc}"
    if not isinstance(data, dict) or "verdict" not in data:
        return None, f"report {path} has no verdict"
    return data, ""


def host_entry(name: str, spec: Mapping[str, Any]) -> dict:
    """One golden-set entry: the reports a host's spec points at, read and judged."""
    failure = str(spec.get("failure") or "")
    quick, quick_why = _load(spec.get("report"))
    load, load_why = _load(spec.get("load_report"))
    quick_error = str(spec.get("quick_error") or "")
    if spec.get("report") and quick is None:
        quick_error = quick_error or f"quick checks: {quick_why}"
    load_error = str(spec.get("load_error") or "")
    if spec.get("load_report") and load is None:
        load_error = load_error or f"load checks: {load_why}"
    fitness = judge(
        quick,
        load,
        load_required=bool(spec.get("load_required", True)),
        load_why_not=str(spec.get("load_skip_reason") or ""),
        failure=failure,
        quick_error=quick_error,
        load_error=load_error,
    )
    standin = (quick or {}).get("standin")
    return {
        "host": name,
        "fit": fitness.fit,
        "verdict": fitness.verdict,
        "quick": None
        if quick is None
        else {
            "verdict": quick["verdict"],
            "exit_code": quick.get("exit_code"),
            "profile": (quick.get("profile") or {}).get("name"),
            "duration_s": quick.get("duration_s"),
        },
        "load": fitness.load,
        "load_figures": (load or {}).get("figures"),
        "standin": standin,
        "reasons": list(fitness.reasons),
    }


def build(hosts: Mapping[str, Mapping[str, Any]], *, run_id: str = "") -> dict:
    entries = {name: host_entry(name, spec) for name, spec in sorted(hosts.items())}
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "golden": [name for name, e in entries.items() if e["fit"]],
        "not_fit": [name for name, e in entries.items() if not e["fit"]],
        "hosts": entries,
    }


def summary(golden: Mapping[str, Any]) -> str:
    hosts = golden["hosts"]
    lines = [
        f"# Golden set{' of run ' + golden['run_id'] if golden.get('run_id') else ''}",
        "",
        f"{len(golden['golden'])} of {len(hosts)} hosts are fit to train on "
        f"(generated {golden['generated']}).",
        "",
        "| host | verdict | profile | load checks | reasons |",
        "|---|---|---|---|---|",
    ]
    for name, entry in hosts.items():
        profile = (entry.get("quick") or {}).get("profile") or "-"
        reasons = "<br>".join(entry["reasons"]) or "-"
        lines.append(f"| {name} | {entry['verdict']} | {profile} | {entry['load']} | {reasons} |")
    standins = sorted({e["standin"] for e in hosts.values() if e.get("standin")})
    if standins:
        lines += [
            "",
            "**LAB STAND-IN**: these verdicts come from replayed captures, not from GPUs:",
        ]
        lines += [f"- {s}" for s in standins]
    return "\n".join(lines) + "\n"


def write(golden: Mapping[str, Any], outdir: str | os.PathLike) -> list[Path]:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in (
        ("golden-set.json", json.dumps(golden, indent=2) + "\n"),
        ("golden-set.md", summary(golden)),
    ):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)
        paths.append(out / name)
    return paths
