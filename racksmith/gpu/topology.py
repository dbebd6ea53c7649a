"""How a host's GPUs are joined: NVLink directly, through NVSwitches, through switches the
machine cannot see, or not at all. Read from ``nvidia-smi topo -m`` (NVLinks per GPU pair),
``nvidia-smi nvlink -R`` (the PCI address at the far end of every link) and the PCI functions
in sysfs (GPUs and NVSwitches by vendor and class).

Why it matters: an HGX 8-GPU board joins every pair through four NVSwitches (``topo -m``
shows NV18 everywhere, each link ends at an NVSwitch port, and Fabric Manager must run on the
host: the ``fabric_manager`` check applies); a board with direct links names the peer GPU at
the far end; a virtual machine given part of an HGX board sees NV18 too, but the far end of
every link is a device outside it (``FFFFFFFF:FF:FF.0``): the NVSwitches and Fabric Manager
belong to the hypervisor host, and only the GPUs' fabric state can be read inside. The 2 x
H200 test host is the last kind (tests/fixtures/h200-x2-topology/README.md).

Pure parsing and one rule (``classify``); the I/O is in ``cli``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from racksmith.health.parsers import ParseError
from racksmith.health.parsers.nvlink import per_gpu_sections
from racksmith.health.parsers.sysfs import PciLink, pci_link

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx5_\d+)$")
_NV = re.compile(r"^NV(\d+)$")
_REMOTE = re.compile(
    r"^\s*Link (\d+): (?:Remote Device )?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])"
    r"(?:: Link (\d+))?\s*$"
)
#: The far end of a link that is not a PCI function of this machine.
HIDDEN = "hidden"


def parse_topo_matrix(text: str) -> dict[str, dict[str, str]]:
    """``nvidia-smi topo -m`` -> {row device: {column device: connection}} for the device
    columns (GPUs, NICs), e.g. {"GPU0": {"GPU0": "X", "GPU1": "NV18"}, ...}. The CPU/NUMA
    affinity columns and the legend are left out."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if line.strip()), None)
    if header_at is None:
        raise ParseError("empty topology matrix")
    columns = [c.strip() for c in lines[header_at].split("\t") if c.strip()]
    devices = []
    for name in columns:
        if not _DEVICE.match(name):
            break
        devices.append(name)
    if not devices:
        raise ParseError(f"line {header_at + 1}: no GPU columns in {lines[header_at].strip()!r}")
    matrix: dict[str, dict[str, str]] = {}
    for lineno, line in enumerate(lines[header_at + 1 :], header_at + 2):
        if line.startswith("Legend"):
            break
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("\t")]
        if not _DEVICE.match(cells[0]):
            raise ParseError(f"line {lineno}: expected a device row, got {line.strip()!r}")
        if len(cells) < len(devices) + 1:
            raise ParseError(
                f"line {lineno}: {cells[0]} has {len(cells) - 1} cells, expected {len(devices)}"
            )
        matrix[cells[0]] = dict(zip(devices, cells[1 : len(devices) + 1], strict=True))
    if not any(name.startswith("GPU") for name in matrix):
        raise ParseError("no GPU rows in the topology matrix")
    return matrix


def nvlinks_per_pair(matrix: Mapping[str, Mapping[str, str]]) -> dict[tuple[int, int], int]:
    """{(i, j): bonded NVLinks} for every GPU pair i < j; 0 where they meet over PCIe only."""
    gpus = sorted(int(name[3:]) for name in matrix if name.startswith("GPU"))
    out = {}
    for i in gpus:
        for j in gpus:
            if i < j:
                nv = _NV.match(matrix[f"GPU{i}"].get(f"GPU{j}", ""))
                out[(i, j)] = int(nv.group(1)) if nv else 0
    return out


@dataclass(frozen=True)
class RemoteLink:
    gpu: int
    link: int
    remote_bus: str  # as nvidia-smi prints it: 00000000:00:07.0, or FFFFFFFF:FF:FF.0
    remote_link: int | None

    @property
    def visible(self) -> bool:
        """False when the far end is no PCI function of this machine (all-F address)."""
        return bus_key(self.remote_bus)[:3] != (0xFFFFFFFF, 0xFF, 0xFF)


def parse_remote_links(text: str) -> dict[int, list[RemoteLink]]:
    """``nvidia-smi nvlink -R`` (``Link 3: Remote Device 00000000:00:07.0: Link 5``) or
    ``nvidia-smi nvlink -p`` (``Link 3: 00000000:00:07.0``) -> GPU index -> its links."""

    def remote(gpu: int, links: list[RemoteLink] | None, line: str) -> list[RemoteLink] | None:
        match = _REMOTE.match(line)
        if not match:
            return None
        far_link = int(match.group(3)) if match.group(3) is not None else None
        return [*(links or []), RemoteLink(gpu, int(match.group(1)), match.group(2), far_link)]

    return {gpu: links or [] for gpu, links in per_gpu_sections(text, remote).items()}


def bus_key(address: str) -> tuple[int, int, int, int]:
    """A PCI address as (domain, bus, device, function), whatever the domain's width
    (sysfs writes 0000:00:07.0, nvidia-smi 00000000:00:07.0)."""
    try:
        domain, bus, rest = address.strip().split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)
    except ValueError:
        raise ParseError(f"not a PCI address: {address!r}") from None


def parse_pci_functions(text: str) -> list[PciLink]:
    """Lines ``ADDRESS key=value ...`` (every PCI function's sysfs ``vendor``, ``class``,
    link speed and width, with spaces written as ``_``), as tests/bench/h200_device_run.sh
    captures them -> their PCI links (``kind`` says gpu / nvswitch / hca / nvme)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        address, *pairs = line.split()
        attrs = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ParseError(f"line {lineno}: expected key=value, got {pair!r}")
            attrs[key] = value.replace("_", " ")
        bus_key(address)  # raises with the address when it is not one
        out.append(pci_link(address, attrs))
    return out


@dataclass(frozen=True)
class Fabric:
    """How the GPUs are joined. ``kind``: ``nvswitch`` (links end at NVSwitches this machine
    sees), ``direct`` (links end at the peer GPUs), ``outside`` (links end at devices this
    machine cannot see: a VM on part of a switched board), ``mixed``, or ``none``."""

    kind: str
    gpus: int
    nvlinks_per_pair: dict[tuple[int, int], int]
    links_per_gpu: dict[int, int]
    far_ends: dict[str, int]  # "gpu" / "nvswitch" / "hidden" / "other" -> links
    nvswitches_visible: int

    def describe(self) -> str:
        pairs = sorted(set(self.nvlinks_per_pair.values()))
        per_pair = "/".join(f"NV{n}" if n else "PCIe" for n in pairs) or "no pairs"
        ends = ", ".join(f"{n} at {end}" for end, n in sorted(self.far_ends.items())) or "none"
        return (
            f"{self.kind}: {self.gpus} GPUs, {per_pair} between pairs, link far ends: {ends}; "
            f"{self.nvswitches_visible} NVSwitch PCI functions visible"
        )

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "summary": self.describe(),
            "gpus": self.gpus,
            "nvlinks_per_pair": {f"{i}-{j}": n for (i, j), n in self.nvlinks_per_pair.items()},
            "links_per_gpu": {str(g): n for g, n in self.links_per_gpu.items()},
            "far_ends": dict(self.far_ends),
            "nvswitches_visible": self.nvswitches_visible,
        }


def classify(
    matrix: Mapping[str, Mapping[str, str]],
    remote: Mapping[int, Sequence[RemoteLink]],
    pci: Iterable[PciLink],
) -> Fabric:
    """Where each NVLink of each GPU ends, and so how the GPUs are joined."""
    functions = list(pci)
    gpu_buses = {bus_key(f.address) for f in functions if f.kind == "gpu"}
    switch_buses = {bus_key(f.address) for f in functions if f.kind == "nvswitch"}
    far_ends: dict[str, int] = {}
    for links in remote.values():
        for link in links:
            if not link.visible:
                end = HIDDEN
            elif bus_key(link.remote_bus) in gpu_buses:
                end = "gpu"
            elif bus_key(link.remote_bus) in switch_buses:
                end = "nvswitch"
            else:
                end = "other"
            far_ends[end] = far_ends.get(end, 0) + 1
    if not far_ends:
        kind = "none"
    elif len(far_ends) > 1:
        kind = "mixed"
    else:
        kind = {"gpu": "direct", "nvswitch": "nvswitch", HIDDEN: "outside"}.get(
            next(iter(far_ends)), "mixed"
        )
    pairs = nvlinks_per_pair(matrix)
    return Fabric(
        kind=kind,
        gpus=sum(1 for name in matrix if name.startswith("GPU")),
        nvlinks_per_pair=pairs,
        links_per_gpu={gpu: len(links) for gpu, links in sorted(remote.items())},
        far_ends=far_ends,
        nvswitches_visible=len(switch_buses),
    )
