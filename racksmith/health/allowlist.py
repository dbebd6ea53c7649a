"""Kernel-log allow-list: hardware-related lines we know to be harmless. Any other
hardware-related line is surfaced as a warning, so a new kind of fault is seen the first time
it appears instead of being lost in boot noise.

Two lists, both plain data:

- WATCH: what makes a line hardware-related (GPU driver, NVSwitch, PCIe/AER, HCAs, NVMe,
  machine checks, I/O errors). Lines that match none of these are not judged at all.
- ALLOW: benign watched lines. Every pattern must match the WHOLE line (``re.fullmatch``,
  after the timestamp is removed): imbue's allow-list used ``re.match`` with a ``\\d+`` entry
  and so allowed any line that starts with a digit.

Xid and SXid lines are judged by the Xid table, not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WATCH = re.compile(
    r"nvrm|nvidia|nvswitch|nvlink|\bxid\b|pcie|\baer\b|mlx5|\bib\d|nvme|"
    r"machine check|\bmce\b|edac|hardware error|i/o error|call trace",
    re.IGNORECASE,
)

_PCI = r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]"
_V = r"[\d.]+"
#: What follows the version in the driver's banner: "Release Build (builder@host)" and/or a
#: build date ("Thu Oct 19 18:56:32 UTC 2023"), then only blanks.
_BUILD = r"(?: +Release Build +\([^()]*\))?(?: +\w{3} \w{3} +\d+ [\d:]+ \w+ \d{4})? *"

ALLOW: tuple[str, ...] = (
    # the boot command line names drivers (driver_async_probe=mlx5_core) but is no event
    r"(?:Kernel )?[Cc]ommand line: .*",
    # PCI enumeration and firmware hand-off at boot
    rf"pci {_PCI}: \[[0-9a-f]{{4}}:[0-9a-f]{{4}}\] type [0-9a-f]{{2}} class 0x[0-9a-f]{{6}}"
    r"(?: PCIe \w+(?: \w+)*| conventional PCI endpoint)?",
    r"acpi PNP0A0[38]:\d\d: PCIe port services disabled; not requesting _OSC control",
    r"acpi PNP0A0[38]:\d\d: _OSC: platform retains control of PCIe features \(AE_NOT_FOUND\)",
    r"acpi PNP0A0[38]:\d\d: _OSC: OS now controls \[[\w ]+\]",
    r"acpi PNP0A0[38]:\d\d: _OSC: OS supports \[[\w ]+\]",
    rf"pci {_PCI}: {_V} Gb/s available PCIe bandwidth \(\d+\.\d GT/s PCIe x\d+ link\)",
    r"pcieport [0-9a-f:.]+: (?:AER|PME|DPC|pciehp): enabled with IRQ \d+",
    r"pcieport [0-9a-f:.]+: pciehp: Slot #\d+ .*",
    r"PCI: Using configuration type \d for base access",
    # NVIDIA driver loading
    r"nvidia: loading out-of-tree module taints kernel\.",
    r"nvidia: module license '[^']+' taints kernel\.",
    r"nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    r"nvidia-nvlink: Nvlink Core is being initialized, major device number \d+",
    rf"NVRM: loading NVIDIA UNIX (?:Open Kernel Module for )?x86_64(?: Kernel Module)?"
    rf" +{_V}{_BUILD}",
    rf"nvidia-modeset: Loading NVIDIA (?:UNIX Open )?Kernel Mode Setting Driver for UNIX platforms"
    rf" +{_V}{_BUILD}",
    r"nvidia-uvm: Loaded the UVM driver, major device number \d+\.",
    r"\[drm\] \[nvidia-drm\] \[GPU ID 0x[0-9a-f]+\] Loading driver",
    r"\[drm\] Initialized nvidia-drm [\d.]+ \d+ for [0-9a-f:.]+ on minor \d+",
    r"nvidia [0-9a-f:.]+: (?:enabling device \(\d+ -> \d+\)|vgaarb: .*)",
    # benign NVRM notices (seen on healthy H200 hosts; tests/fixtures/h200x2)
    r"NVRM: gpuClearFbhubPoisonIntrForBug\d+_GA100: FBHUB Interrupt detected\. Clearing it\.",
    r"NVRM: Persistence mode is deprecated and will be removed in a future release\. "
    r"Please use nvidia-persistenced instead\.",
    # Fabric Manager / NVSwitch bring-up
    r"nvidia-nvswitch: Probing device [0-9a-f:.]+, Vendor Id = 0x10de, Device Id = 0x[0-9a-f]+,"
    r" Class = 0x[0-9a-f]+",
    r"nvidia-nvswitch\d+: using MSI(?:-X)?",
    # Mellanox / NVIDIA ConnectX bring-up
    rf"mlx5_core {_PCI}: firmware version: {_V}",
    rf"mlx5_core {_PCI}: Port module event: module \d+, Cable plugged",
    rf"mlx5_core {_PCI}: {_V} Gb/s available PCIe bandwidth \(\d+\.\d GT/s PCIe x\d+ link\)",
    rf"mlx5_core {_PCI}: E-Switch: Total vports \d+, per vport: max uc\(\d+\) max mc\(\d+\)",
    rf"mlx5_core {_PCI}: Rate limit: \d+ rates are supported, range: \d+Mbps to \d+Mbps",
    rf"mlx5_core {_PCI}: MLX5E: StrdRq\(\d\) RqSz\(\d+\) StrdSz\(\d+\) RxCqeCmprss\(\d\)",
    r"mlx5_ib: Mellanox ConnectX InfiniBand driver v[\w.-]+",
    r"mlx5_core [0-9a-f:.]+ ib\w+: renamed from ib\d+",
    # NVMe bring-up
    rf"nvme nvme\d+: pci function {_PCI}",
    r"nvme nvme\d+: \d+/\d+/\d+ default/read/poll queues",
    r"nvme nvme\d+: Shutdown timeout set to \d+ seconds",
    r" ?nvme\d+n\d+:(?: p\d+)+",
)

_ALLOW = tuple(re.compile(p) for p in ALLOW)


def is_watched(text: str) -> bool:
    return bool(WATCH.search(text))


def is_allowed(text: str, extra: Iterable[re.Pattern[str]] = ()) -> bool:
    return any(p.fullmatch(text) for p in (*_ALLOW, *extra))


def compile_extra(patterns: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """Site-specific allow patterns from the profile; a bad regex raises ValueError naming it."""
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"kernel_log.allow pattern {pattern!r}: {exc}") from None
    return tuple(out)
