"""``racksmith diagnose``: one command per situation (``hang``, ``mfu``).

Each command lives in its own module exposing ``HELP`` and ``configure(parser)``; this file
only lists them, so adding one never means editing another's code.
"""

from __future__ import annotations

import argparse
import importlib

#: (command, module) in the order ``--help`` lists them.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("hang", "racksmith.triage.diagnose.hang_cli"),
    ("mfu", "racksmith.triage.diagnose.mfu_cli"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, module_name in COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # not written yet: no command, not a broken area
                continue
            raise
        parser = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(parser)
