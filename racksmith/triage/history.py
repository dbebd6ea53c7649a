"""Health history across runs: one JSON line per run in ``runs/history.jsonl``.

Append-only: a run is recorded once (by run id) and nothing is ever rewritten, so a history
kept for months loses nothing, and a crash mid-write cannot corrupt earlier runs (each record
is one ``write`` of one line under an exclusive lock). Reading is strict: a line that is not
a record is an error naming its line number, never skipped, since a ranking built on part of
the history would quietly promote hosts that failed.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "racksmith.history/v1"
HISTORY_FILE = "history.jsonl"


@dataclass(frozen=True)
class HostRun:
    """What one run did to one host: its result and, if it failed, the named cause."""

    result: str
    cause: str | None = None

    @property
    def passed(self) -> bool:
        return self.result == "GOLDEN"


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    finished: str  # ISO 8601 UTC, as the report writes it
    hosts: Mapping[str, HostRun]

    def to_json(self) -> str:
        hosts = {
            name: {"result": h.result, **({"cause": h.cause} if h.cause else {})}
            for name, h in sorted(self.hosts.items())
        }
        record = {"schema": SCHEMA, "run_id": self.run_id, "finished": self.finished,
                  "hosts": hosts}
        return json.dumps(record, sort_keys=True, separators=(",", ":"))


def default_path(run_dir: str | os.PathLike) -> Path:
    """Beside the run directories: ``runs/<run>/`` -> ``runs/history.jsonl``."""
    return Path(run_dir).resolve().parent / HISTORY_FILE


def parse_line(text: str, where: str) -> RunRecord:
    try:
        data = json.loads(text)
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        hosts = {
            str(name): HostRun(result=str(h["result"]), cause=h.get("cause"))
            for name, h in data["hosts"].items()
        }
        return RunRecord(run_id=str(data["run_id"]), finished=str(data["finished"]), hosts=hosts)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: not a history record: {exc}") from exc


def read(path: str | os.PathLike) -> list[RunRecord]:
    """Every run recorded in ``path`` (none if it does not exist), oldest first as written."""
    file = Path(path)
    if not file.exists():
        return []
    records = []
    with file.open() as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                records.append(parse_line(line, f"{file}: line {number}"))
    return records


def record_of(report: Mapping[str, Any]) -> RunRecord:
    """A history record from a report dict (``RunReport.to_dict()``, after triage)."""
    hosts = {}
    for name, host in report["hosts"].items():
        if name == "localhost":
            continue
        cause = (host.get("triage") or {}).get("cause")
        hosts[name] = HostRun(result=str(host["result"]), cause=cause)
    finished = report.get("finished") or report.get("started") or ""
    return RunRecord(run_id=str(report["run_id"]), finished=str(finished), hosts=hosts)


def append(path: str | os.PathLike, record: RunRecord) -> bool:
    """Add ``record`` unless its run is already there; True when it was added."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            for number, line in enumerate(handle, 1):
                if line.strip() and parse_line(line, f"{file}: line {number}").run_id == (
                    record.run_id
                ):
                    return False
            handle.seek(0, os.SEEK_END)
            handle.write(record.to_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return True


def runs_by_host(records: Iterable[RunRecord]) -> dict[str, list[tuple[str, HostRun]]]:
    """host -> [(finished, what the run did to it)], in the order the runs were recorded."""
    out: dict[str, list[tuple[str, HostRun]]] = {}
    for rec in records:
        for name, host in rec.hosts.items():
            out.setdefault(name, []).append((rec.finished, host))
    return out
