"""``racksmith restart-plan``: after a crash, the N best hosts to restart the job on.

Reruns the health agent's quick checks on every candidate host (in parallel, each within
``--deadline``), drops the suspects of the crash's diagnosis (``--diagnosis``: the JSON of
``racksmith diagnose hang`` or ``diagnose mfu``), ranks the rest with the golden history and
prints the N best as a ``--limit`` list (``--out FILE``: also a hostfile, one host per line),
with why each excluded host is out. Exit 0 with N hosts, 1 with fewer, 2 for bad input.

The checks run as the health role runs them: ``python3 -m racksmith.health check --json`` on
the host, from the agent the role shipped (``--agent-path``), over SSH as the inventory says
(``ansible_connection: local`` runs it here). ``--check CMD`` runs another command instead,
``{host}`` replaced by each host's name (split like a shell would, run without one).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.optionspec import positive_int, seconds
from racksmith.triage import history, rank
from racksmith.triage.diagnose import hostsel, restart

#: Where the health role ships the agent (roles/health/defaults: health_agent_dir + /current).
AGENT_PATH = "/opt/racksmith/agent/current"
SCHEMA = "racksmith.restart-plan/v1"

_EPILOG = """examples:
  racksmith restart-plan -i inventory/site -l job42 -n 60 --diagnosis hang.json \\
      --history runs/history.jsonl --out hosts.txt
  racksmith restart-plan --hosts job-hosts.txt -n 6 --diagnosis mfu.json --json
  racksmith restart-plan --hosts job-hosts.txt -n 6 \\
      --check 'ssh {host} python3 -m racksmith.health check --json'
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    hostsel.add_options(parser, "the candidate hosts")
    parser.add_argument(
        "-n", "--count", type=positive_int, required=True, help="hosts the job needs"
    )
    parser.add_argument(
        "--diagnosis",
        action="append",
        default=[],
        metavar="FILE",
        help="a diagnosis JSON (diagnose hang/mfu --json); its suspects are out"
        " (repeat for several)",
    )
    parser.add_argument(
        "--history",
        metavar="FILE",
        help="health history to rank with (default: none, every host equal)",
    )
    parser.add_argument(
        "--half-life",
        type=float,
        default=rank.HALF_LIFE_DAYS,
        metavar="DAYS",
        help="a failure this old weighs half (default %(default)s)",
    )
    parser.add_argument(
        "--check", metavar="CMD", help="run this instead of the agent over SSH; {host} is each host"
    )
    parser.add_argument(
        "--agent-path",
        default=AGENT_PATH,
        metavar="DIR",
        help="the agent's PYTHONPATH on the hosts (default %(default)s)",
    )
    parser.add_argument("--profile", help="the agent's host-type profile (default: its own)")
    parser.add_argument(
        "--deadline",
        type=seconds,
        default=120.0,
        metavar="SECONDS",
        help="each host's quick checks must end within SECONDS (default 120)",
    )
    parser.add_argument(
        "--parallel",
        type=positive_int,
        default=32,
        metavar="N",
        help="hosts checked at once (default 32)",
    )
    parser.add_argument("--out", metavar="FILE", help="also write the chosen hosts, one per line")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def _candidates(args: argparse.Namespace):
    """[(host, argv that runs its quick checks)]"""
    if args.check:
        try:
            template = shlex.split(args.check)
        except ValueError as exc:
            raise UsageError(f"--check {args.check!r}: {exc}") from exc
        if not template or not any("{host}" in a for a in template):
            raise UsageError(f"--check {args.check!r}: the command must contain {{host}}")
    targets = hostsel.targets(args, required=True)
    out = []
    for t in targets:
        if args.check:
            argv = [a.replace("{host}", t.name) for a in template]
        else:
            remote = [
                "env",
                f"PYTHONPATH={args.agent_path}",
                t.python,
                "-m",
                "racksmith.health",
                "check",
                "--json",
                "--deadline",
                f"{max(1.0, args.deadline - 5):g}",
            ]
            if args.profile:
                remote += ["--profile", args.profile]
            argv = t.argv(remote, connect_timeout=min(30.0, args.deadline))
        out.append((t.name, argv))
    return out


def _run_one(host: str, argv: list[str], deadline: float) -> restart.QuickOutcome:
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=deadline,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return restart.quick_outcome(host, None, out, f"no verdict within {deadline:g} s")
    except OSError as exc:
        return restart.QuickOutcome(host, False, (f"quick checks did not run: {exc}",))
    return restart.quick_outcome(host, proc.returncode, proc.stdout, proc.stderr)


def _suspects(paths: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text())
            found = restart.suspects_of(doc, Path(path).name)
        except OSError as exc:
            raise UsageError(f"--diagnosis {path}: {exc.strerror or exc}") from exc
        except ValueError as exc:
            raise UsageError(f"--diagnosis {path}: {exc}") from exc
        for host, why in found.items():
            out.setdefault(host, why)
    return out


def run(args: argparse.Namespace) -> int:
    suspects = _suspects(args.diagnosis)
    records = []
    if args.history:
        if not Path(args.history).is_file():
            raise UsageError(f"--history {args.history}: no such file")
        try:
            records = history.read(args.history)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    if args.half_life <= 0:
        raise UsageError("--half-life must be positive")
    candidates = _candidates(args)
    with ThreadPoolExecutor(max_workers=min(args.parallel, len(candidates))) as pool:
        outcomes = list(pool.map(lambda c: _run_one(c[0], c[1], args.deadline), candidates))
    quick = {o.host: o for o in outcomes}
    the_plan = restart.plan(
        [h for h, _ in candidates], quick, suspects, records, args.count, args.half_life
    )
    if args.out:
        try:
            Path(args.out).write_text("".join(f"{h}\n" for h in the_plan.chosen))
        except OSError as exc:
            raise UsageError(f"--out {args.out}: {exc.strerror or exc}") from exc
    if args.json:
        doc = {
            "schema": SCHEMA,
            "candidates": len(candidates),
            "history": args.history,
            "diagnosis": args.diagnosis,
            "quick": [o.to_dict() for o in outcomes],
            **the_plan.to_dict(),
        }
        json.dump(doc, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(
            f"restart plan: {len(the_plan.chosen)} of {args.count} hosts wanted, from "
            f"{len(candidates)} candidates ({len(the_plan.excluded)} out, "
            f"{len(the_plan.spares)} spare)"
        )
        print(f"--limit {the_plan.to_dict()['limit'] or '(none)'}")
        for host, why in the_plan.excluded:
            print(f"out: {host}: {'; '.join(why)}")
        if the_plan.spares:
            print(f"spares, best first: {','.join(the_plan.spares)}")
    if the_plan.short:
        print(
            f"racksmith restart-plan: only {len(the_plan.chosen)} hosts fit and unsuspected, "
            f"{args.count} wanted",
            file=sys.stderr,
        )
        return 1
    return 0
