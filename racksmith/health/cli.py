"""``python3 -m racksmith.health``: the host agent's command line.

check     run the quick checks; print FIT / NOT FIT with every reason
          exit 0 fit, 1 not fit, 2 could not decide (still not fit)
profiles  list the built-in host-type profiles
capture   save this host's raw outputs as a fixture directory
golden    controller side: per-host reports in, the golden set out

Machine output: ``check --json`` prints exactly one JSON document on stdout and nothing else
(commands the checks run are captured, never inherited). Bad input (an option's value, a file
that cannot be read or written) exits 2 with a message naming it, before any check runs.
The argument types here are shared with ``racksmith.gpu``'s command line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence

from . import REPORT_SCHEMA
from . import profile as profiles
from .outcome import EXIT_UNDECIDED

ENV_PROFILE = "RACKSMITH_HEALTH_PROFILE"
#: Exit status for usage and input errors (argparse's own, kept for every bad input).
EXIT_USAGE = 2

EXAMPLES = """examples:
  python3 -m racksmith.health check                        # text verdict
  python3 -m racksmith.health check --json > report.json   # one JSON document on stdout
  python3 -m racksmith.health check --profile h200-x2-vm --prom /var/lib/node_exporter/rs.prom
  python3 -m racksmith.health check --only ecc,xid -v
  python3 -m racksmith.health capture /tmp/capture-$(hostname)

exit status: 0 fit, 1 not fit, 2 could not decide or bad input (both not fit)
"""


def positive_number(text: str) -> float:
    """argparse type: a finite number above zero (seconds, budgets)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text!r}")
    return value


def integer_at_least(minimum: int):
    """argparse type factory: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def output_file(text: str) -> str:
    """argparse type: a file we can write: not a directory, and its directory exists and is
    writable, or can be made (the nearest existing ancestor is a writable directory). Checked
    before the checks run, so a typo costs no run."""
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    ancestor = os.path.dirname(os.path.abspath(text))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise argparse.ArgumentTypeError(f"{text}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: directory {ancestor} is not writable")
    return text


def usage_error(prog: str, message: str) -> int:
    """Print ``prog: error: message`` to stderr, as argparse does, and return exit status 2."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m racksmith.health",
        description="racksmith host health agent",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s (report schema {REPORT_SCHEMA})"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = sub.add_parser("check", help="run the quick checks and print the verdict")
    check.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    check.add_argument(
        "--prom", metavar="FILE", type=output_file, help="also write Prometheus textfile metrics"
    )
    check.add_argument(
        "--report", metavar="FILE", type=output_file, help="also write the JSON report to FILE"
    )
    check.add_argument(
        "--profile",
        default=os.environ.get(ENV_PROFILE, profiles.DEFAULT_PROFILE),
        help=f"profile name or JSON file (default: ${ENV_PROFILE} or {profiles.DEFAULT_PROFILE})",
    )
    check.add_argument(
        "--deadline",
        type=positive_number,
        default=60.0,
        metavar="S",
        help="wall-clock budget for all checks together (default 60)",
    )
    check.add_argument("--only", metavar="CHECK,...", help="run only these checks")
    check.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)
    check.add_argument("--procfs", default="/proc", help=argparse.SUPPRESS)
    check.add_argument("-v", "--verbose", action="store_true", help="show every finding")
    check.set_defaults(func=cmd_check)

    lister = sub.add_parser("profiles", help="list built-in profiles")
    lister.set_defaults(func=cmd_profiles)

    capture = sub.add_parser("capture", help="save raw outputs of this host as fixtures")
    capture.add_argument("outdir")
    capture.set_defaults(func=cmd_capture)

    golden = sub.add_parser("golden", help="build the golden set from per-host reports")
    golden.add_argument(
        "--hosts", required=True, help="JSON: {host: {report: path | null, failure: reason | null}}"
    )
    golden.add_argument("--out", required=True, help="run directory to write into")
    golden.add_argument("--run-id", default="")
    golden.set_defaults(func=cmd_golden)
    return parser


def cmd_check(args: argparse.Namespace) -> int:
    from .checks import all_checks, requirements
    from .host import Host
    from .outcome import CheckResult, unknown
    from .report import Report
    from .runner import run_checks

    started_wall, started = time.time(), time.monotonic()
    specs = all_checks()
    only = [c.strip() for c in args.only.split(",")] if args.only else None
    if only:
        unknown_checks = sorted(set(only) - set(specs))
        if unknown_checks or not all(only):
            return usage_error(
                "python3 -m racksmith.health check",
                f"--only names unknown checks: {', '.join(unknown_checks) or 'an empty name'} "
                f"(known: {', '.join(specs)})",
            )
    host = Host(sysfs=args.sysfs, procfs=args.procfs)
    notes = []
    try:
        profile = profiles.load(args.profile, requirements())
        results = run_checks(specs, profile, host, deadline_s=args.deadline, only=only)
        profile_name, profile_source = profile.name, profile.source
    except profiles.ProfileError as exc:
        # Still a report (and a NOT FIT verdict), so a bad profile never reads as healthy.
        results = [CheckResult("profile", "Host-type profile", (unknown(str(exc)),))]
        profile_name, profile_source = args.profile, ""
    if only:
        notes.append(f"only these checks were run: {', '.join(only)}")
    report = Report(
        kind="quick",
        profile=profile_name,
        profile_source=profile_source,
        results=results,
        started=started_wall,
        duration_s=time.monotonic() - started,
        standin=host.standin(),
        notes=notes,
    )
    print(report.to_json() if args.json else report.to_text(verbose=args.verbose))
    try:
        if args.prom:
            from . import prom

            where = f"--prom {args.prom}"
            prom.write(report, args.prom)
        if args.report:
            where = f"--report {args.report}"
            _write_atomic(args.report, report.to_json() + "\n")
    except OSError as exc:
        # The verdict was printed; the file a caller relies on is missing: say which, exit 2.
        return usage_error("python3 -m racksmith.health check", f"{where}: {exc.strerror}")
    return report.exit_code


def cmd_profiles(args: argparse.Namespace) -> int:
    for name in profiles.available():
        prof = profiles.load(name)
        print(f"{name:<20} {prof.description}")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from .capture import capture

    try:
        written = capture(args.outdir)
    except OSError as exc:
        return usage_error(
            "python3 -m racksmith.health capture", f"{args.outdir}: {exc.strerror or exc}"
        )
    print(f"wrote {len(written)} files to {args.outdir}")
    return 0


def cmd_golden(args: argparse.Namespace) -> int:
    from .golden import build, write

    prog = "python3 -m racksmith.health golden"
    try:
        with open(args.hosts, encoding="utf-8") as handle:
            hosts = json.load(handle)
    except OSError as exc:
        return usage_error(prog, f"--hosts {args.hosts}: {exc.strerror}")
    except ValueError as exc:  # JSONDecodeError (its text gives line and column), bad UTF-8
        return usage_error(prog, f"--hosts {args.hosts}: not JSON: {exc}")
    if not isinstance(hosts, dict) or not all(isinstance(v, dict) for v in hosts.values()):
        return usage_error(
            prog, f"--hosts {args.hosts}: must be a JSON object of host name -> object"
        )
    golden = build(hosts, run_id=args.run_id)
    paths = write(golden, args.out)
    print(
        f"golden set: {len(golden['golden'])} of {len(golden['hosts'])} hosts fit; "
        f"wrote {', '.join(str(p) for p in paths)}"
    )
    return 0


def _write_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted: no verdict", file=sys.stderr)
        return EXIT_UNDECIDED
