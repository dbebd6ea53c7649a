"""The golden set: which hosts of a run are fit to train on, and why each other one is not.

Controller side. The validate phase judges each host once, in the play (the health role's
``health_fit`` filter), turns that verdict into the host's entry (:func:`entry`, filter
``golden_entry``) and assembles the set (:func:`assemble`, module ``racksmith.core.golden_set``).
``python -m racksmith.health golden`` builds the same set by hand from report paths.

A host is golden only when its quick report says FIT and
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


#: What every golden-set entry holds (:func:`entry`).
ENTRY_KEYS = frozenset(
    ("host", "fit", "verdict", "quick", "load", "load_figures", "standin", "reasons")
)

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
    return entry(name, quick, load, fitness)


def entry(
    name: str,
    quick: Mapping[str, Any] | None,
    load: Mapping[str, Any] | None,
    fitness: Fitness | Mapping[str, Any],
) -> dict:
    """One golden-set entry from the parsed reports and the verdict :func:`judge` gave them.

    The validate phase calls this (filter ``racksmith.core.golden_entry``) with the verdict the
    health role already has, so a host is judged once, in the play, and the golden set is
    assembled from those entries (:func:`assemble`) without reading the reports again.
    """
    if not isinstance(fitness, Fitness):
        fitness = Fitness(
            fit=bool(fitness["fit"]),
            reasons=tuple(str(r) for r in fitness.get("reasons") or ()),
            load=str(fitness.get("load") or ""),
        )
    quick = quick or None
    load = load or None
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


def assemble(
    entries: Mapping[str, Mapping[str, Any]], *, run_id: str = "", generated: str | None = None
) -> dict:
    """The golden set from entries already judged (:func:`entry`). A host whose input is only
    ``{"failure": why}`` (it never reached the health checks) is judged here, once, by
    :func:`judge`; an input that is neither is refused (fail closed)."""
    hosts: dict[str, dict] = {}
    for name, given in sorted(entries.items()):
        if "verdict" in given and "fit" in given:
            missing = ENTRY_KEYS - set(given)
            if missing:
                raise ValueError(f"golden set: {name}: entry lacks {', '.join(sorted(missing))}")
            hosts[name] = dict(given)
        elif set(given) == {"failure"} and given["failure"]:
            hosts[name] = entry(name, None, None, judge(None, failure=str(given["failure"])))
        else:
            raise ValueError(f"golden set: {name}: neither a judged entry nor a failure")
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        "generated": generated or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "golden": [name for name, e in hosts.items() if e["fit"]],
        "not_fit": [name for name, e in hosts.items() if not e["fit"]],
        "hosts": hosts,
    }


def build(hosts: Mapping[str, Mapping[str, Any]], *, run_id: str = "") -> dict:
    """The golden set from report paths (``python -m racksmith.health golden``, by hand); an
    entry the play already judged (it has ``verdict`` and ``fit``) is taken as it is."""
    return assemble(
        {
            name: spec if "verdict" in spec and "fit" in spec else host_entry(name, spec)
            for name, spec in hosts.items()
        },
        run_id=run_id,
    )


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


def files(golden: Mapping[str, Any]) -> dict[str, str]:
    """The golden set's files, by name: ``golden-set.json`` and ``golden-set.md``."""
    return {
        "golden-set.json": json.dumps(golden, indent=2) + "\n",
        "golden-set.md": summary(golden),
    }


def write(golden: Mapping[str, Any], outdir: str | os.PathLike) -> list[Path]:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files(golden).items():
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / name)
        paths.append(out / name)
    return paths
