"""The ``racksmith`` command: one entry point, one sub-command group per library area.

Each area owns a ``cli`` module exposing ``register(subparsers)``; this file only wires them,
so adding a command never means editing another area's code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# (command, module providing register(subparsers), one-line help)
_AREAS: tuple[tuple[str, str, str], ...] = (
    ("lab", "racksmith.lab.cli", "the simulated rack: test hosts, BMC emulation, MAAS simulator"),
    ("redfish", "racksmith.redfish.cli", "discover and control BMCs over Redfish"),
    ("maas", "racksmith.maas.cli", "drive MAAS: enlist, commission, deploy, release"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="racksmith", description=__doc__.splitlines()[0])
    groups = parser.add_subparsers(dest="area", metavar="AREA", required=True)
    for name, module_name, help_text in _AREAS:
        module = importlib.import_module(module_name)
        area = groups.add_parser(name, help=help_text, description=help_text)
        module.register(area.add_subparsers(dest="command", metavar="COMMAND", required=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
