"""Everything a run directory gets at the end of a run, from one report: triage and tickets,
``report.json``, ``report.txt``, ``report.html``, ``report.csv`` and the Prometheus textfile
``report.prom`` (also, atomically, at a textfile collector's path when one is given). Each
host is compared with its result in the run before (the health history): "new since the last
run".

The callback calls :func:`publish` when ``site.yml`` ends; ``racksmith report RUN_DIR`` calls
:func:`load_run` then :func:`publish` to rebuild the same files from ``report.json`` (after a
triage rule changed, say). Both read the golden set the validate phase wrote, so the report's
GOLDEN column is ``golden-set.json``'s verdict, never a second opinion.
"""

from __future__ import annotations

import csv
import io
import json
import os
import string
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from racksmith.report.html import render_html
from racksmith.report.model import HostRecord, RunReport, Triaged
from racksmith.report.prom import render_prom
from racksmith.triage import history
from racksmith.triage.classify import Diagnosis, classify, evidence_from_report
from racksmith.triage.tickets import TICKETS_DIR, file_stem, write_tickets

GOLDEN_SET = "golden-set.json"
REPORT_JSON = "report.json"


@dataclass(frozen=True)
class Published:
    text: str
    paths: dict[str, Path]
    diagnoses: tuple[Diagnosis, ...]
    warnings: tuple[str, ...] = ()


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
    """Write through a temporary file in the same directory and a rename: a reader (node
    exporter's textfile collector, a browser) sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


#: Fields a ticket URL template may use (each URL-encoded).
TICKET_FIELDS = ("host", "cause", "title", "action", "run", "summary")


def check_ticket_url(template: str) -> str:
    """The template itself, or a ValueError naming the field it does not know."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise ValueError(f"ticket URL template {template!r}: {exc}") from exc
    unknown = sorted(names - set(TICKET_FIELDS))
    if unknown:
        known = ", ".join("{" + f + "}" for f in TICKET_FIELDS)
        raise ValueError(
            f"ticket URL template {template!r}: unknown field {{{unknown[0]}}} (known: {known})"
        )
    return template


def ticket_urls(report: RunReport, template: str) -> None:
    """Fill each failed host's ticket link from a real tracker's URL template."""
    check_ticket_url(template)
    for rec in report.machines():
        if rec.triage:
            values = {
                "host": rec.name,
                "cause": rec.triage.cause,
                "title": rec.triage.title,
                "action": rec.triage.action,
                "run": report.run_id,
                "summary": f"{rec.name}: {rec.triage.title} ({rec.result})",
            }
            rec.triage.url = template.format(**{k: quote(v, safe="") for k, v in values.items()})


def compare_with_history(report: RunReport, path: Path) -> None:
    """Compare the report with the run recorded before it in the health history (the last one
    when this run is not recorded yet): what is new since the last run."""
    records = history.read(path)
    ids = [r.run_id for r in records]
    before = records[: ids.index(report.run_id)] if report.run_id in ids else records
    if before:
        last = before[-1]
        report.compare({n: h.result for n, h in last.hosts.items()}, last.run_id)
    else:
        report.compare(None)


CSV_COLUMNS = (
    "host", "bmc", "model", "location", "result", "since_last_run", "cause", "action", "ticket",
    "reasons", "skipped",
)  # fmt: skip


def sorted_for_people(report: RunReport) -> list[HostRecord]:
    """Failures first (by result, then name), then hosts not decided, then the golden ones."""
    order = {"GOLDEN": 2, "INCOMPLETE": 1}
    return sorted(report.machines(), key=lambda r: (order.get(r.result, 0), r.result, r.name))


def render_csv(report: RunReport) -> str:
    """One row per machine, failures first as in the HTML page, for a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for rec in sorted_for_people(report):
        t = rec.triage
        writer.writerow([
            rec.name, rec.facts.get("bmc", ""), rec.facts.get("model", ""), rec.location or "",
            rec.result, report.since_last(rec), t.cause if t else "", t.action if t else "",
            (t.url or t.ticket or "") if t else "", "; ".join(rec.reasons),
            "; ".join(s.what for s in rec.skips),
        ])  # fmt: skip
    return out.getvalue()


def publish(
    report: RunReport,
    run_dir: str | os.PathLike,
    *,
    html_path: str | os.PathLike | None = None,
    history_path: str | os.PathLike | None = None,
    prom_path: str | os.PathLike | None = None,
    ticket_url: str | None = None,
) -> Published:
    """Triage, write the tickets and every form of the report; return the terminal text.
    ``history_path`` (default: history.jsonl beside the run directory) is only read."""
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    diagnoses = triage(report)
    tickets = write_tickets(diagnoses, folder, report.run_id)
    for host, ticket in tickets.items():
        report.host(host).triage.ticket = ticket
    if ticket_url:
        ticket_urls(report, ticket_url)
    warnings = []
    try:
        compare_with_history(report, Path(history_path or history.default_path(folder)))
    except (OSError, ValueError) as exc:  # the report still matters more than the comparison
        report.compare(None)
        warnings.append(f"not compared with the last run: {exc}")
    text = report.render_text()
    prom = render_prom(report)
    html = render_html(report, sorted_for_people(report))
    paths = {
        "json": _write(folder / REPORT_JSON, report.to_json() + "\n"),
        "text": _write(folder / "report.txt", text + "\n"),
        "html": _write(Path(html_path) if html_path else folder / "report.html", html),
        "csv": _write(folder / "report.csv", render_csv(report)),
        "prom": _write(folder / "report.prom", prom),
    }
    if prom_path:
        paths["textfile"] = _write(Path(prom_path), prom)
    return Published(text, paths, tuple(diagnoses), tuple(warnings))


def read_report(run_dir: str | os.PathLike) -> RunReport:
    """The run's report for reading (``racksmith report --json``): triaged in memory, each
    failed host's ticket as the run directory has it; nothing is written."""
    report = load_run(run_dir)
    triage(report)
    folder = Path(run_dir)
    for rec in report.machines():
        stem = f"{TICKETS_DIR}/{file_stem(rec.name)}.md"
        if rec.triage and (folder / stem).is_file():
            rec.triage.ticket = stem
    return report
