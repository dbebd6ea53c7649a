"""The golden set: which hosts of a run are fit to train on, and why each other one is not.

Controller side (the validate phase calls ``python -m racksmith.health golden``). Input: one
entry per host the phase targeted, with the paths of its quick and load reports (fetched from
the host) or the reason it has none. A host is golden only when its quick report says FIT and
its load report says FIT, or load checks were explicitly not required for it (the lab, whose
hosts have no GPU) and the entry says why. A missing or unreadable report is NOT FIT: an
unreachable host is never reported healthy.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA = "racksmith.golden-set/v1"


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
    reasons: list[str] = []
    if spec.get("failure"):
        reasons.append(f"failed before validation: {spec['failure']}")
    quick, why = _load(spec.get("report"))
    if quick is None:
        if not spec.get("failure"):
            reasons.append(f"quick checks: {why} (host unreachable or the agent did not run)")
    elif quick["verdict"] != "FIT":
        reasons += [f"quick: {r}" for r in quick.get("reasons", [])] or ["quick: NOT FIT"]
    load_required = spec.get("load_required", True) and not spec.get("failure")
    load, load_why = _load(spec.get("load_report"))
    if load is not None:
        if load["verdict"] != "FIT":
            reasons += [f"load: {r}" for r in load.get("reasons", [])] or ["load: NOT FIT"]
        load_state = load["verdict"]
    elif spec.get("failure"):
        load_state = "not run"
    elif load_required:
        reasons.append(f"load checks: {load_why}")
        load_state = "not run"
    else:
        load_state = f"not required: {spec.get('load_skip_reason') or 'no reason given'}"
    standin = (quick or {}).get("standin")
    return {
        "host": name,
        "fit": not reasons,
        "verdict": "FIT" if not reasons else "NOT FIT",
        "quick": None
        if quick is None
        else {
            "verdict": quick["verdict"],
            "exit_code": quick.get("exit_code"),
            "profile": (quick.get("profile") or {}).get("name"),
            "duration_s": quick.get("duration_s"),
        },
        "load": load_state,
        "load_figures": (load or {}).get("figures"),
        "standin": standin,
        "reasons": reasons,
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
