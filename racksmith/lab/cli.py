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

from racksmith.optionspec import set_examples

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


# Each command's examples, by its words after ``racksmith lab`` (the walk in
# tests/unit/cli/test_cli_examples.py parses every one, and runs rack and fabric).
_EXAMPLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("up",): (
        "racksmith lab up",
        "racksmith lab up --rack inventory/rack32/rack.yml --lab-dir /var/lib/racksmith/lab-r32",
    ),
    ("down",): ("racksmith lab down", "racksmith lab down --rack inventory/rack32/rack.yml"),
    ("status",): ("racksmith lab status", "racksmith lab status --json"),
    ("host", "up"): (
        "racksmith lab host up gpu01 192.168.244.11",
        "racksmith lab host up gpu02 192.168.244.12 --no-apt-proxy --user-data user-data.yml",
    ),
    ("host", "down"): (
        "racksmith lab host down gpu01 gpu02",
        "racksmith lab host down gpu01 --keep-root",
    ),
    ("host", "list"): ("racksmith lab host list",),
    ("vm", "up"): (
        "racksmith lab vm up vm01 192.168.244.51",
        "racksmith lab vm up vm02 192.168.244.52 --memory 2048 --smp 2 --boot-timeout 900 --json",
    ),
    ("vm", "down"): ("racksmith lab vm down vm01 vm02",),
    ("vm", "list"): ("racksmith lab vm list --json",),
    ("bmc",): (
        "racksmith lab bmc --count 4 --base-port 8443",
        "racksmith lab bmc --count 2 --model dgx-h100 --scheme http --latency 0.5"
        " --initial-power off",
    ),
    ("maas",): (
        "racksmith lab maas --listen 127.0.0.1:5240 --machines 4",
        "racksmith lab maas --rack inventory/rack32/rack.yml --speed 10 --seed 7",
    ),
    ("rack",): (
        "racksmith lab rack --servers 8",
        "racksmith lab rack --servers 32 --faults 10% --seed 7 --inventory rack32",
    ),
    ("check-run",): (
        "racksmith lab check-run                      # the newest run under runs/",
        "racksmith lab check-run runs/20261202T010000-site --rack inventory/rack32/rack.yml",
    ),
    ("cache-stats",): ("racksmith lab cache-stats", "racksmith lab cache-stats --json"),
    ("standin",): (
        "racksmith lab standin --capture tests/fixtures/h200-x2 --prefix /opt/racksmith-standin",
    ),
    ("fabric",): (
        "racksmith lab fabric --hcas 16 --tiers 2 --seed 1 --events 200 --out .",
        "racksmith lab fabric --hcas 256 --tiers 2 --fault miscabling --fault degraded"
        " --out fabric256 --json",
    ),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, module_name, help_text in _COMMANDS:
        module = importlib.import_module(module_name)
        parser = subparsers.add_parser(name, help=help_text, description=help_text)
        module.configure(parser, name)
        _add_examples(parser, (name,))


def _add_examples(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    """Set the examples of ``parser`` and of its own sub-commands (``host up``, ``vm list``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                _add_examples(sub, (*words, sub_name))
    if words in _EXAMPLES:
        set_examples(parser, *_EXAMPLES[words])
