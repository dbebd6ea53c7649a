"""Prometheus textfile output for node_exporter's textfile collector.

The file is written to a temporary name beside the target and renamed into place, so the
collector never reads a half-written file (node_exporter's documented requirement).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from .outcome import Severity
from .report import Report

PREFIX = "racksmith_health"
_NAME = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: dict[str, str], extra: str = "") -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items())
    if extra:
        inner = f"{inner},{extra}" if inner else extra
    return "{" + inner + "}" if inner else ""


def render(report: Report) -> str:
    """The textfile content: verdict, per-check status and duration, and check metrics."""
    base = {"kind": report.kind, "profile": report.profile}
    series: dict[str, list[str]] = defaultdict(list)
    helps = {
        "fit": "1 if the last run found the host fit, else 0.",
        "exit_code": "Exit code of the last run: 0 fit, 1 not fit, 2 could not decide.",
        "standin": "1 if the last run replayed captured outputs (lab stand-in), else 0.",
        "last_run_timestamp_seconds": "When the last run started (Unix time).",
        "run_duration_seconds": "Wall time of the last run.",
        "check_status": "1 for the status each check ended in (one series per status).",
        "check_duration_seconds": "Wall time of each check.",
    }
    series["fit"].append(f"{_labels(base)} {int(report.exit_code == 0)}")
    series["exit_code"].append(f"{_labels(base)} {report.exit_code}")
    series["standin"].append(f"{_labels(base)} {int(bool(report.standin))}")
    series["last_run_timestamp_seconds"].append(f"{_labels(base)} {report.started:.0f}")
    series["run_duration_seconds"].append(f"{_labels(base)} {report.duration_s:.3f}")
    for result in report.results:
        labels = {**base, "check": result.name}
        for status in Severity:
            value = int(result.status is status)
            series["check_status"].append(f"{_labels({**labels, 'status': status.label})} {value}")
        series["check_duration_seconds"].append(f"{_labels(labels)} {result.duration_s:.3f}")
        for key, value in sorted(result.metrics.items()):
            match = _NAME.match(key)
            if not match:
                continue
            series[match.group(1)].append(
                f"{_labels(labels, match.group(2) or '')} {float(value):g}"
            )
    lines = []
    for name, samples in series.items():
        full = f"{PREFIX}_{name}"
        lines.append(
            f"# HELP {full} {helps.get(name, 'Measured by the check named in the labels.')}"
        )
        lines.append(f"# TYPE {full} gauge")
        lines.extend(f"{full}{sample}" for sample in samples)
    return "\n".join(lines) + "\n"


def write(report: Report, path: str | os.PathLike) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(render(report))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
