"""``racksmith lab ...``: each sub-command lives in the module that owns its concern.

A module listed here exposes ``configure(parser)``, which adds its arguments and sets
``func``. Keeping the table here (and nothing else) means the host lab, the BMC emulation
and the MAAS simulator can grow independently.
"""

from __future__ import annotations

import argparse
import importlib

# The lab's own dependencies (the `lab` extra), imported first so that a controller without
# them gets one clear message from racksmith.cli (exit 2), never a traceback mid-command.
import cryptography  # noqa: F401
import sushy_tools  # noqa: F401

_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("up", "racksmith.lab.rack", "build (or reuse) and start the whole simulated rack"),
    ("down", "racksmith.lab.rack", "stop everything the lab started, by recorded PID"),
    ("status", "racksmith.lab.rack", "show what the lab is running"),
    ("host", "racksmith.lab.hosts", "start or stop single test hosts (used by molecule)"),
    ("vm", "racksmith.lab.vm", "start or stop qemu VMs with a kernel of their own (VM lane)"),
    ("bmc", "racksmith.lab.bmc", "serve emulated iDRACs until stopped"),
    ("maas", "racksmith.lab.maassim", "serve the MAAS API simulator until stopped"),
    ("rack", "racksmith.lab.generate", "write a rack file of N servers with a seeded fault mix"),
    ("check-run", "racksmith.lab.expect", "did each server end the run as its faults say?"),
    ("cache-stats", "racksmith.lab.cachestats", "apt cache: bytes from upstream vs served"),
    ("standin", "racksmith.lab.standin", "LAB STAND-IN: fake GPU tools that replay a capture"),
    ("fabric", "racksmith.lab.fabricgen", "write a generated InfiniBand fat tree and its LFTs"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, module_name, help_text in _COMMANDS:
        module = importlib.import_module(module_name)
        parser = subparsers.add_parser(name, help=help_text, description=help_text)
        module.configure(parser, name)
