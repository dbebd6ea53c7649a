"""The GPUDirect RDMA stack: which RDMA software the host runs (``ofed_info -s``), which NVIDIA
kernel module flavour is loaded (``/proc/driver/nvidia/version``), so the ``gdr`` check can
say which GPUDirect path is active and the ``firmware`` check can compare versions.

``ofed_info -s`` prints one line: ``MLNX_OFED_LINUX-23.10-1.1.9.0:`` for MLNX_OFED and
``OFED-internal-24.10-1.1.4:`` for DOCA-OFED (DOCA-Host's ofed_info keeps NVIDIA's internal
name). These forms are written from NVIDIA's documentation and public site scripts (weka/tools
``195_ofed.sh`` parses the same line); no host with either stack was available to capture one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

_OFED = re.compile(r"^(MLNX_OFED_LINUX|OFED-internal|DOCA[\w-]*?)-(\d[\w.\-]*?):?$")
_FLAVOURS = {"MLNX_OFED_LINUX": "MLNX_OFED", "OFED-internal": "DOCA-OFED"}


@dataclass(frozen=True)
class Ofed:
    flavour: str  # "MLNX_OFED" or "DOCA-OFED"
    version: str  # "23.10-1.1.9.0"

    def __str__(self) -> str:
        return f"{self.flavour} {self.version}"


def ofed_info(text: str) -> Ofed:
    """The first non-empty line of ``ofed_info -s``. Raises ParseError on anything else."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    match = _OFED.match(line)
    if not match:
        raise ParseError(
            f"expected `ofed_info -s` to print MLNX_OFED_LINUX-<version>: or "
            f"OFED-internal-<version>:, got {line[:80]!r}"
        )
    prefix, version = match.groups()
    return Ofed(_FLAVOURS.get(prefix, "DOCA-OFED"), version)


def kernel_module_flavour(proc_version: str) -> str:
    """``open`` or ``proprietary`` from ``/proc/driver/nvidia/version``'s NVRM line (the open
    modules say "Open Kernel Module"). DMA-BUF GPUDirect needs the open ones."""
    for line in proc_version.splitlines():
        if line.startswith("NVRM version:"):
            return "open" if "Open Kernel Module" in line else "proprietary"
    raise ParseError("no 'NVRM version:' line in /proc/driver/nvidia/version")


def kernel_at_least(release: str, major: int, minor: int) -> bool:
    """``6.8.0-45-generic`` >= (5, 12)? DMA-BUF for RDMA needs Linux 5.12 or later."""
    match = re.match(r"(\d+)\.(\d+)", release.strip())
    if not match:
        raise ParseError(f"cannot read a kernel version from {release!r}")
    return (int(match.group(1)), int(match.group(2))) >= (major, minor)
