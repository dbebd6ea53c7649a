"""The ``racksmith`` command: one entry point, one sub-command per library area.

Each area owns a ``cli`` module; this file only wires them, so adding a command never means
editing another area's code. An area module exposes either ``register(subparsers)`` (a group
of commands: ``racksmith redfish discover``) or ``configure(parser)`` (one command:
``racksmith report RUN_DIR``).

Areas are imported only when chosen. That keeps ``racksmith --help`` fast, and keeps a
controller without the ``lab`` extra from failing on the lab's dependencies when it runs a
production command (issue: the lab once made ``cryptography`` a runtime dependency).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from racksmith import __version__
from racksmith.errors import UsageError

# (command, module providing register()/configure(), one-line help)
_AREAS: tuple[tuple[str, str, str], ...] = (
    ("lab", "racksmith.lab.cli", "the simulated rack: test hosts, BMC emulation, MAAS simulator"),
    ("redfish", "racksmith.redfish.cli", "discover and control BMCs over Redfish"),
    ("maas", "racksmith.maas.cli", "drive MAAS: enlist, commission, deploy, release"),
    ("fabric", "racksmith.fabric.cli", "InfiniBand: cabling check, UFM event triage, burn-in"),
    ("report", "racksmith.report.cli", "the rack report of a run directory (text, JSON, HTML)"),
    ("triage", "racksmith.triage.cli", "name the cause of each failed host and write tickets"),
    ("golden", "racksmith.triage.golden_cli", "rank the golden set and pick hosts for a job"),
    ("bisect", "racksmith.triage.bisect_cli", "find the bad hosts of a failing multi-node job"),
    ("diagnose", "racksmith.triage.diagnose.cli",
     "hung or slow training: name the ranks and hosts"),
    ("restart-plan", "racksmith.triage.diagnose.restart_cli",
     "after a crash: the N best hosts to restart on, and why the others are out"),
    ("run", "racksmith.run.cli", "run site or reprovision through ansible-runner, live table"),
)

_EPILOG = """examples:
  racksmith redfish discover --bmc 10.1.0.0/24 --username root --password-env BMC_PW --json
  racksmith maas machines
  racksmith lab up
  racksmith AREA --help        (each area lists its commands and examples)
"""


def _area_names() -> list[str]:
    return [name for name, _, _ in _AREAS]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with area ``only``'s commands imported; the other areas are names only
    (enough for ``racksmith --help`` and for argparse to reject an unknown area)."""
    parser = argparse.ArgumentParser(
        prog="racksmith",
        description=__doc__.splitlines()[0],
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"racksmith {__version__}")
    groups = parser.add_subparsers(dest="area", metavar="AREA", required=True)
    for name, module_name, help_text in _AREAS:
        area = groups.add_parser(name, help=help_text, description=help_text)
        if name != only:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise UsageError(_missing_module_message(name, exc)) from exc
        if hasattr(module, "register"):
            module.register(area.add_subparsers(dest="command", metavar="COMMAND", required=True))
        else:
            module.configure(area)
    return parser


def _missing_module_message(area: str, exc: ModuleNotFoundError) -> str:
    if area == "lab" or (exc.name or "").split(".")[0] in {"sushy_tools", "cryptography"}:
        return (
            f"racksmith {area} needs the lab extra (missing module {exc.name!r}); "
            "install it with: pip install 'racksmith[lab]'"
        )
    return f"racksmith {area} is not available: missing module {exc.name!r}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser = build_parser(chosen if chosen in _area_names() else None)
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"racksmith: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
