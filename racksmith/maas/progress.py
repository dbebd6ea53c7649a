"""Progress of a long batch, from the module that waits to the operator's screen.

A module's output reaches Ansible only when the module ends, so ``maas_fleet`` appends one JSON
line per polling round to a file in the run directory (:class:`ProgressWriter`) and the report
callback, in the ``ansible-playbook`` process, tails it (:class:`ProgressTail`) and prints what
:class:`ProgressPrinter` picks: new failures and a batch's first and last line at once, the
latest counts at a steady interval in between. Reading is separate from choosing what to print
so the choice is tested without threads or files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The file in the run directory ($RACKSMITH_RUN_DIR) that batches write their progress to.
FILE_NAME = "progress.jsonl"
#: Seconds between two counts lines of one batch on the screen.
DEFAULT_INTERVAL = 30.0


def default_path(run_dir: str | None = None) -> Path | None:
    """``$RACKSMITH_RUN_DIR/progress.jsonl``, or None outside a racksmith run."""
    run_dir = run_dir if run_dir is not None else os.environ.get("RACKSMITH_RUN_DIR")
    return Path(run_dir) / FILE_NAME if run_dir else None


class ProgressWriter:
    """Appends one JSON line per snapshot (a :class:`racksmith.maas.fleet.Progress`). A file
    that cannot be written never stops the batch: the first error is kept for a warning."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.error: str | None = None

    def __call__(self, snapshot: Any) -> None:
        if self.path is None or self.error:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(snapshot.as_dict()) + "\n")
        except OSError as exc:
            self.error = f"progress not written to {self.path}: {exc.strerror or exc}"


class ProgressTail:
    """New complete lines of a progress file since the last call, parsed. A line that is not a
    progress record is reported as such (with its line number), never skipped silently."""

    def __init__(self, path: str | Path, *, from_end: bool = True):
        self.path = Path(path)
        # A reused run directory holds earlier runs' lines: start after them.
        self._offset = 0
        self._line = 0
        if from_end and self.path.exists():
            earlier = self.path.read_bytes()
            self._offset, self._line = len(earlier), earlier.count(b"\n")
        self._rest = b""

    def poll(self) -> list[dict[str, Any]]:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size < self._offset:  # replaced or truncated: start over
            self._offset, self._line, self._rest = 0, 0, b""
        with self.path.open("rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read(size - self._offset)
        self._offset += len(chunk)
        *lines, self._rest = (self._rest + chunk).split(b"\n")
        out = []
        for raw in lines:
            self._line += 1
            try:
                record = json.loads(raw)
                if not isinstance(record, dict) or not isinstance(record.get("line"), str):
                    raise ValueError("not a progress record")
            except ValueError:
                record = {"error": f"{self.path}:{self._line}: not a progress record"}
            out.append(record)
        return out


@dataclass
class ProgressPrinter:
    """Chooses the lines to show: each failure and error at once, a batch's first and final
    counts at once, otherwise its latest counts every ``interval`` seconds."""

    interval: float = DEFAULT_INTERVAL
    _pending: dict[str, str] = field(default_factory=dict)
    _printed_at: dict[str, float] = field(default_factory=dict)

    def feed(self, records: list[dict[str, Any]], now: float) -> list[str]:
        out: list[str] = []
        for record in records:
            if "error" in record:
                out.append(f"progress: {record['error']}")
                continue
            phase = str(record.get("phase", "batch"))
            for name, cause in record.get("new_failures", []):
                out.append(f"{phase}: FAILED {name}: {cause}")
            first = phase not in self._printed_at
            if first or record.get("final"):
                out.append(record["line"])
                self._pending.pop(phase, None)
                self._printed_at[phase] = now
                if record.get("final"):
                    del self._printed_at[phase]  # a later batch of this phase starts afresh
            else:
                self._pending[phase] = record["line"]
        for phase, line in list(self._pending.items()):
            if now - self._printed_at.get(phase, now) >= self.interval:
                out.append(line)
                self._printed_at[phase] = now
                del self._pending[phase]
        return out
