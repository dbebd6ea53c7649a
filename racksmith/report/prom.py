"""The run report as a Prometheus textfile (node-exporter's textfile collector format), so a
dashboard can show golden and failed hosts by cause, and what roles skipped, without parsing
the report."""

from __future__ import annotations

from collections import Counter

from racksmith.report.model import RunReport


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return ",".join(f'{k}="{_label(str(v))}"' for k, v in labels.items())


def render_prom(report: RunReport) -> str:
    run = report.run_id
    records = report.machines()
    out = [
        "# HELP racksmith_run_hosts Hosts of the run by final result.",
        "# TYPE racksmith_run_hosts gauge",
    ]
    for result, count in report.summary().items():
        out.append(f"racksmith_run_hosts{{{_labels(run=run, result=result)}}} {count}")
    causes = Counter(rec.triage.cause for rec in records if rec.triage)
    out += [
        "# HELP racksmith_run_failures Hosts of the run that failed, by cause.",
        "# TYPE racksmith_run_failures gauge",
    ]
    for cause, count in sorted(causes.items()):
        out.append(f"racksmith_run_failures{{{_labels(run=run, cause=cause)}}} {count}")
    skips = Counter((s.role, s.part) for rec in records for s in rec.skips)
    out += [
        "# HELP racksmith_run_skips Hosts of the run on which a role skipped a part (all: the"
        " whole role).",
        "# TYPE racksmith_run_skips gauge",
    ]
    for (role, part), count in sorted(skips.items()):
        out.append(f"racksmith_run_skips{{{_labels(run=run, role=role, part=part)}}} {count}")
    out += [
        "# HELP racksmith_host_golden 1 when the host is in the run's golden set, else 0.",
        "# TYPE racksmith_host_golden gauge",
    ]
    for rec in records:
        golden = 1 if rec.result == "GOLDEN" else 0
        out.append(f"racksmith_host_golden{{{_labels(run=run, host=rec.name)}}} {golden}")
    out += [
        "# HELP racksmith_host_failure 1 for each host of the run that failed, with its cause.",
        "# TYPE racksmith_host_failure gauge",
    ]
    for rec in records:
        if rec.triage:
            labels = _labels(
                run=run, host=rec.name, result=rec.result, cause=rec.triage.cause,
                action=rec.triage.action,
            )
            out.append(f"racksmith_host_failure{{{labels}}} 1")
    return "\n".join(out) + "\n"
