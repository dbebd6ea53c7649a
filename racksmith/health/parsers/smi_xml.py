"""``nvidia-smi -q -x``: one call gives every per-GPU fact most quick checks need (ECC, row
remapping, recovery action, clock-event reasons, PCIe link, versions, fabric state), so the
GPUs are asked once, not once per check. XML rather than the text form because its element
names are stable across drivers; the older ``clocks_throttle_reason*`` names (before driver
535) are accepted too.

Every field read is one of three things: a value; ``N/A`` (the field does not apply to this
GPU, e.g. retired pages on a GPU that remaps rows); or **could not be read** (``ERR!``,
``[Unknown Error]``, ``[Not Supported]`` where the field is expected, an empty element). A
field that could not be read is kept aside (``Gpu.unreadable``) and reading it raises
``Unreadable`` naming the GPU, the field and the raw text, so a check that needs it becomes
UNKNOWN instead of taking ``ERR!`` for "not active" or skipping a limit. ``FIELDS`` lists every
element the parser reads, by the attribute it fills: the tests replace each one in the real
capture with each unreadable form and assert that no check reading it says OK.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from . import ParseError

#: Texts nvidia-smi prints when it could not read a field (NVML errors). "N/A" is not here: it
#: means the field does not apply. An empty element is unreadable too.
UNREADABLE_FORMS = (
    "ERR!",
    "[Unknown Error]",
    "Unknown Error",
    "[Not Supported]",
    "Not Supported",
    "[GPU requires reset]",
    "[GPU is lost]",
    "[Insufficient Permissions]",
    "",
)
NOT_APPLICABLE = ("N/A", "[N/A]")

ECC_COUNTERS = (
    "sram_correctable",
    "sram_uncorrectable_parity",
    "sram_uncorrectable_secded",
    "dram_correctable",
    "dram_uncorrectable",
)


class Unreadable(ParseError):
    """A check read a field nvidia-smi could not read; the message names GPU, field and text."""

    def __init__(self, owner: str, field: str, detail: str) -> None:
        super().__init__(f"{owner}: {field} could not be read ({detail})")
        self.owner, self.field, self.detail = owner, field, detail


#: Attribute -> the elements (relative to ``<gpu>``) it is read from. ``*`` children count as
#: one field (any unreadable child makes the whole field unreadable).
FIELDS: dict[str, tuple[str, ...]] = {
    "name": ("product_name",),
    "vbios": ("vbios_version",),
    "inforom_image": ("inforom_version/img_version",),
    "inforom_oem": ("inforom_version/oem_object",),
    "board_part_number": ("board_part_number",),
    "gsp_firmware": ("gsp_firmware_version",),
    "persistence_mode": ("persistence_mode",),
    "ecc_current": ("ecc_mode/current_ecc",),
    "ecc_pending": ("ecc_mode/pending_ecc",),
    "ecc_volatile": tuple(f"ecc_errors/volatile/{k}" for k in ECC_COUNTERS),
    "ecc_aggregate": tuple(f"ecc_errors/aggregate/{k}" for k in ECC_COUNTERS),
    "sram_threshold_exceeded": ("ecc_errors/aggregate/sram_threshold_exceeded",),
    "retired_pending": ("retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
    "remap_correctable": ("remapped_rows/remapped_row_corr",),
    "remap_uncorrectable": ("remapped_rows/remapped_row_unc",),
    "remap_pending": ("remapped_rows/remapped_row_pending",),
    "remap_failure": ("remapped_rows/remapped_row_failure",),
    "recovery_action": ("gpu_recovery_action",),
    "clock_events": ("clocks_event_reasons/*", "clocks_throttle_reasons/*"),
    "pcie_gen": ("pci/pci_gpu_link_info/pcie_gen/current_link_gen",),
    "pcie_gen_max": ("pci/pci_gpu_link_info/pcie_gen/max_link_gen",),
    "pcie_width": ("pci/pci_gpu_link_info/link_widths/current_link_width",),
    "pcie_width_max": ("pci/pci_gpu_link_info/link_widths/max_link_width",),
    "temperature_c": ("temperature/gpu_temp",),
    "sm_clock_mhz": ("clocks/sm_clock",),
    "memory_total_mib": ("fb_memory_usage/total",),
    "memory_used_mib": ("fb_memory_usage/used",),
    "processes": (
        "processes/process_info/pid",
        "processes/process_info/process_name",
        "processes/process_info/used_memory",
    ),
    "fabric_state": ("fabric/state",),
    "fabric_status": ("fabric/status",),
}

#: Top-level fields of the log, the same way.
LOG_FIELDS: dict[str, tuple[str, ...]] = {
    "driver_version": ("driver_version",),
    "cuda_version": ("cuda_version",),
}

#: Set by the tests to a set: every guarded field a check reads is added to it (how the
#: field-replacement test finds which checks depend on which field, from the checks themselves).
RECORD: set[str] | None = None


class _Guarded:
    """Reading a field listed in ``unreadable`` raises Unreadable instead of giving a value."""

    def __getattribute__(self, name: str):
        if name in FIELDS or name in LOG_FIELDS:
            record = RECORD
            if record is not None:
                record.add(name)
            bad = object.__getattribute__(self, "unreadable")
            if name in bad:
                raise Unreadable(object.__getattribute__(self, "owner"), name, bad[name])
        return object.__getattribute__(self, name)


@dataclass(frozen=True)
class Process:
    """One compute process on a GPU (``<processes>/<process_info>``)."""

    pid: int
    name: str
    used_mib: int | None  # None: N/A (nvidia-smi in a container cannot always see it)
    kind: str = "C"


@dataclass(frozen=True, repr=False, eq=False)
class Gpu(_Guarded):
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
    inforom_oem: str = ""
    board_part_number: str = ""
    persistence_mode: str = ""
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    processes: tuple[Process, ...] = ()
    unreadable: dict[str, str] = field(default_factory=dict)  # field -> "element: text"

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.bus_id})"

    @property
    def owner(self) -> str:
        return self.label

    def __repr__(self) -> str:
        return f"Gpu({self.label}, unreadable={sorted(self.unreadable)})"

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


@dataclass(frozen=True, repr=False, eq=False)
class SmiLog(_Guarded):
    driver_version: str
    cuda_version: str
    attached_gpus: int
    gpus: tuple[Gpu, ...]
    unreadable: dict[str, str] = field(default_factory=dict)
    owner: str = "nvidia-smi -q -x"

    def __repr__(self) -> str:
        return f"SmiLog({len(self.gpus)} GPUs, unreadable={sorted(self.unreadable)})"


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
    attached = _number(_text(root, "attached_gpus"))
    if attached is None:
        raise ParseError("no <attached_gpus> count")
    gpus = tuple(_gpu(i, el) for i, el in enumerate(root.findall("gpu")))
    if len(gpus) != attached:
        raise ParseError(f"<attached_gpus> says {attached} but {len(gpus)} <gpu> elements follow")
    r = _Reader(root)
    return SmiLog(r.text("driver_version"), r.text("cuda_version"), attached, gpus, r.unreadable)


def _text(el: ET.Element, path: str) -> str:
    found = el.find(path)
    return (found.text or "").strip() if found is not None else ""


def _number(value: str) -> int | None:
    """``"36 C"``, ``"1980 MHz"``, ``"16x"`` -> the integer; N/A -> None."""
    match = re.match(r"\s*(-?\d+)", value)
    return int(match.group(1)) if match else None


def unreadable_text(text: str) -> bool:
    return text.strip() in UNREADABLE_FORMS


class _Reader:
    """Reads the elements of one ``<gpu>`` (or the root) field by field, keeping aside every
    field whose text could not be read. A missing element is "not reported" (older drivers
    lack some); an element that is there but empty, ``ERR!`` and the like is unreadable."""

    def __init__(self, el: ET.Element) -> None:
        self.el = el
        self.unreadable: dict[str, str] = {}

    def _bad(self, field: str, path: str, text: str) -> None:
        self.unreadable.setdefault(field, f"<{path}> {text!r}" if text else f"<{path}> empty")

    def raw(self, field: str, path: str) -> str | None:
        found = self.el.find(path)
        if found is None:
            return None
        text = (found.text or "").strip()
        if unreadable_text(text):
            self._bad(field, path, text)
            return None
        return text

    def text(self, field: str, path: str | None = None) -> str:
        paths = (path,) if path else (FIELDS.get(field) or LOG_FIELDS[field])
        for p in paths:
            value = self.raw(field, p)
            if value is not None or field in self.unreadable:
                return value or ""
        return ""

    def number(self, field: str, path: str | None = None) -> int | None:
        value = self.text(field, path)
        if not value or value in NOT_APPLICABLE:
            return None
        number = _number(value)
        if number is None:
            self._bad(field, path or FIELDS[field][0], value)
        return number

    def flag(self, field: str, path: str | None = None) -> bool | None:
        value = self.text(field, path)
        if not value or value in NOT_APPLICABLE:
            return None
        answer = {"yes": True, "no": False}.get(value.lower())
        if answer is None:
            self._bad(field, path or FIELDS[field][0], value)
        return answer


def _counters(r: _Reader, field: str) -> dict[str, int | None]:
    return {p.rsplit("/", 1)[1]: r.number(field, p) for p in FIELDS[field]}


def _gpu(index: int, el: ET.Element) -> Gpu:
    bus_id = el.get("id") or _text(el, "pci/pci_bus_id")
    if not bus_id:
        raise ParseError(f"<gpu> number {index} has no PCI bus id")
    r = _Reader(el)
    volatile = _counters(r, "ecc_volatile")
    aggregate = _counters(r, "ecc_aggregate")
    retired = r.flag("retired_pending", "retired_pages/pending_retirement")
    if retired is None and "retired_pending" not in r.unreadable:
        retired = r.flag("retired_pending", "retired_pages/pending_blacklist")
    return Gpu(
        index=index,
        bus_id=bus_id,
        name=r.text("name"),
        uuid=_text(el, "uuid"),
        serial=_text(el, "serial"),
        vbios=r.text("vbios"),
        inforom_image=r.text("inforom_image"),
        gsp_firmware=r.text("gsp_firmware"),
        ecc_current=r.text("ecc_current"),
        ecc_pending=r.text("ecc_pending"),
        ecc_volatile=volatile,
        ecc_aggregate=aggregate,
        sram_threshold_exceeded=r.flag("sram_threshold_exceeded") is True,
        retired_pending=retired is True,
        remap_correctable=r.number("remap_correctable"),
        remap_uncorrectable=r.number("remap_uncorrectable"),
        remap_pending=r.flag("remap_pending"),
        remap_failure=r.flag("remap_failure"),
        recovery_action=r.text("recovery_action"),
        clock_events=_clock_events(r),
        pcie_gen=r.number("pcie_gen"),
        pcie_gen_max=r.number("pcie_gen_max"),
        pcie_width=r.number("pcie_width"),
        pcie_width_max=r.number("pcie_width_max"),
        temperature_c=r.number("temperature_c"),
        sm_clock_mhz=r.number("sm_clock_mhz"),
        fabric_state=r.text("fabric_state"),
        fabric_status=r.text("fabric_status"),
        inforom_oem=r.text("inforom_oem"),
        board_part_number=r.text("board_part_number"),
        persistence_mode=r.text("persistence_mode"),
        memory_total_mib=r.number("memory_total_mib"),
        memory_used_mib=r.number("memory_used_mib"),
        processes=_processes(r),
        unreadable=r.unreadable,
    )


def _clock_events(r: _Reader) -> frozenset[str]:
    for container, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        block = r.el.find(container)
        if block is not None:
            active = set()
            for child in block:
                text = (child.text or "").strip()
                if text == "Active":
                    active.add(child.tag.removeprefix(prefix))
                elif text != "Not Active":
                    r._bad("clock_events", f"{container}/{child.tag}", text)
            return frozenset(active)
    return frozenset()


def _processes(r: _Reader) -> tuple[Process, ...]:
    block = r.el.find("processes")
    if block is None:
        return ()
    out = []
    for info in block.findall("process_info"):
        sub = _Reader(info)
        pid = sub.number("processes", "pid")
        name = sub.text("processes", "process_name")
        used = sub.number("processes", "used_memory")
        if "processes" in sub.unreadable or pid is None:
            r.unreadable.setdefault(
                "processes", sub.unreadable.get("processes", "<process_info> without a pid")
            )
            continue
        out.append(Process(pid, name, used, _text(info, "type") or "C"))
    return tuple(out)
