"""The run report as a Prometheus textfile (node-exporter's textfile collector format), so a
dashboard can show golden and failed hosts by cause, and what roles skipped, without parsing
the report.

The run is one series, ``racksmith_run_info{run, run_dir} 1``, with its finish time in
``racksmith_run_finish_timestamp_seconds``; no other series has a ``run`` label, so each run
replaces the last one's values instead of starting new series (a textfile collector file is the
latest state, not a log). Written by hand rather than with ``prometheus_client``: a dozen lines
of the text format, and no registry to keep apart from the process's own.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from racksmith.report.model import RunReport


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{_label(str(v))}"' for k, v in labels.items())


def _timestamp(iso: str | None) -> float | None:
    """Unix seconds of the report's ``finished`` (ISO 8601 UTC), None when absent/unreadable."""
    if not iso:
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _metric(out: list[str], name: str, help_text: str) -> None:
    out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]


def render_prom(report: RunReport) -> str:
    records = report.machines()
    out: list[str] = []
    _metric(out, "racksmith_run_info", "The run these values are from (always 1).")
    out.append(f"racksmith_run_info{{{_labels(run=report.run_id, run_dir=report.run_dir)}}} 1")
    finished = _timestamp(report.finished)
    if finished is not None:
        _metric(out, "racksmith_run_finish_timestamp_seconds", "When the run finished (Unix time).")
        out.append(f"racksmith_run_finish_timestamp_seconds {finished:.0f}")
    _metric(out, "racksmith_run_hosts", "Hosts of the run by final result.")
    for result, count in report.summary().items():
        out.append(f"racksmith_run_hosts{{{_labels(result=result)}}} {count}")
    causes = Counter(rec.triage.cause for rec in records if rec.triage)
    _metric(out, "racksmith_run_failures", "Hosts of the run that failed, by cause.")
    for cause, count in sorted(causes.items()):
        out.append(f"racksmith_run_failures{{{_labels(cause=cause)}}} {count}")
    skips = Counter((s.role, s.part) for rec in records for s in rec.skips)
    _metric(
        out,
        "racksmith_run_skips",
        "Hosts of the run on which a role skipped a part (all: the whole role).",
    )
    for (role, part), count in sorted(skips.items()):
        out.append(f"racksmith_run_skips{{{_labels(role=role, part=part)}}} {count}")
    _metric(out, "racksmith_host_golden", "1 when the host is in the run's golden set, else 0.")
    for rec in records:
        golden = 1 if rec.result == "GOLDEN" else 0
        out.append(f"racksmith_host_golden{{{_labels(host=rec.name)}}} {golden}")
    _metric(out, "racksmith_host_failure", "1 for each failed host of the run, with its cause.")
    for rec in records:
        if rec.triage:
            labels = _labels(
                host=rec.name,
                result=rec.result,
                cause=rec.triage.cause,
                action=rec.triage.action,
            )
            out.append(f"racksmith_host_failure{{{labels}}} 1")
    return "\n".join(out) + "\n"
