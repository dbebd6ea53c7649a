"""What a host's PCI bus holds, for the roles that apply only where the hardware is there
(``nvidia_driver``, ``gdr``, ``container_runtime``, ``dcgm``).

Why one place: each of those roles used to carry its own copy of a shell probe and its own
regular expressions over its output. Here the probe (:func:`probe_argv`), the parser of what it
prints (:func:`parse_probe`) and the count by kind (:func:`count_kinds`) sit together, so the
format the probe writes and the one the parser reads cannot drift apart. Playbooks reach them
through the filters ``racksmith.core.pci_probe_argv`` and ``racksmith.core.pci_counts``.

What counts as a GPU, an NVSwitch or an RDMA NIC (:func:`kind`) is the rule the health agent
uses (``racksmith.health.parsers.sysfs.PciLink.kind``). The agent runs on the GPU hosts under
their system Python and imports nothing from the rest of racksmith, and a core module imports
no service, so the rule is written in both places; a unit test
(tests/unit/core/test_imports.py) classifies every vendor/class pair of the recorded HGX H200
bus through both and insists they agree.

Why a command and not a module: the probe runs on the GPU host, where the racksmith package is
not installed (modules run there, with the host's Python); filters run on the controller. So the
host only runs a fixed ``/bin/sh`` loop that reads files (nothing to decide there), and the
decision is made on the controller from its output.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ParseError",
    "PciCounts",
    "PciFunction",
    "count_kinds",
    "kind",
    "parse_probe",
    "probe_argv",
]

#: PCI class codes (upper 16 bits of sysfs ``class``) and vendors the kinds are made of.
CLASS_DISPLAY_3D = 0x0302
CLASS_DISPLAY_VGA = 0x0300
CLASS_NVME = 0x0108
CLASS_INFINIBAND = 0x0207
CLASS_ETHERNET = 0x0200
CLASS_BRIDGE_OTHER = 0x0680  # how NVSwitches present themselves
VENDOR_NVIDIA = 0x10DE
VENDOR_MELLANOX = 0x15B3


class ParseError(ValueError):
    """The probe's output is not what :func:`probe_argv` prints; the message names the line."""


def kind(vendor: int, pci_class: int) -> str | None:
    """``gpu``, ``nvswitch``, ``hca`` (InfiniBand or Ethernet ConnectX), ``nvme``, or None,
    from the vendor id and the full 24-bit class code."""
    top = pci_class >> 8
    if vendor == VENDOR_NVIDIA and top in (CLASS_DISPLAY_3D, CLASS_DISPLAY_VGA):
        return "gpu"
    if vendor == VENDOR_NVIDIA and top == CLASS_BRIDGE_OTHER:
        return "nvswitch"
    if vendor == VENDOR_MELLANOX and top in (CLASS_INFINIBAND, CLASS_ETHERNET):
        return "hca"
    if top == CLASS_NVME:
        return "nvme"
    return None


@dataclass(frozen=True)
class PciFunction:
    """One PCI function as the probe prints it."""

    address: str
    vendor: int
    pci_class: int  # full 24-bit class code

    @property
    def kind(self) -> str | None:
        return kind(self.vendor, self.pci_class)


def probe_argv(sysfs_root: str) -> list[str]:
    """The command (an argv for ``ansible.builtin.command``) that prints one line
    ``<address> <vendor> <class>`` per PCI function under ``<sysfs_root>/bus/pci/devices``.

    Functions without a readable ``vendor`` are left out; an unreadable ``class`` prints ``-``
    (which :func:`parse_probe` refuses). A root without ``bus/pci/devices`` fails the command,
    naming the directory: no PCI bus to read is an error, not a host without GPUs.
    It only reads, so it may run in check mode.
    """
    if not isinstance(sysfs_root, str) or not sysfs_root.startswith("/") or "\n" in sysfs_root:
        raise ValueError(f"the sysfs root must be an absolute path, got {sysfs_root!r}")
    devices = f"{shlex.quote(sysfs_root)}/bus/pci/devices"
    script = (
        f"[ -d {devices} ] || {{ echo 'no PCI bus to read: '{devices}' is not a directory' >&2;"
        " exit 1; }\n"
        f"for d in {devices}/*; do\n"
        '  [ -r "$d/vendor" ] || continue\n'
        '  echo "${d##*/} $(cat "$d/vendor") $(cat "$d/class" 2>/dev/null || echo -)"\n'
        "done"
    )
    return ["/bin/sh", "-c", script]


def parse_probe(text: str) -> list[PciFunction]:
    """The probe's output -> one :class:`PciFunction` per function. A line that is not
    ``<address> <vendor> <class>`` in hex raises :class:`ParseError` naming its number."""
    links = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ParseError(
                f"PCI probe line {number}: expected '<address> <vendor> <class>', got {line!r}"
            )
        address, vendor, pci_class = fields
        try:
            links.append(PciFunction(address, int(vendor, 16), int(pci_class, 16)))
        except ValueError:
            raise ParseError(
                f"PCI probe line {number}: {address}: vendor/class are not hex numbers:"
                f" {vendor!r} {pci_class!r}"
            ) from None
    return links


@dataclass(frozen=True)
class PciCounts:
    """How many functions of each kind the bus holds (``functions``: all of them)."""

    gpu: int  # NVIDIA display controllers (3D or VGA)
    nvswitch: int  # NVIDIA bridges of class 0x0680
    hca: int  # Mellanox/NVIDIA networking, InfiniBand or Ethernet: the RDMA NICs
    nvme: int
    functions: int


def count_kinds(links: Iterable[PciFunction]) -> PciCounts:
    """Count the functions by :func:`kind`."""
    kinds = [link.kind for link in links]
    return PciCounts(
        gpu=kinds.count("gpu"),
        nvswitch=kinds.count("nvswitch"),
        hca=kinds.count("hca"),
        nvme=kinds.count("nvme"),
        functions=len(kinds),
    )
