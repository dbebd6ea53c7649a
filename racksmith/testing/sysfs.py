"""A sysfs PCI tree built from a listing, for tests of what reads ``<root>/bus/pci/devices``.

Why: the roles' PCI probe (``racksmith.pci``) reads files, so its tests give it real files (a
tree under a temporary directory) instead of a fake reader; the listing is a fixture such as
``tests/fixtures/ubuntu-22.04/pci-sysfs.txt``.
"""

from __future__ import annotations

from pathlib import Path

#: The attributes each listing line gives, and the files written for them.
PCI_ATTRS = frozenset({"vendor", "device", "class"})


def write_pci_tree(listing: Path, root: Path) -> int:
    """Write ``<root>/bus/pci/devices/<address>/{vendor,device,class}`` from ``listing``, one
    function a line (``<address> vendor=0x10de device=0x2335 class=0x030200``); returns how
    many. A line without exactly those attributes, or an address listed twice, raises
    ValueError naming the file and line."""
    count = 0
    for number, line in enumerate(listing.read_text().splitlines(), 1):
        where = f"{listing.name}:{number}"
        address, *fields = line.split() or [""]
        attrs = dict(field.partition("=")[::2] for field in fields)
        if not address or set(attrs) != PCI_ATTRS or len(fields) != len(PCI_ATTRS):
            raise ValueError(f"{where}: expected '<address> vendor= device= class=': {line!r}")
        device = root / "bus" / "pci" / "devices" / address
        if device.exists():
            raise ValueError(f"{where}: {address} is listed twice")
        device.mkdir(parents=True)
        for name, value in attrs.items():
            (device / name).write_text(value + "\n")
        count += 1
    return count
