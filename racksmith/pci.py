"""What a host's PCI bus holds, for the roles that apply only where the hardware is there
(``nvidia_driver``, ``gdr``, ``container_runtime``, ``dcgm``).

Why one place: each of those roles used to carry its own copy of a shell probe and its own
regular expressions over its output. Here the probe (:func:`probe_argv`), the parser of what it
prints (:func:`parse_probe`) and the count by kind (:func:`count_kinds`) sit together, so the
format the probe writes and the one the parser reads cannot drift apart, and what counts as a
GPU, an NVSwitch or an RDMA NIC is the rule the health checks use
(:attr:`racksmith.health.parsers.sysfs.PciLink.kind`). Playbooks reach them through the filters
``racksmith.core.pci_probe_argv`` and ``racksmith.core.pci_counts``.

Why a command and not a module: the probe runs on the GPU host, where the racksmith package is
not installed (modules run there, with the host's Python); filters run on the controller. So the
host only runs a fixed ``/bin/sh`` loop that reads files (nothing to decide there), and the
decision is made on the controller from its output.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from racksmith.health.parsers import ParseError
from racksmith.health.parsers.sysfs import PciLink, pci_link

__all__ = ["ParseError", "PciCounts", "count_kinds", "parse_probe", "probe_argv"]


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


def parse_probe(text: str) -> list[PciLink]:
    """The probe's output -> one :class:`PciLink` per function (no link speeds: the probe does
    not read them). A line that is not ``<address> <vendor> <class>`` in hex raises
    :class:`ParseError` naming its number."""
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
            links.append(pci_link(address, {"vendor": vendor, "class": pci_class}))
        except ParseError as exc:
            raise ParseError(f"PCI probe line {number}: {exc}") from None
    return links


@dataclass(frozen=True)
class PciCounts:
    """How many functions of each kind the bus holds (``functions``: all of them)."""

    gpu: int  # NVIDIA display controllers (3D or VGA)
    nvswitch: int  # NVIDIA bridges of class 0x0680
    hca: int  # Mellanox/NVIDIA networking, InfiniBand or Ethernet: the RDMA NICs
    nvme: int
    functions: int


def count_kinds(links: Iterable[PciLink]) -> PciCounts:
    """Count the functions by :attr:`PciLink.kind`."""
    kinds = [link.kind for link in links]
    return PciCounts(
        gpu=kinds.count("gpu"),
        nvswitch=kinds.count("nvswitch"),
        hca=kinds.count("hca"),
        nvme=kinds.count("nvme"),
        functions=len(kinds),
    )
