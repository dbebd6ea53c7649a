"""``racksmith triage RUN_DIR``: name each failed host's cause and write its ticket.

Same work as the end of a run (the report callback does it too), for a run directory on its
own: after a triage rule changed, or to list the tickets. Prints one line per failed host
(cause, action, ticket), or with ``--json`` one JSON document with every diagnosis.
"""

from __future__ import annotations

import argparse
import json
import sys

from racksmith.errors import UsageError
from racksmith.report.publish import load_run, publish
from racksmith.triage.tickets import file_stem

_EPILOG = """examples:
  racksmith triage runs/20261130-064537-demo
  racksmith triage runs/20261130-064537-demo --json | jq '.hosts[].cause.name'
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<run>/)")
    parser.add_argument("--json", action="store_true", help="print every diagnosis as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        report = load_run(args.run_dir)
        published = publish(report, args.run_dir)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.run_dir}: {exc.strerror or exc}") from exc
    diagnoses = published.diagnoses
    if args.json:
        doc = {
            "run_id": report.run_id,
            "hosts": [
                {**d.to_dict(), "ticket": f"tickets/{file_stem(d.host)}.md"} for d in diagnoses
            ],
        }
        json.dump(doc, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    if not diagnoses:
        print(f"run {report.run_id}: every host is golden, no tickets")
        return 0
    width = max(len(d.host) for d in diagnoses)
    for d in diagnoses:
        print(
            f"{d.host:<{width}}  {d.result:<16} {d.cause.name:<20} {d.cause.action.value:<18} "
            f"tickets/{file_stem(d.host)}.md"
        )
    print(f"run {report.run_id}: {len(diagnoses)} ticket(s) in {args.run_dir}/tickets/")
    return 0
