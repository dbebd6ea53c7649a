"""Per-step training metrics in, one throughput curve out: the readers ``diagnose mfu`` uses.

Four inputs, told apart by their content (not their name):

- **JSON lines** (``*.jsonl``): one object per step. ``step`` (an integer) and either ``mfu``
  (a fraction of the dense peak: 0.45, not 45) or ``tokens`` (tokens the step processed, all
  ranks together) with ``seconds`` (the step's duration) or ``time`` (a clock reading when the
  step ended, in seconds; the first step then has no duration and is dropped). Other keys are
  ignored, so a trainer's own log lines work as they are.
- **CSV** with a header row naming the same columns.
- **racksmith's smoke test result** (``smoke-<N>gpu.json``, written by rank 0 of
  ``racksmith.gpu.smoke``): MFU from each step's seconds, the FLOPs per token, tokens per step,
  GPUs and peak it records.
- **racksmith's smoke test log** (``smoke-<N>gpu.log``: ``step N loss L dt X ms tok/s Yk MFU
  Z%`` lines; everything else in the log, torchrun's and torch.compile's messages, is skipped).

A curve whose values are all MFU is in ``mfu``; one built from tokens is in ``tokens/s``.
Warm-up: the smoke test's first steps compile the model (step 0 takes 27-33 s on an H200),
so its readers leave out the test's own warm-up (its config's ``warmup``, 10 by default); the
generic formats leave out nothing unless told (``--warmup``). Every error names the file and,
where there is one, the line.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from racksmith.triage.diagnose.mfu import Sample

MFU = "mfu"
TOKENS_PER_S = "tokens/s"
#: The smoke test's default warm-up (racksmith.gpu.smoke.Config.warmup), for its log, which
#: does not record its config.
SMOKE_WARMUP = 10

_SMOKE_LINE = re.compile(
    r"^step\s+(\d+)\s+loss\s+\S+\s+dt\s+([\d.]+)\s+ms\s+tok/s\s+[\d.]+k\s+MFU\s+([\d.]+)%"
)


class MetricsError(ValueError):
    """A metrics file that cannot be read as a curve; the message names the file and line."""


@dataclass(frozen=True)
class Curve:
    samples: tuple[Sample, ...]  # every step read, warm-up included
    unit: str  # MFU or TOKENS_PER_S
    warmup: int  # leading steps the reader would leave out
    source: str  # what the file was read as

    def judged(self, warmup: int | None = None) -> list[Sample]:
        """The samples after the warm-up (``warmup`` overrides the reader's)."""
        skip = self.warmup if warmup is None else warmup
        return list(self.samples[skip:])


def read(path: str | os.PathLike) -> Curve:
    """The curve in ``path``, whichever of the formats above it is."""
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        raise MetricsError(f"{file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise MetricsError(f"{file}: not text: {exc}") from exc
    stripped = text.lstrip()
    if not stripped:
        raise MetricsError(f"{file}: empty")
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            return _rows(file, _jsonl(file, text), "JSON lines")
        if isinstance(doc, dict) and "steps" in doc and "flops_per_token" in doc:
            return _smoke_json(file, doc)
        return _rows(file, [(1, doc)], "JSON lines")
    smoke = _smoke_log(file, text)
    if smoke is not None:
        return smoke
    return _rows(file, _csv(file, text), "CSV")


def _jsonl(file: Path, text: str) -> list[tuple[int, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise MetricsError(f"{file}: line {number}: not JSON: {exc.msg}") from None
    return rows


def _csv(file: Path, text: str) -> list[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip() for f in reader.fieldnames or []]
    if "step" not in fields:
        raise MetricsError(
            f"{file}: not a metrics file: no 'step' column in the CSV header "
            f"({', '.join(fields) or 'empty'}), not JSON lines, not a smoke test log"
        )
    rows = []
    for row in reader:
        cleaned = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        rows.append((reader.line_num, {k: v for k, v in cleaned.items() if v != ""}))
    return rows


def _number(file: Path, number: int, row: Mapping[str, Any], key: str) -> float:
    try:
        value = float(row[key])
    except (TypeError, ValueError):
        raise MetricsError(f"{file}: line {number}: {key} {row[key]!r} is not a number") from None
    if not math.isfinite(value):
        raise MetricsError(f"{file}: line {number}: {key} is {value}")
    return value


def _rows(file: Path, rows: Iterable[tuple[int, Any]], kind: str) -> Curve:
    samples: list[Sample] = []
    units: set[str] = set()
    last_time: float | None = None
    for number, row in rows:
        if not isinstance(row, dict):
            raise MetricsError(f"{file}: line {number}: not an object with a step")
        if "step" not in row:
            raise MetricsError(f"{file}: line {number}: no 'step'")
        step_f = _number(file, number, row, "step")
        if step_f != int(step_f) or step_f < 0:
            raise MetricsError(f"{file}: line {number}: step {row['step']!r} is not a step number")
        step = int(step_f)
        if "mfu" in row:
            value = _number(file, number, row, "mfu")
            if not 0 <= value <= 1:
                raise MetricsError(
                    f"{file}: line {number}: mfu {value} is not a fraction of peak "
                    "(45% MFU is 0.45)"
                )
            units.add(MFU)
        elif "tokens" in row and ("seconds" in row or "time" in row):
            tokens = _number(file, number, row, "tokens")
            if "seconds" in row:
                seconds = _number(file, number, row, "seconds")
            else:
                now = _number(file, number, row, "time")
                seconds, last_time = (now - last_time if last_time is not None else None), now
                if seconds is None:
                    continue  # the first step's end time: no duration yet
            if seconds <= 0 or tokens < 0:
                raise MetricsError(
                    f"{file}: line {number}: step {step} took {seconds} s for {tokens} tokens"
                )
            value = tokens / seconds
            units.add(TOKENS_PER_S)
        else:
            raise MetricsError(
                f"{file}: line {number}: give 'mfu', or 'tokens' with 'seconds' or 'time' "
                f"(found: {', '.join(sorted(row)) or 'nothing'})"
            )
        samples.append(Sample(step, value))
    if not samples:
        raise MetricsError(f"{file}: no steps")
    if len(units) > 1:
        raise MetricsError(f"{file}: some rows give mfu, others tokens: use one for every row")
    return Curve(tuple(samples), units.pop(), 0, kind)


def _smoke_json(file: Path, doc: Mapping[str, Any]) -> Curve:
    try:
        per_step = (
            float(doc["flops_per_token"])
            * float(doc["tokens_per_step"])
            / (int(doc["gpus"]) * float(doc["peak_tflops"]) * 1e12)
        )
        samples = tuple(
            Sample(int(s["step"]), per_step / float(s["seconds"])) for s in doc["steps"]
        )
        warmup = int((doc.get("config") or {}).get("warmup", SMOKE_WARMUP))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise MetricsError(f"{file}: not a smoke test result: {exc!r}") from exc
    if not samples:
        raise MetricsError(f"{file}: the smoke test recorded no steps")
    return Curve(
        samples,
        MFU,
        warmup,
        f"smoke test result ({doc.get('device', '?')}, {doc.get('gpus')} GPU(s))",
    )


def _smoke_log(file: Path, text: str) -> Curve | None:
    samples = []
    for line in text.splitlines():
        line = re.sub(r"^\[[^\]]*\]:?\s*", "", line.strip())  # torchrun's [rank0]: prefix
        m = _SMOKE_LINE.match(line)
        if m:
            samples.append(Sample(int(m[1]), float(m[3]) / 100))
    if not samples:
        return None
    return Curve(tuple(samples), MFU, SMOKE_WARMUP, "smoke test log")


# -- the expected value ---------------------------------------------------------------------


def baseline(path: str | os.PathLike, warmup: int | None = None) -> tuple[float, str, str]:
    """(expected value, unit, where it came from) from a healthy run: a load report of the
    same hardware (``racksmith gpu run``'s JSON: the smoke test's median MFU), or any file
    :func:`read` takes (its median after the warm-up)."""
    file = Path(path)
    try:
        doc = json.loads(file.read_text())
    except OSError as exc:
        raise MetricsError(f"{file}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "load":
        smoke = (doc.get("figures") or {}).get("smoke") or {}
        value = smoke.get("smoke_mfu") or smoke.get("mfu_median")
        if not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise MetricsError(
                f"{file}: a load report without the smoke test's MFU "
                "(run the load checks with the smoke test)"
            )
        return float(value), MFU, f"smoke test median of load report {file.name}"
    curve = read(file)
    values = [s.value for s in curve.judged(warmup)]
    if not values:
        raise MetricsError(f"{file}: no steps after the warm-up")
    return statistics.median(values), curve.unit, f"median of {curve.source} {file.name}"
