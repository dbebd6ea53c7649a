"""``racksmith redfish ...``: discover BMCs and act on them from a shell.

    racksmith redfish discover --bmc 10.0.0.0/28 --bmc 127.0.0.1:8443-8449 \\
        --username root --password-env RACKSMITH_BMC_PASSWORD --ca-bundle ca.pem --json

prints one JSON object per BMC (``bmc``, ``service_tag``, ``serial``, ``model``,
``manufacturer``, ``bmc_firmware``, ``bios_version``, ``power_state``, ``nics``, ``pxe_mac``,
``gpus``, ``error`` and more) and exits 0 only when every BMC answered with complete facts.

``power``, ``boot-once`` and ``clock`` act on BMCs named explicitly (no CIDRs or ranges), say
what they will do first, and support ``--dry-run``; they print one JSON object per BMC (``--json``
says so explicitly). Switching servers off, cycling or restarting them needs ``--yes``, and so
does setting a BMC's clock (``--set`` is the old spelling). Passwords come from an environment
variable (or a credentials file), never from the command line.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from racksmith import credentials
from racksmith.errors import UsageError
from racksmith.optionspec import add_arguments, add_deprecated, seconds, set_examples
from racksmith.redfish import actions, compliance, options, targets
from racksmith.redfish.baseline import BaselineError
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.discover import BmcResult, DiscoveryOptions, DiscoveryProgress, discover
from racksmith.redfish.errors import RedfishError
from racksmith.redfish.progress import DEFAULT_INTERVAL as PROGRESS_INTERVAL
from racksmith.redfish.progress import DiscoveryPrinter

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DESTRUCTIVE = ("off", "graceful-off", "cycle", "restart")


def _common(parser: argparse.ArgumentParser) -> None:
    """The connection options, generated from :mod:`racksmith.redfish.options` (the same
    names and defaults as the modules and the inventory plugin)."""
    parser.add_argument(
        "--bmc",
        action="append",
        required=True,
        metavar="TARGET",
        help="BMC ADDRESS[:PORT[-PORT]], CIDR, range A-B or [IPv6]; repeat as needed",
    )
    add_arguments(parser, (options.PORT, *options.CLI_CONNECTION))
    parser.add_argument("-v", "--verbose", action="count", default=0)


_ACTION_JSON = "one JSON object per BMC on stdout (this command's only output format)"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "discover", help="query BMCs for identity, NICs, GPUs, firmware and power"
    )
    set_examples(
        p,
        "racksmith redfish discover --bmc 10.1.0.0/24 --credentials-file /etc/racksmith/bmc.env",
        "racksmith redfish discover --bmc 10.1.0.11 --bmc 10.1.0.12:8443 --ca-bundle bmc-ca.pem"
        " --deadline 60 --json",
        "racksmith redfish discover --bmc 10.1.0.10-10.1.0.41 --extra firmware"
        " --progress-interval 30 --json",
    )
    _common(p)
    p.add_argument(
        "--json", action="store_true", help="one JSON object per BMC on stdout (default: a table)"
    )
    add_arguments(p, (options.CONCURRENCY, options.PXE_RULES, options.EXTRAS_OPTION))
    p.add_argument(
        "--progress-interval",
        type=seconds,
        default=PROGRESS_INTERVAL,
        metavar="SECONDS",
        help="seconds between two 'discover: N answered, M failed, K pending' lines on stderr"
        f" (default {PROGRESS_INTERVAL:g}); failures are named at once",
    )
    p.set_defaults(func=_discover)

    p = subparsers.add_parser(
        "compliance",
        help="judge firmware and BIOS against a baseline file (read-only; docs/firmware.md)",
    )
    set_examples(
        p,
        "racksmith redfish compliance --bmc 10.1.0.0/24 --baseline firmware-baseline.yml",
        "racksmith redfish compliance --bmc 10.1.0.11 --baseline firmware-baseline.yml --json",
    )
    _common(p)
    p.add_argument("--baseline", required=True, metavar="FILE", help="the site's baseline YAML")
    p.add_argument("--json", action="store_true", help="one JSON report on stdout")
    add_arguments(p, (options.CONCURRENCY, options.PXE_RULES))
    p.set_defaults(func=_compliance)

    p = subparsers.add_parser(
        "power", help="power servers on/off/cycle/restart, reading the result back"
    )
    set_examples(
        p,
        "racksmith redfish power on --bmc 10.1.0.11 --credentials-file /etc/racksmith/bmc.env",
        "racksmith redfish power cycle --bmc 10.1.0.11 --dry-run   # says what it would do",
        "racksmith redfish power off --bmc 10.1.0.11 --bmc 10.1.0.12 --wait 300 --yes --json",
    )
    _common(p)
    p.add_argument("state", choices=actions.POWER_STATES)
    p.add_argument(
        "--wait", type=seconds, default=120.0, help="seconds to wait for the new power state"
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    p.add_argument("--yes", action="store_true", help="confirm off/cycle/restart")
    p.add_argument("--json", action="store_true", help=_ACTION_JSON)
    options.SYSTEM.add_to(p)
    p.set_defaults(func=_power)

    p = subparsers.add_parser(
        "boot-once", help="set a one-time boot override (default PXE) and read it back"
    )
    set_examples(
        p,
        "racksmith redfish boot-once --bmc 10.1.0.11",
        "racksmith redfish boot-once --bmc 10.1.0.11 --target Hdd --mode UEFI --dry-run --json",
    )
    _common(p)
    p.add_argument("--target", default="Pxe", help="boot source (default Pxe)")
    p.add_argument("--mode", choices=("UEFI", "Legacy"), help="boot mode to request with it")
    p.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    p.add_argument("--json", action="store_true", help=_ACTION_JSON)
    options.SYSTEM.add_to(p)
    p.set_defaults(func=_boot)

    p = subparsers.add_parser("clock", help="report BMC clock skew; --yes corrects it")
    set_examples(
        p,
        "racksmith redfish clock --bmc 10.1.0.11 --max-skew 2",
        "racksmith redfish clock --bmc 10.1.0.11 --bmc 10.1.0.12 --yes --json",
    )
    _common(p)
    p.add_argument("--max-skew", type=seconds, default=5.0, help="seconds tolerated (default 5)")
    fix = p.add_argument(
        "--yes", dest="set", action="store_true", help="set the BMC clock when skewed"
    )
    add_deprecated(p, fix, "--set")
    p.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    p.add_argument("--json", action="store_true", help=_ACTION_JSON)
    p.set_defaults(func=_clock)


# -- shared plumbing


def _setup(
    args: argparse.Namespace,
) -> tuple[list[targets.Target], credentials.BmcCredentials, ClientOptions]:
    level = logging.DEBUG if args.verbose > 1 else logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        found = targets.expand(args.bmc, default_port=args.port, allow_names=args.allow_names)
        creds = credentials.bmc_from_params(vars(args))
        client_options = ClientOptions.from_params(vars(args))
    except (targets.TargetError, credentials.CredentialsError, ValueError) as exc:
        raise UsageError(f"redfish: {exc}") from None
    if args.ca_bundle and not Path(args.ca_bundle).is_file():
        raise UsageError(f"redfish: --ca-bundle {args.ca_bundle}: no such file")
    return found, creds, client_options


def _discovery_options(
    args: argparse.Namespace, client_options: ClientOptions, extras: frozenset[str]
) -> DiscoveryOptions:
    """The discovery settings both discover and compliance take from the command line (an
    unset --pxe-rule means the vendor profile's rules)."""
    return DiscoveryOptions(
        client=client_options,
        concurrency=args.concurrency,
        deadline=args.deadline,
        pxe_rules=tuple(args.pxe_rules) if args.pxe_rules else None,
        extras=extras,
        vendor=args.vendor,
    )


def _emit(record: dict[str, Any]) -> None:
    print(json.dumps(record, sort_keys=False), flush=True)


# -- discover


def _table(results: list[BmcResult]) -> None:
    rows = [("BMC", "TAG", "MODEL", "POWER", "GPUS", "PXE MAC", "STATUS")]
    for r in results:
        d = r.as_dict()
        status = "ok" if r.ok else f"{d['error_kind']}: {d['error']}"
        rows.append(
            (
                d["bmc"],
                d["service_tag"] or "-",
                d["model"] or "-",
                d["power_state"] or "-",
                str(len(d["gpus"])),
                d["pxe_mac"] or "-",
                status,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(col.ljust(w) for col, w in zip(row, widths, strict=False)) + "  " + row[-1])


def _discover(args: argparse.Namespace) -> int:
    found, creds, client_options = _setup(args)
    try:
        discovery = _discovery_options(args, client_options, frozenset(args.extras or ()))
    except ValueError as exc:
        raise UsageError(f"redfish discover: {exc}") from None
    printer = DiscoveryPrinter(args.progress_interval)

    def progress(snapshot: DiscoveryProgress) -> None:
        # stderr only: with --json, stdout carries the results and nothing else
        for line in printer.feed(snapshot, time.monotonic()):
            print(line, file=sys.stderr, flush=True)

    results = discover(found, creds, discovery, progress=progress)
    if args.json:
        for result in results:
            _emit(result.as_dict())
    else:
        _table(results)
    failed = [r for r in results if not r.ok]
    if failed:
        print(f"{len(failed)} of {len(results)} BMCs failed", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _compliance(args: argparse.Namespace) -> int:
    """Discover with the firmware and BIOS extras and judge every host (exit 1 on DRIFT or
    UNKNOWN); racksmith.redfish.compliance does the work."""
    found, creds, client_options = _setup(args)
    try:
        discovery = _discovery_options(args, client_options, frozenset())
        return compliance.run(found, creds, discovery, args.baseline, as_json=args.json)
    except (ValueError, BaselineError) as exc:
        raise UsageError(f"redfish compliance: {exc}") from None


# -- actions


def _explicit(args: argparse.Namespace) -> None:
    """Acting on hardware: every BMC must be named, not swept up by a CIDR or range."""
    for spec in args.bmc:
        if targets.count(spec, args.port, allow_names=args.allow_names) != 1:
            raise UsageError(
                f"redfish {args.command}: {spec!r} names several BMCs; list each one explicitly"
            )


def _act(
    args: argparse.Namespace, verb: str, run: Callable[[RedfishClient], actions.ActionResult]
) -> int:
    found, creds, client_options = _setup(args)
    _explicit(args)
    print(f"{verb} on {len(found)} BMC(s): {', '.join(map(str, found))}", file=sys.stderr)
    failed = 0
    for target in found:
        try:
            deadline = Deadline(args.deadline + float(getattr(args, "wait", 0) or 0))
            with RedfishClient(target, creds, client_options, deadline=deadline) as client:
                _emit({"bmc": str(target), **run(client).as_dict(), "error": None})
        except RedfishError as exc:
            failed += 1
            _emit(
                {
                    "bmc": str(target),
                    "changed": False,
                    "error": exc.reason,
                    "error_kind": exc.kind.value,
                }
            )
    return EXIT_FAILED if failed else EXIT_OK


def _host_action(args: argparse.Namespace) -> dict[str, Any]:
    """What power and boot-once share: check mode, the vendor profile, the system named."""
    return {"check_mode": args.dry_run, "vendor": args.vendor, "system_id": args.system}


def _power(args: argparse.Namespace) -> int:
    if args.state in DESTRUCTIVE and not (args.yes or args.dry_run):
        print(
            f"racksmith redfish power {args.state}: this interrupts running servers; add --yes "
            "(or --dry-run)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    verb = f"{'would ' if args.dry_run else ''}power {args.state}"
    return _act(
        args,
        verb,
        lambda c: actions.power(c, args.state, wait=args.wait, **_host_action(args)),
    )


def _boot(args: argparse.Namespace) -> int:
    verb = f"{'would ' if args.dry_run else ''}set next boot once to {args.target}"
    return _act(
        args,
        verb,
        lambda c: actions.boot_once(c, args.target, mode=args.mode, **_host_action(args)),
    )


def _clock(args: argparse.Namespace) -> int:
    verb = "check clock" + (" and correct skew" if args.set else "")
    return _act(
        args,
        verb,
        lambda c: actions.clock(
            c, max_skew=args.max_skew, correct=args.set, check_mode=args.dry_run
        ),
    )
