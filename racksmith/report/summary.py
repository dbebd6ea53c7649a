"""The run's summary for AWX: results and failure causes counted, from the host facts alone.

A playbook's last task hands it to ``ansible.builtin.set_stats`` (playbooks/tasks/
run_summary.yml), so AWX shows it as the job's artifacts and a workflow's next node can branch
on it (``racksmith.results.GOLDEN``, ``racksmith.causes.gpu_missing``). It is built from the
same host facts the report reads (quarantine, failed phase, health verdict, Redfish and MAAS
facts) through :meth:`RunReport.annotate`, the golden set validate wrote in the run directory
(``golden-set.json``: the fit verdict, as in the report) and the same triage, so a host's
result and cause are the report's. Task counts the report has from the callback are not visible
to a task, so a host that failed without recording a phase (no ``rescue:``) is ``INCOMPLETE``
here; the run directory's report.json is the full account, and ``run_dir`` says where it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from racksmith.report.model import CONTROLLER, HOST_VARS, RunReport
from racksmith.report.publish import attach_golden_set
from racksmith.triage.classify import classify, evidence_from_report

SCHEMA = "racksmith.run-summary/v1"


def run_summary(
    hostvars: Mapping[str, Mapping[str, Any]], hosts: Iterable[str], run_dir: str = ""
) -> dict[str, Any]:
    """Counts per result and per failure cause over ``hosts`` (the controller left out), the
    golden hosts' count, and the run directory."""
    hosts = list(hosts)
    report = RunReport(run_id="", run_dir=run_dir, started="")
    for name in hosts:
        if name == CONTROLLER:
            continue
        facts = hostvars.get(name)
        if not isinstance(facts, Mapping):
            raise ValueError(f"run_summary: no host variables for {name!r}")
        report.annotate(name, {k: facts.get(k) for k in HOST_VARS})
    if run_dir:
        attach_golden_set(report, Path(run_dir))  # a broken one is a ValueError, said
        for name in [n for n in report.hosts if n not in hosts]:
            del report.hosts[name]  # hosts of the golden set outside this run (--limit)
    return summary_of(report, run_dir)


def summary_of(report: RunReport, run_dir: str = "") -> dict[str, Any]:
    """The summary of a report already built (its golden set attached): the merge of a sliced
    run hands AWX this one, from the shards' reports (racksmith.report.merge)."""
    data = report.to_dict()["hosts"]
    causes = Counter(
        classify(evidence_from_report(name, host)).cause.name
        for name, host in data.items()
        if host["result"] not in ("GOLDEN", "INCOMPLETE")
    )
    summary = report.summary()
    return {
        "schema": SCHEMA,
        "run_dir": run_dir,
        "hosts": len(data),
        "golden": summary.get("GOLDEN", 0),
        "results": summary,
        "causes": dict(sorted(causes.items())),
    }
