"""Everything a run directory gets at the end of a run, from one report: triage and tickets,
``report.json``, ``report.txt``, ``report.html`` and the Prometheus textfile ``report.prom``.

The callback calls :func:`publish` when ``site.yml`` ends; ``racksmith report RUN_DIR`` calls
:func:`load_run` then :func:`publish` to rebuild the same files from ``report.json`` (after a
triage rule changed, say). Both read the golden set the validate phase wrote, so the report's
GOLDEN column is ``golden-set.json``'s verdict, never a second opinion.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from racksmith.report.html import render_html
from racksmith.report.model import RunReport, Triaged
from racksmith.report.prom import render_prom
from racksmith.triage.classify import Diagnosis, classify, evidence_from_report
from racksmith.triage.tickets import write_tickets

GOLDEN_SET = "golden-set.json"
REPORT_JSON = "report.json"


@dataclass(frozen=True)
class Published:
    text: str
    paths: dict[str, Path]
    diagnoses: tuple[Diagnosis, ...]


def read_json(path: Path) -> dict:
    """A JSON object from ``path``; anything else is a ValueError naming the file."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def attach_golden_set(report: RunReport, run_dir: Path) -> bool:
    """Take the run's golden set if validate wrote one; a broken one is an error, not absent."""
    path = run_dir / GOLDEN_SET
    if not path.exists():
        return False
    report.attach_golden(read_json(path))
    return True


def load_run(run_dir: str | os.PathLike) -> RunReport:
    """The report of a run directory, with its golden set attached."""
    folder = Path(run_dir)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a directory")
    path = folder / REPORT_JSON
    data = read_json(path)
    try:
        report = RunReport.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    report.run_dir = str(folder)
    attach_golden_set(report, folder)
    return report


#: Results that are not failures: golden, or not decided because the run stopped before
#: (``--tags discover``, ``--limit``): no cause, no ticket.
NOT_FAILED = ("GOLDEN", "INCOMPLETE")


def triage(report: RunReport) -> list[Diagnosis]:
    """Classify every machine that failed (not golden, not merely incomplete) and note the
    cause on its record."""
    for rec in report.hosts.values():
        rec.triage = None
    hosts = report.to_dict()["hosts"]
    diagnoses = [
        classify(evidence_from_report(rec.name, hosts[rec.name]))
        for rec in report.machines()
        if rec.result not in NOT_FAILED
    ]
    for d in diagnoses:
        report.host(d.host).triage = Triaged(d.cause.name, d.cause.title, d.cause.action.value)
    return diagnoses


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def publish(
    report: RunReport, run_dir: str | os.PathLike, *, html_path: str | os.PathLike | None = None
) -> Published:
    """Triage, write the tickets and every form of the report; return the terminal text."""
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    diagnoses = triage(report)
    tickets = write_tickets(diagnoses, folder, report.run_id)
    for host, ticket in tickets.items():
        report.host(host).triage.ticket = ticket
    text = report.render_text()
    paths = {
        "json": _write(folder / REPORT_JSON, report.to_json() + "\n"),
        "text": _write(folder / "report.txt", text + "\n"),
        "html": _write(Path(html_path) if html_path else folder / "report.html",
                       render_html(report)),
        "prom": _write(folder / "report.prom", render_prom(report)),
    }
    return Published(text=text, paths=paths, diagnoses=tuple(diagnoses))
