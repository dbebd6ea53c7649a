"""``racksmith diagnose hang``: which rank, GPU and host stopped a hung job, in seconds.

Reads every training process on the selected hosts at once (py-spy stacks, flight-recorder
dumps, kernel log), groups the ranks, names who differs and who is silent, runs the health
agent's quick checks on those hosts, and writes a ticket per named host through
racksmith.triage into ``--out`` (``DIR/tickets/``, ``DIR/hang.json``). Exit 0 when every rank
is in the majority and every host answered, 1 when a host is named or the evidence is
incomplete (a silent host, an unread rank, no majority), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.optionspec import seconds, set_examples
from racksmith.secrets import SecretError, expand_path, read_credentials_file
from racksmith.triage.classify import Diagnosis, HostEvidence, Line, classify
from racksmith.triage.diagnose import collect
from racksmith.triage.diagnose.hang import HangReport, analyse, summary
from racksmith.triage.tickets import write_tickets

HELP = "name the rank, GPU and host that stopped a hung training job"
DEFAULT_DEADLINE = 20.0
DEFAULT_HEALTH_DEADLINE = 8.0


def configure(parser: argparse.ArgumentParser) -> None:
    set_examples(
        parser,
        "racksmith diagnose hang -i inventory/site/ --limit job42_hosts",
        "racksmith diagnose hang -i inventory/site/ --limit 'gpu-r07-*' --deadline 15 --json",
        "racksmith diagnose hang -i job-hosts.yml --match train.py --no-health --out runs/hang42",
    )
    parser.add_argument(
        "-i",
        "--inventory",
        required=True,
        metavar="INVENTORY",
        help="inventory path (or a comma-separated host list), as ansible's -i",
    )
    parser.add_argument(
        "-l",
        "--limit",
        metavar="HOSTS",
        help="the job's hosts, as ansible-playbook --limit (default: all)",
    )
    parser.add_argument(
        "--deadline",
        type=seconds,
        default=DEFAULT_DEADLINE,
        metavar="SECONDS",
        help="collecting from every host ends after SECONDS; a host that has "
        f"not answered by then is named (default {DEFAULT_DEADLINE:g})",
    )
    parser.add_argument(
        "--health-deadline",
        type=seconds,
        default=DEFAULT_HEALTH_DEADLINE,
        metavar="SECONDS",
        help=f"the quick checks on the named hosts (default {DEFAULT_HEALTH_DEADLINE:g})",
    )
    parser.add_argument(
        "--no-health",
        action="store_true",
        help="do not run the health agent's quick checks on the named hosts",
    )
    parser.add_argument(
        "--match",
        default="",
        metavar="TEXT",
        help="only processes whose command line contains TEXT (one job of "
        "several on the same hosts)",
    )
    parser.add_argument(
        "--no-native", action="store_true", help="Python frames only (py-spy without --native)"
    )
    parser.add_argument(
        "--no-push",
        action="store_true",
        help="never copy this controller's py-spy to a host that lacks one",
    )
    parser.add_argument(
        "--credentials-file",
        metavar="FILE",
        help="KEY=VALUE file (mode 0600) for the inventory's plugins (MAAS_URL, MAAS_API_KEY, ...)",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="where hang.json and tickets/ go (default runs/hang-<time>/)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.set_defaults(func=run)


def _inventory_env(credentials_file: str | None) -> dict[str, str] | None:
    if not credentials_file:
        return None
    try:
        values = read_credentials_file(expand_path(credentials_file))
    except SecretError as exc:
        raise UsageError(f"--credentials-file {credentials_file}: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"--credentials-file {credentials_file}: {exc.strerror or exc}") from exc
    return {**os.environ, **values}


def evidence(report: HangReport, health: Mapping[str, Sequence[str]]) -> list[HostEvidence]:
    """One triage evidence record per named host: the hang's reasons, the kernel log's lines
    and the quick checks' lines, for racksmith.triage to name a cause from."""
    out = []
    for host in report.named_hosts:
        lines: list[Line] = []
        result = "HANG_SUSPECT"
        for s in report.suspects:
            if s.rank.host == host:
                lines += [Line("hang", f"{s.rank.label}: {why}") for why in s.reasons]
                lines += [Line("stack", f.text()) for f in s.rank.frames[:8]]
        for h in report.unanswered:
            if h.host == host:
                result = "NO_ANSWER"
                lines.append(
                    Line("hang", f"host unreachable: no answer to diagnose hang: {h.error}")
                )
        for r in report.unread:
            if r.host == host:
                lines.append(Line("hang", f"{r.label}: stacks could not be read: {r.stack_error}"))
        lines += [Line("kernel", text) for text in report.kernel.get(host, ())]
        for text in health.get(host, ()):
            if text.startswith("UNKNOWN health:"):  # the agent did not run: not the host's fault
                lines.append(Line("health agent", text.removeprefix("UNKNOWN health: ")))
            elif not text.startswith("verdict "):
                lines.append(Line("health", text))
        out.append(
            HostEvidence(host=host, result=result, failed_phase="diagnose", lines=tuple(lines))
        )
    return out


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    env = _inventory_env(args.credentials_file)
    try:
        targets = collect.resolve(args.inventory, args.limit, env=env)
    except collect.InventoryError as exc:
        raise UsageError(str(exc)) from exc
    resolved = time.monotonic()
    settings = collect.Settings(
        deadline=args.deadline,
        native=not args.no_native,
        match=args.match,
        push_py_spy=not args.no_push,
        local_py_spy=collect.local_py_spy(),
    )
    probes = collect.collect(targets, settings)
    collected = time.monotonic()
    report = analyse(probes)
    health: dict[str, list[str]] = {}
    if report.named_hosts and not args.no_health:
        health = collect.health_of(targets, report.named_hosts, args.health_deadline)
    checked = time.monotonic()

    out_dir = Path(args.out or f"runs/hang-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
    diagnoses: list[Diagnosis] = [classify(e) for e in evidence(report, health)]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tickets = write_tickets(diagnoses, out_dir, out_dir.name)
    except OSError as exc:
        raise UsageError(f"--out {out_dir}: {exc.strerror or exc}") from exc
    doc = {
        **report.to_dict(),
        "health": health,
        "causes": {d.host: d.cause.name for d in diagnoses},
        "tickets": {host: str(out_dir / path) for host, path in tickets.items()},
        "out_dir": str(out_dir),
        "seconds": {
            "inventory": round(resolved - started, 2),
            "collect": round(collected - resolved, 2),
            "health": round(checked - collected, 2),
            "total": round(time.monotonic() - started, 2),
        },
    }
    (out_dir / "hang.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if args.json:
        json.dump(doc, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(summary(report, health))
        for d in diagnoses:
            print(f"  ticket {out_dir / tickets[d.host]}: {d.cause.title} ({d.cause.action.value})")
        s = doc["seconds"]
        print(
            f"took {s['total']:.1f} s (inventory {s['inventory']:.1f}, collect "
            f"{s['collect']:.1f}, health {s['health']:.1f}); report {out_dir}/hang.json"
        )
    return 0 if report.decided and not report.named_hosts else 1
