"""Shared by every LAB STAND-IN program (each package installs its own copy of this module
beside its programs, in ``/usr/lib/racksmith-lab-standin/<package>/``): every line printed,
argparse's usage errors included, starts with ``LAB STAND-IN``."""

from __future__ import annotations

import argparse
import os
import sys

TAG = "LAB STAND-IN"


def package_version(default: str) -> str:
    """The upstream version of the package this program came with (its ``VERSION`` file beside
    the real script, epoch and Debian revision dropped); ``default`` in the checkout."""
    here = os.path.dirname(os.path.realpath(sys.argv[0]))
    try:
        with open(os.path.join(here, "VERSION")) as f:
            version = f.read().strip()
    except OSError:
        return default
    return version.split(":", 1)[-1].rsplit("-", 1)[0] or default


def say(message: str, stream=None) -> None:
    stream = stream or sys.stdout
    for line in message.splitlines() or [""]:
        print(f"{TAG}: {line}", file=stream, flush=True)


class Parser(argparse.ArgumentParser):
    """argparse, with its help and error output marked like everything else."""

    def _print_message(self, message: str, file=None) -> None:
        if message:
            say(message.rstrip("\n"), file or sys.stderr)
