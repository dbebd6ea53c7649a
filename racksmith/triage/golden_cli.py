"""``racksmith golden rank|pick|record``: the golden set of a run, ranked by health history.

``rank`` lists the run's golden hosts best first (``--fleet``: every host whose latest
recorded run left it golden, for sites that rerun part of a rack); ``pick -n N`` chooses N of
them for a training run plus a spare margin (default 15%) from the next best; ``record`` adds
a run to the history (the report callback does it at the end of every run; recording twice is
a no-op). The history is ``runs/history.jsonl`` beside the run directories unless
``--history``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.report.publish import load_run, triage
from racksmith.triage import history, rank

_EPILOG = """examples:
  racksmith golden rank runs/20261130-064537-demo
  racksmith golden pick runs/20261130-064537-demo -n 64 --spare 0.15 --json
  racksmith golden record runs/20261130-064537-demo --history runs/history.jsonl
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (runs/<run>/)")
    common.add_argument(
        "--history", metavar="FILE", help="history file (default: RUN_DIR/../history.jsonl)"
    )
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument(
        "--fleet", action="store_true",
        help="rank every host whose latest recorded run left it golden, not just this run's",
    )
    fmt = argparse.RawDescriptionHelpFormatter

    p = subparsers.add_parser(
        "rank", parents=[common], help="the run's golden hosts, best first",
        epilog=_EPILOG, formatter_class=fmt,
    )
    p.add_argument("--half-life", type=float, default=rank.HALF_LIFE_DAYS, metavar="DAYS",
                   help="a failure this old weighs half (default %(default)s)")
    p.set_defaults(func=cmd_rank)

    p = subparsers.add_parser(
        "pick", parents=[common], help="pick N hosts and spares for a training run",
        epilog=_EPILOG, formatter_class=fmt,
    )
    p.add_argument("-n", "--count", type=int, required=True, help="hosts the job needs")
    p.add_argument("--spare", type=float, default=0.15,
                   help="spare margin as a fraction of N (default %(default)s)")
    p.add_argument("--half-life", type=float, default=rank.HALF_LIFE_DAYS, metavar="DAYS",
                   help="a failure this old weighs half (default %(default)s)")
    p.add_argument("--out", metavar="FILE", help="also write the picked hosts, one per line")
    p.set_defaults(func=cmd_pick)

    p = subparsers.add_parser(
        "record", parents=[common], help="add the run to the health history (once)",
        epilog=_EPILOG, formatter_class=fmt,
    )
    p.set_defaults(func=cmd_record)


def _load(args: argparse.Namespace):
    try:
        report = load_run(args.run_dir)
        triage(report)  # the causes go into the history
        path = Path(args.history) if args.history else history.default_path(args.run_dir)
        return report, path, history.read(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.run_dir}: {exc.strerror or exc}") from exc


def _with_this_run(report, records):
    """The history, plus this run if it is not recorded yet (ranking must see it)."""
    if any(r.run_id == report.run_id for r in records):
        return records
    return [*records, history.record_of(report.to_dict())]


def _ranked(args: argparse.Namespace):
    report, path, records = _load(args)
    records = _with_this_run(report, records)
    golden = rank.fleet_golden(records) if args.fleet else report.golden_hosts()
    try:
        ranked = rank.rank(golden, records, args.half_life)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    return report, path, ranked


def _emit(doc: dict) -> None:
    json.dump(doc, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


def cmd_rank(args: argparse.Namespace) -> int:
    report, path, ranked = _ranked(args)
    if args.json:
        _emit({"run_id": report.run_id, "history": str(path),
               "ranked": [s.to_dict() for s in ranked]})
        return 0
    print(f"golden set of run {report.run_id}: {len(ranked)} hosts, best first ({path})")
    for i, s in enumerate(ranked, 1):
        causes = ", ".join(s.causes) or "-"
        print(f"{i:>4}  {s.host:<20} penalty {s.penalty:6.3f}  failures {s.failures:<3} "
              f"passes {s.passes:<3} causes {causes}")
    return 0


def cmd_pick(args: argparse.Namespace) -> int:
    report, _path, ranked = _ranked(args)
    try:
        chosen = rank.pick(ranked, args.count, args.spare)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.out:
        Path(args.out).write_text("".join(f"{h}\n" for h in chosen.hosts))
    if args.json:
        _emit({"run_id": report.run_id, **chosen.to_dict()})
    else:
        print(f"hosts ({len(chosen.hosts)}): {','.join(chosen.hosts)}")
        print(f"spares ({len(chosen.spares)}): {','.join(chosen.spares) or '-'}")
    if chosen.short:
        print(f"racksmith golden pick: only {len(chosen.hosts)} golden hosts, "
              f"{chosen.wanted} wanted", file=sys.stderr)
        return 1
    if len(chosen.spares) < chosen.spares_wanted:
        print(f"racksmith golden pick: warning: {len(chosen.spares)} spares, "
              f"{chosen.spares_wanted} wanted", file=sys.stderr)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    report, path, _records = _load(args)
    try:
        added = history.append(path, history.record_of(report.to_dict()))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        _emit({"run_id": report.run_id, "history": str(path), "added": added})
    else:
        state = "added to" if added else "already in"
        print(f"run {report.run_id} {state} {path}")
    return 0
