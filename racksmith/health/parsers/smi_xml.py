"""``nvidia-smi -q -x``: one call gives every per-GPU fact most quick checks need (ECC, row
remapping, recovery action, clock-event reasons, PCIe link, versions, fabric state), so the
GPUs are asked once, not once per check. XML rather than the text form because its element
names are stable across drivers; the older ``clocks_throttle_reason*`` names (before driver
535) are accepted too.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from . import ParseError, int_or_none

ECC_COUNTERS = (
    "sram_correctable",
    "sram_uncorrectable_parity",
    "sram_uncorrectable_secded",
    "dram_correctable",
    "dram_uncorrectable",
)


@dataclass(frozen=True)
class Gpu:
    index: int
    bus_id: str
    name: str
    uuid: str = ""
    serial: str = ""
    vbios: str = ""
    inforom_image: str = ""
    gsp_firmware: str = ""
    ecc_current: str = ""
    ecc_pending: str = ""
    ecc_volatile: dict[str, int | None] = field(default_factory=dict)
    ecc_aggregate: dict[str, int | None] = field(default_factory=dict)
    sram_threshold_exceeded: bool = False
    retired_pending: bool = False  # pages waiting for retirement (pre-Ampere ECC path)
    remap_correctable: int | None = None
    remap_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    recovery_action: str = ""
    clock_events: frozenset[str] = frozenset()  # active reasons: "gpu_idle", "hw_slowdown", ...
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    temperature_c: int | None = None
    sm_clock_mhz: int | None = None
    fabric_state: str = ""
    fabric_status: str = ""

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.bus_id})"

    def uncorrectable(self, scope: str = "volatile") -> int | None:
        counts = self.ecc_volatile if scope == "volatile" else self.ecc_aggregate
        values = [counts.get(k) for k in ECC_COUNTERS if "uncorrectable" in k]
        if any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None)

    def correctable(self, scope: str = "volatile") -> int | None:
        counts = self.ecc_volatile if scope == "volatile" else self.ecc_aggregate
        values = [counts.get(k) for k in ECC_COUNTERS if k.endswith("_correctable")]
        if any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None)


@dataclass(frozen=True)
class SmiLog:
    driver_version: str
    cuda_version: str
    attached_gpus: int
    gpus: tuple[Gpu, ...]


def parse(text: str) -> SmiLog:
    """Parse ``nvidia-smi -q -x`` output. Raises ParseError if it is not that document."""
    if not text.strip():
        raise ParseError("empty output (expected an nvidia_smi_log XML document)")
    try:
        root = ET.fromstring(text)  # noqa: S314 - nvidia-smi's own output
    except ET.ParseError as exc:
        raise ParseError(f"not well-formed XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"root element is <{root.tag}>, expected <nvidia_smi_log>")
    attached = int_or_none(_text(root, "attached_gpus"))
    if attached is None:
        raise ParseError("no <attached_gpus> count")
    gpus = tuple(_gpu(i, el) for i, el in enumerate(root.findall("gpu")))
    if len(gpus) != attached:
        raise ParseError(f"<attached_gpus> says {attached} but {len(gpus)} <gpu> elements follow")
    return SmiLog(_text(root, "driver_version"), _text(root, "cuda_version"), attached, gpus)


def _text(el: ET.Element, path: str) -> str:
    found = el.find(path)
    return (found.text or "").strip() if found is not None else ""


def _yes(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value.strip().lower())


def _number(value: str) -> int | None:
    """``"36 C"``, ``"1980 MHz"``, ``"16x"`` -> the integer; N/A -> None."""
    match = re.match(r"\s*(-?\d+)", value)
    return int(match.group(1)) if match else None


def _gpu(index: int, el: ET.Element) -> Gpu:
    bus_id = el.get("id") or _text(el, "pci/pci_bus_id")
    if not bus_id:
        raise ParseError(f"<gpu> number {index} has no PCI bus id")
    try:
        volatile = {k: int_or_none(_text(el, f"ecc_errors/volatile/{k}")) for k in ECC_COUNTERS}
        aggregate = {k: int_or_none(_text(el, f"ecc_errors/aggregate/{k}")) for k in ECC_COUNTERS}
        remap_corr = int_or_none(_text(el, "remapped_rows/remapped_row_corr"))
        remap_unc = int_or_none(_text(el, "remapped_rows/remapped_row_unc"))
    except ParseError as exc:
        raise ParseError(f"GPU {index} ({bus_id}): {exc}") from None
    pending = _text(el, "retired_pages/pending_retirement") or _text(
        el, "retired_pages/pending_blacklist"
    )
    link = "pci/pci_gpu_link_info"
    return Gpu(
        index=index,
        bus_id=bus_id,
        name=_text(el, "product_name"),
        uuid=_text(el, "uuid"),
        serial=_text(el, "serial"),
        vbios=_text(el, "vbios_version"),
        inforom_image=_text(el, "inforom_version/img_version"),
        gsp_firmware=_text(el, "gsp_firmware_version"),
        ecc_current=_text(el, "ecc_mode/current_ecc"),
        ecc_pending=_text(el, "ecc_mode/pending_ecc"),
        ecc_volatile=volatile,
        ecc_aggregate=aggregate,
        sram_threshold_exceeded=_yes(_text(el, "ecc_errors/aggregate/sram_threshold_exceeded"))
        is True,
        retired_pending=_yes(pending) is True,
        remap_correctable=remap_corr,
        remap_uncorrectable=remap_unc,
        remap_pending=_yes(_text(el, "remapped_rows/remapped_row_pending")),
        remap_failure=_yes(_text(el, "remapped_rows/remapped_row_failure")),
        recovery_action=_text(el, "gpu_recovery_action"),
        clock_events=_clock_events(el),
        pcie_gen=_number(_text(el, f"{link}/pcie_gen/current_link_gen")),
        pcie_gen_max=_number(_text(el, f"{link}/pcie_gen/max_link_gen")),
        pcie_width=_number(_text(el, f"{link}/link_widths/current_link_width")),
        pcie_width_max=_number(_text(el, f"{link}/link_widths/max_link_width")),
        temperature_c=_number(_text(el, "temperature/gpu_temp")),
        sm_clock_mhz=_number(_text(el, "clocks/sm_clock")),
        fabric_state=_text(el, "fabric/state"),
        fabric_status=_text(el, "fabric/status"),
    )


def _clock_events(el: ET.Element) -> frozenset[str]:
    for container, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        block = el.find(container)
        if block is not None:
            return frozenset(
                child.tag.removeprefix(prefix)
                for child in block
                if (child.text or "").strip() == "Active"
            )
    return frozenset()
