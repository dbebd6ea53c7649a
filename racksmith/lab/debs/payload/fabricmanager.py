#!/usr/bin/python3
"""LAB STAND-IN ``nv-fabricmanager`` (NVIDIA Fabric Manager, branch 535).

Fabric manager only has work where NVSwitches are present; on other systems the real one
stops with ``NV_WARN_NOTHING_TO_DO``. The stand-in reads its config file, looks for NVSwitches
in PCI sysfs (NVIDIA vendor 0x10de, bridge class 0x0680) the way the driver role detects them,
and on a lab host (none present) exits the same way, so the role's gating is tested for real.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:
    from racksmith_standin import Parser, package_version, say  # on the lab host
except ImportError:  # in the checkout (unit tests)
    from racksmith.lab.debs.payload.racksmith_standin import Parser, package_version, say

VERSION = package_version("535.216.03")


def nvswitches(pci: Path) -> list[str]:
    found = []
    for dev in sorted(pci.glob("*")):
        try:
            vendor = (dev / "vendor").read_text().strip()
            klass = (dev / "class").read_text().strip()
        except OSError:
            continue
        if vendor == "0x10de" and klass.startswith("0x0680"):
            found.append(dev.name)
    return found


def parse_config(text: str) -> dict[str, str]:
    config = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            config[key.strip()] = value.strip()
    return config


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="nv-fabricmanager")
    parser.add_argument("-c", "--config", default="/usr/share/nvidia/nvswitch/fabricmanager.cfg")
    parser.add_argument("-v", "--version", action="store_true")
    parser.add_argument("--sysfs-pci", default="/sys/bus/pci/devices", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.version:
        say(f"Fabric Manager version is : {VERSION}")
        return 0
    try:
        config = parse_config(Path(args.config).read_text())
    except OSError as exc:
        say(f"failed to read config file {args.config}: {exc}", sys.stderr)
        return 1
    say(
        f"Fabric Manager version {VERSION} is running with config {args.config}"
        f" ({len(config)} settings)"
    )
    switches = nvswitches(Path(args.sysfs_pci))
    if not switches:
        say("Connected to 0 NVSwitch devices")
        say("NV_WARN_NOTHING_TO_DO: no NVSwitch found; fabric manager has nothing to manage")
        return 1
    say(
        f"found {len(switches)} NVSwitch devices ({', '.join(switches)}); the stand-in cannot"
        " manage them and only stays running"
    )
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
