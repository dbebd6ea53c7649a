"""Values read from sysfs and procfs: PCIe links, InfiniBand ports, CPU governors, mounts,
kernel modules. The I/O (reading the files) is in ``racksmith.health.host``; these functions
only interpret the strings, so they are tested on captured values."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

#: PCIe generation for each link speed (GT/s) the kernel reports.
_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

#: PCI class codes (upper 16 bits of sysfs ``class``) we check links for.
CLASS_DISPLAY_3D = 0x0302
CLASS_DISPLAY_VGA = 0x0300
CLASS_NVME = 0x0108
CLASS_INFINIBAND = 0x0207
CLASS_ETHERNET = 0x0200
CLASS_BRIDGE_OTHER = 0x0680  # how NVSwitches present themselves
VENDOR_NVIDIA = 0x10DE
VENDOR_MELLANOX = 0x15B3


@dataclass(frozen=True)
class PciLink:
    address: str
    vendor: int
    pci_class: int  # full 24-bit class code
    speed_gts: float | None
    width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def gen(self) -> int | None:
        return _GEN_BY_GTS.get(self.speed_gts) if self.speed_gts is not None else None

    @property
    def max_gen(self) -> int | None:
        return _GEN_BY_GTS.get(self.max_speed_gts) if self.max_speed_gts is not None else None

    @property
    def kind(self) -> str | None:
        """``gpu``, ``nvswitch``, ``hca`` (InfiniBand or Ethernet ConnectX), ``nvme``, or None."""
        top = self.pci_class >> 8
        if self.vendor == VENDOR_NVIDIA and top in (CLASS_DISPLAY_3D, CLASS_DISPLAY_VGA):
            return "gpu"
        if self.vendor == VENDOR_NVIDIA and top == CLASS_BRIDGE_OTHER:
            return "nvswitch"
        if self.vendor == VENDOR_MELLANOX and top in (CLASS_INFINIBAND, CLASS_ETHERNET):
            return "hca"
        if top == CLASS_NVME:
            return "nvme"
        return None


def link_speed(value: str) -> float | None:
    """``"32.0 GT/s PCIe"`` -> 32.0; ``"Unknown"`` -> None."""
    match = re.match(r"\s*(\d+(?:\.\d+)?) GT/s", value)
    return float(match.group(1)) if match else None


def link_width(value: str) -> int | None:
    value = value.strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


#: The sysfs files of one PCI function that ``pci_link`` reads (callers fetch exactly these).
PCI_LINK_ATTRS = (
    "vendor",
    "class",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
)


def pci_link(address: str, attrs: dict[str, str]) -> PciLink:
    """``attrs``: the sysfs files of one device (``PCI_LINK_ATTRS``); missing ones -> None."""
    try:
        vendor = int(attrs.get("vendor", "0x0"), 16)
        pci_class = int(attrs.get("class", "0x0"), 16)
    except ValueError:
        raise ParseError(f"{address}: vendor/class are not hex numbers: {attrs}") from None
    return PciLink(
        address,
        vendor,
        pci_class,
        link_speed(attrs.get("current_link_speed", "")),
        link_width(attrs.get("current_link_width", "")),
        link_speed(attrs.get("max_link_speed", "")),
        link_width(attrs.get("max_link_width", "")),
    )


@dataclass(frozen=True)
class IbPort:
    device: str  # mlx5_0
    port: int
    state: str  # ACTIVE, DOWN, INIT, ARMED
    phys_state: str  # LinkUp, Polling, Disabled
    rate_gbps: float | None
    link_layer: str  # InfiniBand or Ethernet
    counters: dict[str, int]

    @property
    def label(self) -> str:
        return f"{self.device} port {self.port}"


def ib_port(device: str, port: int, attrs: dict[str, str], counters: dict[str, str]) -> IbPort:
    """``attrs``: sysfs ``state`` (``4: ACTIVE``), ``phys_state`` (``5: LinkUp``), ``rate``
    (``400 Gb/sec (4X NDR)``), ``link_layer``; ``counters``: name -> decimal text."""
    rate = re.match(r"\s*(\d+(?:\.\d+)?) Gb/sec", attrs.get("rate", ""))
    parsed = {}
    for name, value in counters.items():
        value = value.strip()
        if not value.isdigit():
            raise ParseError(f"{device} port {port}: counter {name} is {value!r}, not a number")
        parsed[name] = int(value)
    return IbPort(
        device,
        port,
        _after_colon(attrs.get("state", "")),
        _after_colon(attrs.get("phys_state", "")),
        float(rate.group(1)) if rate else None,
        attrs.get("link_layer", "").strip(),
        parsed,
    )


def _after_colon(value: str) -> str:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``."""
    return value.split(":", 1)[-1].strip()


def module_names(proc_modules: str) -> frozenset[str]:
    """``/proc/modules`` -> loaded module names."""
    return frozenset(line.split()[0] for line in proc_modules.splitlines() if line.strip())


@dataclass(frozen=True)
class Mount:
    device: str
    mountpoint: str
    fstype: str


def mounts(proc_mounts: str) -> list[Mount]:
    out = []
    for line in proc_mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            # /proc/mounts escapes spaces and tabs as octal (\040)
            mountpoint = re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1), 8)), parts[1])
            out.append(Mount(parts[0], mountpoint, parts[2]))
    return out
