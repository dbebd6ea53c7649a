"""Tickets: one per failed host, as Markdown (to paste into a tracker) and JSON (to file one
through an API), written into the run's own directory under ``tickets/``.

A ticket says what to do first (the cause's action and advice), then quotes the evidence
behind the cause, the other causes seen, and the server's identity from its BMC, so whoever
picks it up in the datacenter needs nothing else. Content is deterministic: rerunning the
report over the same run writes the same files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from racksmith.secrets import redact
from racksmith.triage.classify import Diagnosis

SCHEMA = "racksmith.ticket/v1"
TICKETS_DIR = "tickets"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
#: Redfish facts a ticket shows (identity and what discovery saw), in this order.
_FACT_KEYS = (
    "service_tag", "serial", "model", "bmc", "bmc_firmware", "bios_version", "power_state",
    "health", "gpu_count", "nic_count", "pxe_mac", "error_kind",
)


def file_stem(host: str) -> str:
    """A file name for a host that cannot escape the tickets folder."""
    stem = _UNSAFE.sub("_", host).strip("._") or "host"
    return stem[:120]


def ticket_dict(diagnosis: Diagnosis, run_id: str) -> dict[str, Any]:
    data = {"schema": SCHEMA, "run_id": run_id, **diagnosis.to_dict()}
    data["title"] = f"{diagnosis.host}: {diagnosis.cause.title} ({diagnosis.cause.action.value})"
    data["facts"] = {k: diagnosis.facts[k] for k in _FACT_KEYS if diagnosis.facts.get(k)}
    return data


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def ticket_markdown(ticket: Mapping[str, Any]) -> str:
    cause = ticket["cause"]
    lines = [
        f"# {ticket['title']}",
        "",
        f"- **Run**: `{ticket['run_id']}`",
        f"- **Result**: `{ticket['result']}`",
        f"- **Cause**: {cause['title']} (`{cause['name']}`)",
        f"- **Action**: **{cause['action']}**: {cause['advice']}",
        "",
        "## Evidence",
        "",
    ]
    lines += [f"- `{e['source']}`: {e['text']}" for e in ticket["evidence"]] or ["- (none)"]
    others = [e for e in ticket["all_evidence"] if e not in ticket["evidence"]]
    if ticket["other_causes"]:
        lines += ["", "## Other causes seen", ""]
        lines += [f"- {c['title']} (`{c['name']}`): {c['action']}" for c in ticket["other_causes"]]
    if others:
        lines += ["", "## All other evidence", ""]
        lines += [f"- `{e['source']}`: {e['text']}" for e in others]
    if ticket["facts"]:
        lines += ["", "## Server", "", "| fact | value |", "|---|---|"]
        lines += [f"| {k} | {_cell(v)} |" for k, v in ticket["facts"].items()]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(redact(text))
    os.replace(tmp, path)


def write_tickets(
    diagnoses: Iterable[Diagnosis], run_dir: str | os.PathLike, run_id: str
) -> dict[str, str]:
    """Write ``tickets/<host>.md`` and ``.json``; return host -> Markdown path (relative to
    the run directory). Tickets of hosts no longer failing are removed: the folder always
    matches the report it sits beside."""
    folder = Path(run_dir) / TICKETS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    for diagnosis in diagnoses:
        ticket = ticket_dict(diagnosis, run_id)
        stem = file_stem(diagnosis.host)
        _write(folder / f"{stem}.json", json.dumps(ticket, sort_keys=True) + "\n")
        _write(folder / f"{stem}.md", ticket_markdown(ticket))
        written[diagnosis.host] = f"{TICKETS_DIR}/{stem}.md"
    keep = {Path(p).stem for p in written.values()}
    for old in folder.glob("*.*"):
        if old.suffix in (".md", ".json") and old.stem not in keep:
            old.unlink()
    return written
