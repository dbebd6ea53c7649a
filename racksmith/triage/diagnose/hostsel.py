"""The hosts of a job, from the command line: ``--inventory``/``--limit`` (an Ansible inventory,
resolved by ``ansible-inventory``, with each host's connection variables) or ``--hosts FILE``
(one name per line, reached over SSH by that name). ``diagnose mfu`` and ``restart-plan`` take
them the same way."""

from __future__ import annotations

import argparse

from racksmith.errors import UsageError
from racksmith.triage.diagnose.collect import InventoryError, Target, resolve


def add_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``-i/--inventory``, ``-l/--limit`` and ``--hosts``; ``what`` names the hosts in help."""
    parser.add_argument(
        "-i",
        "--inventory",
        metavar="INVENTORY",
        help=f"{what}: an Ansible inventory (with --limit)",
    )
    parser.add_argument("-l", "--limit", metavar="PATTERN", help="hosts of the inventory")
    parser.add_argument("--hosts", metavar="FILE", help=f"{what}, one per line")


def targets(args: argparse.Namespace, *, required: bool) -> list[Target]:
    """The hosts the options select (none when not given and not ``required``)."""
    if args.hosts and args.inventory:
        raise UsageError("give the hosts as --hosts FILE or as --inventory/--limit, not both")
    if args.limit and not args.inventory:
        raise UsageError("--limit needs --inventory")
    if args.hosts:
        from racksmith.triage.bisect_cli import read_hosts

        return [Target(name=h, address=h) for h in read_hosts(args.hosts)]
    if args.inventory:
        try:
            return resolve(args.inventory, args.limit)
        except InventoryError as exc:
            raise UsageError(str(exc)) from exc
    if required:
        raise UsageError("give the hosts as --hosts FILE or as --inventory/--limit")
    return []
