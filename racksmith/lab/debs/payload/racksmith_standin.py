"""Shared by every LAB STAND-IN program (installed on the host as the module
``racksmith_standin`` by the package ``racksmith-lab-standin-common``): every line printed,
argparse's usage errors included, starts with ``LAB STAND-IN``."""

from __future__ import annotations

import argparse
import sys

TAG = "LAB STAND-IN"


def say(message: str, stream=None) -> None:
    stream = stream or sys.stdout
    for line in message.splitlines() or [""]:
        print(f"{TAG}: {line}", file=stream, flush=True)


class Parser(argparse.ArgumentParser):
    """argparse, with its help and error output marked like everything else."""

    def _print_message(self, message: str, file=None) -> None:
        if message:
            say(message.rstrip("\n"), file or sys.stderr)
