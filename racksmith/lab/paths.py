"""Where the lab keeps its state, derived from one directory so two labs never share a file.

The defaults are part of the contract with inventory files under ``inventory/lab/`` (they
refer to ``/var/lib/racksmith/lab/...``); ``RACKSMITH_LAB_DIR`` moves everything at once for a
second lab on the same machine.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LAB_DIR = Path("/var/lib/racksmith/lab")
#: Shared by every lab on the machine: the rootfs is identical, keyed by its recipe hash.
DEFAULT_CACHE_DIR = Path("/var/cache/racksmith")


def lab_dir(explicit: Path | str | None = None) -> Path:
    """The lab state directory: explicit argument, else ``$RACKSMITH_LAB_DIR``, else default."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("RACKSMITH_LAB_DIR") or DEFAULT_LAB_DIR)


def cache_dir() -> Path:
    return Path(os.environ.get("RACKSMITH_CACHE_DIR") or DEFAULT_CACHE_DIR)


def rack_file(explicit: Path | str | None = None) -> Path:
    """The rack spec: explicit argument, else ``$RACKSMITH_RACK``, else the built-in rack."""
    from racksmith.lab.spec import DEFAULT_SPEC

    if explicit:
        return Path(explicit)
    return Path(os.environ.get("RACKSMITH_RACK") or DEFAULT_SPEC)


def add_lab_arguments(parser: argparse.ArgumentParser) -> None:
    """``--rack`` and ``--lab-dir``, the same way for every ``racksmith lab`` command."""
    parser.add_argument(
        "--rack", type=Path, help="rack file (default: $RACKSMITH_RACK or inventory/lab/rack.yml)"
    )
    parser.add_argument(
        "--lab-dir",
        type=Path,
        help=f"lab state directory (default: $RACKSMITH_LAB_DIR or {DEFAULT_LAB_DIR})",
    )


@dataclass(frozen=True)
class LabPaths:
    """Every file the host lab writes, under one root (the shared ones: docs/lab.md)."""

    root: Path

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def ssh_key(self) -> Path:
        """Private key for user ``ubuntu`` (and root) on every test host."""
        return self.keys / "id_ed25519"

    @property
    def ca(self) -> Path:
        return self.root / "ca"

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

    @property
    def run(self) -> Path:
        """PID records of the daemons this lab started (one ``NAME.pid`` each)."""
        return self.root / "run"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def machines(self) -> Path:
        return self.root / "machines"

    def machine(self, name: str) -> Path:
        return self.machines / name

    @property
    def acng(self) -> Path:
        """apt-cacher-ng's private config, cache and logs (the cache persists across runs)."""
        return self.root / "apt-cacher-ng"

    @property
    def bmc(self) -> Path:
        return self.root / "bmc"

    @property
    def maas(self) -> Path:
        return self.root / "maas"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    def pidfile(self, daemon: str) -> Path:
        return self.run / f"{daemon}.pid"

    def logfile(self, daemon: str) -> Path:
        return self.logs / f"{daemon}.log"
