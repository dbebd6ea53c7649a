"""``python3 -m racksmith.health``: the host agent's command line.

check     run the quick checks; print FIT / NOT FIT with every reason
          exit 0 fit, 1 not fit, 2 could not decide (still not fit)
profiles  list the built-in host-type profiles
capture   save this host's raw outputs as a fixture directory
standin   LAB ONLY: install fake GPU tools that replay a capture
golden    controller side: per-host reports in, the golden set out
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from . import profile as profiles
from .outcome import EXIT_UNDECIDED

ENV_PROFILE = "RACKSMITH_HEALTH_PROFILE"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m racksmith.health", description="racksmith host health agent"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = sub.add_parser("check", help="run the quick checks and print the verdict")
    check.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    check.add_argument("--prom", metavar="FILE", help="also write Prometheus textfile metrics")
    check.add_argument("--report", metavar="FILE", help="also write the JSON report to FILE")
    check.add_argument(
        "--profile",
        default=os.environ.get(ENV_PROFILE, profiles.DEFAULT_PROFILE),
        help=f"profile name or JSON file (default: ${ENV_PROFILE} or {profiles.DEFAULT_PROFILE})",
    )
    check.add_argument(
        "--deadline",
        type=float,
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

    standin = sub.add_parser("standin", help="LAB ONLY: replay a capture through fake tools")
    standin.add_argument("--capture", required=True, help="capture directory to replay")
    standin.add_argument("--prefix", required=True, help="where to build bin/ and sys/")
    standin.add_argument(
        "--overlay",
        action="append",
        default=[],
        help="directory whose files replace the capture's (failure fixtures)",
    )
    standin.set_defaults(func=cmd_standin)

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
        if unknown_checks:
            print(
                f"error: --only names unknown checks: {', '.join(unknown_checks)}", file=sys.stderr
            )
            return EXIT_UNDECIDED
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
    if args.prom:
        from . import prom

        prom.write(report, args.prom)
    if args.report:
        _write_atomic(args.report, report.to_json() + "\n")
    print(report.to_json() if args.json else report.to_text(verbose=args.verbose))
    return report.exit_code


def cmd_profiles(args: argparse.Namespace) -> int:
    for name in profiles.available():
        prof = profiles.load(name)
        print(f"{name:<20} {prof.description}")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from .capture import capture

    written = capture(args.outdir)
    print(f"wrote {len(written)} files to {args.outdir}")
    return 0


def cmd_standin(args: argparse.Namespace) -> int:
    from .replay import install

    marker = install(args.capture, args.prefix, overlays=args.overlay)
    print(f"LAB STAND-IN installed under {args.prefix}: {marker}")
    return 0


def cmd_golden(args: argparse.Namespace) -> int:
    from .golden import build, write

    with open(args.hosts) as handle:
        hosts = json.load(handle)
    golden = build(hosts, run_id=args.run_id)
    paths = write(golden, args.out)
    print(
        f"golden set: {len(golden['golden'])} of {len(golden['hosts'])} hosts fit; "
        f"wrote {', '.join(str(p) for p in paths)}"
    )
    return 0


def _write_atomic(path: str, text: str) -> None:
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
