"""``racksmith bisect``: find the bad hosts of a multi-node job that fails on a group.

    racksmith bisect --hosts FILE --run 'CMD {hosts}' [--groups 6x8,8x6] [--dry-run] [--json]

``{hosts}`` in the command becomes the subset, comma-separated; the job passed when the
command exits 0. The command is split like a shell would split it but run without a shell
(use ``sh -c '...'`` for pipes). Each job's output goes to a log file (``--log-dir``, a new
temporary folder by default, named on stderr), never to stdout. With ``--json`` stdout is
JSON lines: the plan, one line per round, and last ``{"blamed": [...], "rounds": N,
"runs": M, "unresolved": [...]}``. Exit 0 when the search finished, 1 when it ran out of
rounds with hosts unresolved, 2 for bad input.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.optionspec import add_deprecated, seconds
from racksmith.triage.bisect import BatchRunner, Round, bisect, parse_groups, plan

_EPILOG = """examples:
  racksmith bisect --hosts job-hosts.txt --run 'ssh ctl /opt/jobs/nccl-test {hosts}' --dry-run
  racksmith bisect --hosts job-hosts.txt --run 'ssh ctl /opt/jobs/nccl-test {hosts}' \\
      --groups 6x8,8x6 --deadline 900 --json
hosts file: one host per line; blank lines and lines starting with # are ignored.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--hosts", required=True, metavar="FILE", help="hosts, one per line")
    parser.add_argument("--run", required=True, metavar="CMD",
                        help="the job; {hosts} becomes the subset, comma-separated")
    parser.add_argument("--groups", metavar="AxB,BxA",
                        help="first round's two groupings, COUNTxSIZE (default: near-square)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--json", action="store_true", help="JSON lines on stdout")
    parser.add_argument("--confirm", type=int, default=3, metavar="N",
                        help="a host is blamed when its own job fails N times (default 3)")
    parser.add_argument("--min-size", type=int, default=2, metavar="N",
                        help="pad smaller jobs with cleared hosts up to N (default 2)")
    parser.add_argument("--parallel", type=int, default=0, metavar="N",
                        help="jobs at once (default: every job of a round)")
    deadline = parser.add_argument("--deadline", dest="timeout", type=seconds, default=None,
                                   metavar="SECONDS",
                                   help="a job running longer than SECONDS failed (default: none)")
    add_deprecated(parser, deadline, "--timeout")
    parser.add_argument("--max-rounds", type=int, default=30, metavar="N")
    parser.add_argument("--log-dir", metavar="DIR", help="job logs (default: a new temp folder)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also copy each job's output to stderr")
    parser.set_defaults(func=run)


def read_hosts(path: str) -> list[str]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"--hosts {path}: {exc.strerror or exc}") from exc
    hosts: list[str] = []
    where: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if any(c.isspace() for c in line) or "," in line:
            raise UsageError(f"--hosts {path}: line {number}: one host per line, got {line!r}")
        if line in where:
            raise UsageError(
                f"--hosts {path}: line {number}: {line} is already on line {where[line]}"
            )
        where[line] = number
        hosts.append(line)
    if not hosts:
        raise UsageError(f"--hosts {path}: no hosts in the file")
    return hosts


def command_argv(template: str) -> list[str]:
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise UsageError(f"--run {template!r}: {exc}") from exc
    if not argv or not any("{hosts}" in a for a in argv):
        raise UsageError(f"--run {template!r}: the command must contain {{hosts}}")
    if "{hosts}" in argv[0] or shutil.which(argv[0]) is None:
        raise UsageError(f"--run {template!r}: {argv[0]!r} is not a command on PATH")
    return argv


def command_runner(argv: list[str], log_dir: Path, parallel: int, timeout: float | None,
                   verbose: bool) -> BatchRunner:
    """Run each group as ``argv`` with ``{hosts}`` filled in; exit 0 means it passed."""
    counter = itertools.count(1)

    def one(job: int, group: tuple[str, ...]) -> bool:
        args = [a.replace("{hosts}", ",".join(group)) for a in argv]
        log = log_dir / f"job-{job:04d}.log"
        with log.open("w") as out:
            out.write(f"$ {shlex.join(args)}\n")
            out.flush()
            try:
                proc = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=timeout, check=False)
                passed = proc.returncode == 0
                out.write(f"\n[exit {proc.returncode}]\n")
            except subprocess.TimeoutExpired:
                passed = False
                out.write(f"\n[timed out after {timeout} s]\n")
            except OSError as exc:
                passed = False
                out.write(f"\n[could not run: {exc}]\n")
        if verbose:
            sys.stderr.write(log.read_text())
        return passed

    def run_batch(groups: list[tuple[str, ...]]) -> list[bool]:
        jobs = [next(counter) for _ in groups]
        with ThreadPoolExecutor(max_workers=max(1, parallel or len(groups))) as pool:
            return list(pool.map(one, jobs, groups))

    return run_batch


def _round_line(rnd: Round) -> str:
    failed = [",".join(g) for g, ok in zip(rnd.groups, rnd.passed, strict=True) if not ok]
    shown = "; ".join(failed[:4]) + (f"; +{len(failed) - 4} more" if len(failed) > 4 else "")
    return (f"round {rnd.number} ({rnd.kind}, {rnd.note}): {len(rnd.groups)} job(s), "
            f"{len(failed)} failed" + (f": {shown}" if failed else ""))


def run(args: argparse.Namespace) -> int:
    hosts = read_hosts(args.hosts)
    argv = command_argv(args.run)
    for name in ("confirm", "min_size", "max_rounds"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    try:
        groups = parse_groups(args.groups, len(hosts)) if args.groups else None
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    the_plan = plan(hosts, groups)

    def emit(doc: dict) -> None:
        print(json.dumps(doc, sort_keys=True), flush=True)

    if args.json:
        emit({"plan": the_plan, "dry_run": args.dry_run})
    else:
        print(f"bisect: {len(hosts)} hosts; round 1 runs {' and '.join(the_plan['groupings'])} "
              f"({the_plan['first_round_runs']} jobs in parallel); one host at a time would "
              f"take {the_plan['one_at_a_time_runs']} runs")
        for label, groups_ in (("rows", "rows"), ("columns", "columns")):
            for i, g in enumerate(the_plan["first_round"][groups_], 1):
                print(f"  {label} {i}: {','.join(g)}")
    if args.dry_run:
        return 0
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="racksmith-bisect-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"racksmith bisect: job logs in {log_dir}", file=sys.stderr)
    runner = command_runner(argv, log_dir, args.parallel, args.timeout, args.verbose)
    outcome = bisect(
        hosts, runner, groups=groups, confirm=args.confirm, min_size=args.min_size,
        max_rounds=args.max_rounds,
        on_round=(lambda r: emit(r.to_dict())) if args.json else (lambda r: print(_round_line(r))),
    )
    if args.json:
        emit(outcome.to_dict())
    else:
        blamed = ", ".join(outcome.blamed) or "nobody (the job passes without any host removed)"
        print(f"blamed: {blamed}  ({outcome.runs} runs in {outcome.rounds} rounds)")
        if outcome.unresolved:
            print(f"unresolved after {outcome.rounds} rounds: {', '.join(outcome.unresolved)}")
    return 1 if outcome.unresolved else 0
