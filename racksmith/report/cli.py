"""``racksmith report RUN_DIR``: rebuild and print a run's report (text, JSON, HTML, metrics).

Rereads ``report.json`` and ``golden-set.json`` from the run directory, triages every host
that did not end golden, rewrites the tickets, ``report.txt``, ``report.html``, ``report.csv``
and ``report.prom`` (and ``--prom-path``, a textfile collector's file), and prints the terminal
table. ``--json`` only reads: it prints the report as one JSON document and writes nothing.
``--skips`` adds every host's own list of what its roles skipped and why.
"""

from __future__ import annotations

import argparse
import json
import sys

from racksmith.errors import UsageError
from racksmith.report.publish import TICKET_FIELDS, check_ticket_url, load_run, publish, read_report

_EPILOG = """examples:
  racksmith report runs/20261130-064537-demo
  racksmith report runs/20261130-064537-demo --html /tmp/rack.html
  racksmith report runs/20261130-064537-demo --skips
  racksmith report runs/20261130-064537-demo --json | jq '.summary'
  racksmith report runs/20261130-064537-demo --json | jq '.hosts[] | select(.skips != [])'
  racksmith report runs/20261130-064537-demo --prom-path /var/lib/node-exporter/racksmith.prom
  racksmith report runs/20261130-064537-demo --ticket-url 'https://t.example/new?s={summary}'
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<run>/)")
    parser.add_argument(
        "--html", metavar="FILE", help="write the HTML page here (default RUN_DIR/report.html)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON document; reads only, writes nothing",
    )
    parser.add_argument(
        "--prom-path",
        metavar="FILE",
        help="also write the Prometheus textfile here, atomically (node exporter's textfile "
        "collector directory)",
    )
    parser.add_argument(
        "--ticket-url",
        metavar="TEMPLATE",
        type=_ticket_url,
        help="link each failed host to a ticket in a real tracker; fields, URL-encoded: "
        + ", ".join("{" + f + "}" for f in TICKET_FIELDS),
    )
    parser.add_argument(
        "--history",
        metavar="FILE",
        help="health history to compare with (default RUN_DIR/../history.jsonl); only read",
    )
    parser.add_argument(
        "--skips",
        action="store_true",
        help="after the table, list each host's skips (role/part: why); the table alone "
        "groups them by reason",
    )
    parser.set_defaults(func=run)


def _ticket_url(value: str) -> str:
    try:
        return check_ticket_url(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    try:
        if args.json:  # reads only: no ticket, page or metrics file is rewritten
            json.dump(read_report(args.run_dir).to_dict(), sys.stdout, sort_keys=True)
            sys.stdout.write("\n")
            return 0
        report = load_run(args.run_dir)
        published = publish(
            report,
            args.run_dir,
            html_path=args.html,
            history_path=args.history,
            prom_path=args.prom_path,
            ticket_url=args.ticket_url,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.run_dir}: {exc.strerror or exc}") from exc
    for warning in published.warnings:
        print(f"racksmith report: {warning}", file=sys.stderr)
    print(report.render_text(skips_per_host=True) if args.skips else published.text)
    print(f"html: {published.paths['html']}")
    return 0
