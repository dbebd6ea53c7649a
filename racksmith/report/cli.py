"""``racksmith report RUN_DIR``: rebuild and print a run's report (text, JSON, HTML, metrics).

Rereads ``report.json`` and ``golden-set.json`` from the run directory, triages every host
that did not end golden, rewrites the tickets, ``report.txt``, ``report.html`` and
``report.prom``, and prints the terminal table (or, with ``--json``, the report as one JSON
document). ``--skips`` adds every host's own list of what its roles skipped and why.
"""

from __future__ import annotations

import argparse
import json
import sys

from racksmith.errors import UsageError
from racksmith.report.publish import load_run, publish

_EPILOG = """examples:
  racksmith report runs/20261130-064537-demo
  racksmith report runs/20261130-064537-demo --html /tmp/rack.html
  racksmith report runs/20261130-064537-demo --skips
  racksmith report runs/20261130-064537-demo --json | jq '.summary'
  racksmith report runs/20261130-064537-demo --json | jq '.hosts[] | select(.skips != [])'
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<run>/)")
    parser.add_argument(
        "--html", metavar="FILE", help="write the HTML page here (default RUN_DIR/report.html)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.add_argument(
        "--skips",
        action="store_true",
        help="after the table, list each host's skips (role/part: why); the table alone "
        "groups them by reason",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        report = load_run(args.run_dir)
        published = publish(report, args.run_dir, html_path=args.html)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.run_dir}: {exc.strerror or exc}") from exc
    if args.json:
        json.dump(report.to_dict(), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(report.render_text(skips_per_host=True) if args.skips else published.text)
        print(f"html: {published.paths['html']}")
    return 0
