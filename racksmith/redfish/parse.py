"""Pure parsers: Redfish JSON documents in, typed facts out. No I/O here.

Every function takes already-fetched documents (dicts, lists of dicts), so the same code runs
on a live BMC, on the real iDRAC capture in tests, with ``$expand`` (members inline) or
without (members fetched one by one). Where Dell and the standard disagree the rules come from
real captures (see docs/redfish.md and the reference):

- the service tag is ``SKU`` (``SerialNumber`` is the board serial);
- GPUs are ``Processors`` members with ``ProcessorType == "GPU"``; their firmware lives in
  Dell's ``DellVideo`` OEM collection, not in the processor nor the firmware inventory;
- host MACs come from ``EthernetInterfaces`` and, when that collection is empty (iDRAC 7.00),
  from ``NetworkAdapters/*/NetworkDeviceFunctions`` minus Fibre Channel and disabled functions;
- MACs are reported lowercase (MAAS wants lowercase; iDRAC host NICs are uppercase).

A document that breaks Redfish's shape raises :class:`ParseError` (``MALFORMED``); a valid
document that lacks a fact racksmith needs raises it with ``INCOMPLETE``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from racksmith.macs import normalize_mac
from racksmith.redfish import firmware as fw
from racksmith.redfish import pxe, vendors
from racksmith.redfish.errors import ErrorKind, RedfishError

Doc = Mapping[str, Any]

_SKIPPED_FUNCTION_TYPES = {"fibrechannel", "fibrechanneloverethernet", "disabled"}


class ParseError(RedfishError):
    """A document is not the Redfish we need; ``kind`` is MALFORMED or INCOMPLETE."""

    def __init__(self, kind: ErrorKind, reason: str) -> None:
        super().__init__(kind, reason)


# -- small helpers ---------------------------------------------------------------------------


def _where(doc: Doc) -> str:
    return str(doc.get("@odata.id") or doc.get("Id") or "document")


def _text(doc: Doc, key: str, *, required: bool = False) -> str | None:
    """A string property; empty strings and JSON null read as missing; other types are malformed."""
    value = doc.get(key)
    if value is None or value == "":
        if required:
            raise ParseError(ErrorKind.INCOMPLETE, f"{_where(doc)}: no {key}")
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ParseError(
            ErrorKind.MALFORMED, f"{_where(doc)}: {key} is a {type(value).__name__}, not text"
        )
    return str(value).strip() or None


def _obj(doc: Doc, key: str) -> Doc:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ParseError(ErrorKind.MALFORMED, f"{_where(doc)}: {key} is not an object")
    return value


def _path(doc: Doc, *keys: str) -> Any:
    current: Any = doc
    for key in keys:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def link(doc: Doc, key: str) -> str | None:
    """The ``@odata.id`` of a navigation property (``Processors``), or None."""
    value = doc.get(key)
    if isinstance(value, Mapping) and isinstance(value.get("@odata.id"), str):
        return value["@odata.id"]
    return None


def nested_link(doc: Doc, *keys: str) -> str | None:
    """The ``@odata.id`` at a path of keys (``Oem``, ``Hpe``, ``Links``, ``Devices``), or None."""
    target = _path(doc, *keys, "@odata.id")
    return target if isinstance(target, str) and target else None


def links(doc: Doc, key: str) -> list[str]:
    """``@odata.id``s of a ``Links`` entry (``ManagedBy``, ``Chassis``), in order, de-duplicated."""
    value = _path(doc, "Links", key)
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for item in value:
        target = item.get("@odata.id") if isinstance(item, Mapping) else None
        if isinstance(target, str) and target not in out:
            out.append(target)
    return out


def member_links(collection: Doc) -> list[str]:
    """Member URIs of a collection, de-duplicated (iDRAC repeats PCIe devices per function)."""
    members = collection.get("Members")
    if not isinstance(members, list):
        raise ParseError(ErrorKind.MALFORMED, f"{_where(collection)}: no Members list")
    out: list[str] = []
    for member in members:
        target = member.get("@odata.id") if isinstance(member, Mapping) else None
        if not isinstance(target, str):
            raise ParseError(
                ErrorKind.MALFORMED, f"{_where(collection)}: a member has no @odata.id"
            )
        if target not in out:
            out.append(target)
    return out


def _dedupe(docs: Iterable[Doc]) -> list[Doc]:
    seen: set[str] = set()
    out: list[Doc] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise ParseError(ErrorKind.MALFORMED, "a collection member is not a JSON object")
        key = str(doc.get("@odata.id") or id(doc))
        if key not in seen:
            seen.add(key)
            out.append(doc)
    return out


# -- system, manager --------------------------------------------------------------------------


@dataclass(frozen=True)
class BootOverride:
    enabled: str | None
    target: str | None
    mode: str | None
    allowed_targets: tuple[str, ...]
    uefi_target: str | None = None


@dataclass(frozen=True)
class SystemInfo:
    uri: str
    service_tag: str
    serial: str
    model: str
    manufacturer: str | None
    uuid: str | None
    power_state: str | None
    health: str | None
    bios_version: str | None
    memory_gib: float | None
    cpu_count: int | None
    cpu_model: str | None
    reset_types: tuple[str, ...]
    reset_target: str | None
    boot: BootOverride
    processors_uri: str | None
    ethernet_interfaces_uri: str | None
    memory_uri: str | None
    manager_uris: tuple[str, ...]
    chassis_uris: tuple[str, ...]
    dell_video_uri: str | None
    pcie_device_uris: tuple[str, ...]
    #: ``@Redfish.ActionInfo`` of the reset action: where the allowed reset types are listed
    #: when they are not inline (Supermicro, AMI/DGX)
    reset_info_uri: str | None = None
    #: ``@Redfish.Settings`` object: pending values applied at the next reset (AMI/DGX ``SD``)
    settings_uri: str | None = None


def parse_boot(system: Doc) -> BootOverride:
    boot = _obj(system, "Boot")
    allowed = boot.get("BootSourceOverrideTarget@Redfish.AllowableValues") or []
    return BootOverride(
        enabled=_text(boot, "BootSourceOverrideEnabled"),
        target=_text(boot, "BootSourceOverrideTarget"),
        mode=_text(boot, "BootSourceOverrideMode"),
        allowed_targets=tuple(str(v) for v in allowed if isinstance(v, str)),
        uefi_target=_text(boot, "UefiTargetBootSourceOverride"),
    )


def parse_system(
    system: Doc, service_tag_fields: Sequence[str] = vendors.PROFILES["dell"].service_tag_fields
) -> SystemInfo:
    """The ComputerSystem: identity, power, health, versions and where the rest lives.

    ``service_tag_fields``: where the vendor keeps the asset identity (see
    :mod:`racksmith.redfish.vendors`; Dell's ``SKU``, others' ``SerialNumber``).
    """
    if not isinstance(system, Mapping) or "@odata.id" not in system:
        raise ParseError(ErrorKind.MALFORMED, "system document has no @odata.id")
    service_tag, _ = vendors.service_tag(system, service_tag_fields)
    if not service_tag:
        fields = " or ".join(service_tag_fields)
        raise ParseError(ErrorKind.INCOMPLETE, f"{_where(system)}: no service tag ({fields})")
    status = _obj(system, "Status")
    memory = _obj(system, "MemorySummary")
    processors = _obj(system, "ProcessorSummary")
    reset = _path(system, "Actions", "#ComputerSystem.Reset") or {}
    allowed = reset.get("ResetType@Redfish.AllowableValues") if isinstance(reset, Mapping) else None
    gib = memory.get("TotalSystemMemoryGiB")
    count = processors.get("Count")
    pcie = system.get("PCIeDevices")
    return SystemInfo(
        uri=str(system["@odata.id"]),
        service_tag=service_tag,
        serial=_text(system, "SerialNumber", required=True) or "",
        model=_text(system, "Model", required=True) or "",
        manufacturer=_text(system, "Manufacturer"),
        uuid=(_text(system, "UUID") or "").lower() or None,
        power_state=_text(system, "PowerState"),
        health=_text(status, "HealthRollup") or _text(status, "Health"),
        bios_version=_text(system, "BiosVersion"),
        memory_gib=float(gib)
        if isinstance(gib, int | float) and not isinstance(gib, bool)
        else None,
        cpu_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        cpu_model=_text(processors, "Model"),
        reset_types=tuple(str(v) for v in allowed or () if isinstance(v, str)),
        reset_target=reset.get("target") if isinstance(reset, Mapping) else None,
        reset_info_uri=_str_or_none(reset.get("@Redfish.ActionInfo"))
        if isinstance(reset, Mapping)
        else None,
        settings_uri=_str_or_none(
            _path(system, "@Redfish.Settings", "SettingsObject", "@odata.id")
        ),
        boot=parse_boot(system),
        processors_uri=link(system, "Processors"),
        ethernet_interfaces_uri=link(system, "EthernetInterfaces"),
        memory_uri=link(system, "Memory"),
        manager_uris=tuple(links(system, "ManagedBy")),
        chassis_uris=tuple(links(system, "Chassis")),
        dell_video_uri=_path(system, "Links", "Oem", "Dell", "DellVideoCollection", "@odata.id"),
        pcie_device_uris=tuple(
            dict.fromkeys(
                d["@odata.id"]
                for d in pcie or ()
                if isinstance(d, Mapping) and isinstance(d.get("@odata.id"), str)
            )
        ),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def action_parameter_values(action_info: Doc, parameter: str) -> tuple[str, ...] | None:
    """The ``AllowableValues`` an ``ActionInfo`` document lists for ``parameter``; None when it
    does not describe the parameter (so the caller can say so rather than guess)."""
    if not isinstance(action_info, Mapping):
        raise ParseError(ErrorKind.MALFORMED, "ActionInfo document is not a JSON object")
    parameters = action_info.get("Parameters")
    if not isinstance(parameters, list):
        return None
    for entry in parameters:
        if isinstance(entry, Mapping) and entry.get("Name") == parameter:
            values = entry.get("AllowableValues")
            if not isinstance(values, list):
                return None
            return tuple(str(v) for v in values if isinstance(v, str))
    return None


@dataclass(frozen=True)
class ManagerInfo:
    uri: str
    firmware: str | None
    model: str | None
    datetime: str | None
    datetime_offset: str | None


def parse_manager(manager: Doc) -> ManagerInfo:
    if not isinstance(manager, Mapping):
        raise ParseError(ErrorKind.MALFORMED, "manager document is not a JSON object")
    return ManagerInfo(
        uri=_where(manager),
        firmware=_text(manager, "FirmwareVersion"),
        model=_text(manager, "Model"),
        datetime=_text(manager, "DateTime"),
        datetime_offset=_text(manager, "DateTimeLocalOffset"),
    )


def parse_datetime(value: str) -> datetime:
    """A Redfish ``DateTime`` (ISO 8601 with offset); a missing offset is a malformed value."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ParseError(ErrorKind.MALFORMED, f"DateTime {value!r} is not ISO 8601") from None
    if parsed.tzinfo is None:
        raise ParseError(ErrorKind.MALFORMED, f"DateTime {value!r} has no UTC offset")
    return parsed


# -- NICs, InfiniBand --------------------------------------------------------------------------


@dataclass(frozen=True)
class Nic:
    id: str
    mac: str
    link: str | None = None  # LinkUp / LinkDown / NoLink; None when the BMC says nothing
    speed_mbps: int | None = None
    source: str = "EthernetInterfaces"

    def public(self) -> dict[str, str]:
        return {"id": self.id, "mac": self.mac}


def nics_from_ethernet_interfaces(interfaces: Iterable[Doc]) -> list[Nic]:
    """Host NICs, permanent MAC first (``MACAddress`` can be a virtual/assigned one)."""
    nics: list[Nic] = []
    for doc in _dedupe(interfaces):
        if _path(doc, "Links", "HostInterface"):
            continue  # the BMC's own USB/RNDIS link to the host (Supermicro, Lenovo "ToManager")
        mac = normalize_mac(doc.get("PermanentMACAddress")) or normalize_mac(doc.get("MACAddress"))
        nic_id = _text(doc, "Id") or _where(doc).rsplit("/", 1)[-1]
        if not mac:
            continue  # an interface without a MAC cannot be PXE-booted or enlisted
        speed = doc.get("SpeedMbps")
        nics.append(
            Nic(
                id=nic_id,
                mac=mac,
                link=_text(doc, "LinkStatus"),
                speed_mbps=speed
                if isinstance(speed, int) and not isinstance(speed, bool) and speed > 0
                else None,
            )
        )
    return sorted(nics, key=lambda n: n.id)


def _is_infiniband(adapter_id: str, function: Doc) -> bool:
    kind = str(function.get("NetDevFuncType") or "").lower()
    return kind == "infiniband" or adapter_id.lower().startswith("infiniband.")


def nics_from_device_functions(adapters: Mapping[str, Sequence[Doc]]) -> list[Nic]:
    """Ethernet MACs from ``NetworkDeviceFunctions`` grouped by adapter id (the fallback path).

    Skips Fibre Channel and disabled functions and InfiniBand ports (those are reported by
    :func:`infiniband_adapters`); keeps functions without ``NetDevFuncType`` on Ethernet
    adapters, since iDRAC leaves it out on some cards.
    """
    nics: list[Nic] = []
    for adapter_id, functions in adapters.items():
        for fn in _dedupe(functions):
            kind = str(fn.get("NetDevFuncType") or "").lower()
            if kind in _SKIPPED_FUNCTION_TYPES or _is_infiniband(adapter_id, fn):
                continue
            state = str(_path(fn, "Status", "State") or "").lower()
            if state in ("disabled", "absent"):
                continue
            ethernet = _obj(fn, "Ethernet")
            mac = normalize_mac(ethernet.get("PermanentMACAddress")) or normalize_mac(
                ethernet.get("MACAddress")
            )
            if mac:
                nics.append(
                    Nic(id=_text(fn, "Id") or _where(fn), mac=mac, source="NetworkDeviceFunctions")
                )
    return sorted(nics, key=lambda n: n.id)


@dataclass(frozen=True)
class InfinibandAdapter:
    id: str
    manufacturer: str | None
    model: str | None
    serial: str | None
    firmware: str | None
    ports: tuple[dict[str, str], ...]  # {id, mac}: the address iDRAC reports per function


def infiniband_adapters(
    adapters: Iterable[Doc], functions: Mapping[str, Sequence[Doc]]
) -> list[InfinibandAdapter]:
    out: list[InfinibandAdapter] = []
    for adapter in _dedupe(adapters):
        adapter_id = _text(adapter, "Id") or _where(adapter)
        fns = list(functions.get(adapter_id, ()))
        if not (
            adapter_id.lower().startswith("infiniband.")
            or any(_is_infiniband(adapter_id, f) for f in fns)
        ):
            continue
        controllers = adapter.get("Controllers") or []
        firmware = None
        if isinstance(controllers, list) and controllers and isinstance(controllers[0], Mapping):
            firmware = _text(controllers[0], "FirmwarePackageVersion")
        ports = []
        for fn in _dedupe(fns):
            ethernet = _obj(fn, "Ethernet")
            mac = normalize_mac(ethernet.get("PermanentMACAddress")) or normalize_mac(
                ethernet.get("MACAddress")
            )
            ports.append({"id": _text(fn, "Id") or _where(fn), "mac": mac or ""})
        out.append(
            InfinibandAdapter(
                id=adapter_id,
                manufacturer=_text(adapter, "Manufacturer"),
                model=_text(adapter, "Model"),
                serial=_text(adapter, "SerialNumber"),
                firmware=firmware,
                ports=tuple(sorted(ports, key=lambda p: p["id"])),
            )
        )
    return sorted(out, key=lambda a: a.id)


# -- PXE choice (racksmith.redfish.pxe) --------------------------------------------------------


def nics_from_boot_options(options: Iterable[Doc]) -> list[Nic]:
    """Host ports named only by the firmware's network boot options (NVIDIA GH200/GB200 have no
    ``EthernetInterfaces``): one per MAC, its id the device path up to the MAC node."""
    return [
        Nic(id=port.path, mac=port.mac, source="BootOptions")
        for port in pxe.boot_option_ports(_dedupe(options))
    ]


# -- GPUs, firmware, PCIe, memory -------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    id: str
    model: str | None
    manufacturer: str | None
    serial: str | None
    part_number: str | None
    firmware: str | None
    health: str | None
    model_source: str | None = None  # Model, PartNumber, PCIe device id, Oem (vendors.py)

    def public(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "model": self.model,
            "serial": self.serial,
            "firmware": self.firmware,
        }


def gpus(processors: Iterable[Doc], dell_video: Iterable[Doc] = ()) -> list[Gpu]:
    """GPUs among the processors; firmware from the processor, else from Dell's DellVideo entry."""
    videos: dict[str, Doc] = {}
    for video in _dedupe(dell_video):
        vid = _text(video, "Id") or _text(video, "FQDD")
        if vid:
            videos[vid] = video
    out: list[Gpu] = []
    for proc in _dedupe(processors):
        if str(proc.get("ProcessorType") or "").upper() != "GPU":
            continue
        gpu_id = _text(proc, "Id") or _where(proc).rsplit("/", 1)[-1]
        video = videos.get(gpu_id)
        out.append(_gpu(proc, gpu_id, oem=(video,) if video else ()))
    return sorted(out, key=lambda g: g.id)


def _gpu(doc: Doc, gpu_id: str, functions: Sequence[Doc] = (), oem: Sequence[Doc] = ()) -> Gpu:
    identity = vendors.gpu_identity(doc, functions, oem)
    firmware = _text(doc, "FirmwareVersion")
    for extra in oem:
        firmware = firmware or _text(extra, "FirmwareVersion")
    return Gpu(
        id=gpu_id,
        model=identity.model,
        manufacturer=_text(doc, "Manufacturer"),
        serial=_text(doc, "SerialNumber"),
        part_number=_text(doc, "PartNumber"),
        firmware=firmware,
        health=_text(_obj(doc, "Status"), "Health"),
        model_source=identity.source,
    )


def gpus_from_pcie(
    devices: Iterable[Doc], functions: Mapping[str, Sequence[Doc]] | None = None
) -> list[Gpu]:
    """GPUs among a chassis's PCIe devices (Supermicro HGX lists them nowhere else).

    ``functions``: PCIeFunction documents by device URI, read only for a GPU whose model the
    device itself does not say (the vendor/device id route of :func:`vendors.gpu_identity`).
    """
    out = []
    for doc in _dedupe(devices):
        if not vendors.is_gpu_device(doc):
            continue
        gpu_id = _text(doc, "Id") or _where(doc).rsplit("/", 1)[-1]
        out.append(_gpu(doc, gpu_id, (functions or {}).get(_where(doc), ())))
    return sorted(out, key=lambda g: g.id)


def gpus_need_firmware(found: Sequence[Gpu]) -> bool:
    return any(g.firmware is None for g in found)


def firmware_inventory(items: Iterable[Doc]) -> list[fw.FirmwareItem]:
    """Every firmware inventory member, keyed by component (:mod:`racksmith.redfish.firmware`)."""
    return fw.inventory(_dedupe(items))


@dataclass(frozen=True)
class PcieDevice:
    id: str
    name: str | None
    manufacturer: str | None
    model: str | None
    device_type: str | None
    serial: str | None


def pcie_devices(devices: Iterable[Doc]) -> list[PcieDevice]:
    """PCIe devices, de-duplicated (``ComputerSystem.PCIeDevices`` repeats multi-function ones)."""
    out = []
    for doc in _dedupe(devices):
        out.append(
            PcieDevice(
                id=_text(doc, "Id") or _where(doc).rsplit("/", 1)[-1],
                name=_text(doc, "Name"),
                manufacturer=_text(doc, "Manufacturer"),
                model=_text(doc, "Model"),
                device_type=_text(doc, "DeviceType"),
                serial=_text(doc, "SerialNumber"),
            )
        )
    return sorted(out, key=lambda d: d.id)


@dataclass(frozen=True)
class MemoryModule:
    id: str
    capacity_mib: int | None
    memory_type: str | None
    speed_mhz: int | None
    manufacturer: str | None
    part_number: str | None


def memory_modules(modules: Iterable[Doc]) -> list[MemoryModule]:
    out = []
    for doc in _dedupe(modules):
        capacity = doc.get("CapacityMiB")
        speed = doc.get("OperatingSpeedMhz")
        state = str(_path(doc, "Status", "State") or "").lower()
        if state == "absent":
            continue
        out.append(
            MemoryModule(
                id=_text(doc, "Id") or _where(doc).rsplit("/", 1)[-1],
                capacity_mib=capacity
                if isinstance(capacity, int) and not isinstance(capacity, bool)
                else None,
                memory_type=_text(doc, "MemoryDeviceType"),
                speed_mhz=speed if isinstance(speed, int) and not isinstance(speed, bool) else None,
                manufacturer=_text(doc, "Manufacturer"),
                part_number=_text(doc, "PartNumber"),
            )
        )
    return sorted(out, key=lambda m: m.id)


def gpus_from_hpe_devices(devices: Iterable[Doc], functions: Mapping[str, Doc]) -> list[Gpu]:
    """GPUs from HPE iLO's OEM ``Chassis/1/Devices`` (the XL675d lists them nowhere standard).

    iLO types the HGX baseboard and the NVSwitches ``DeviceType: GPU`` too, so a device counts
    only when one of its ``DeviceInstances`` is a PCI function of display class (``ClassCode``
    3) in ``Systems/1/PCIDevices`` (``functions``: those documents by URI, trailing slash
    stripped). The baseboard has no instance and the NVSwitches are bridges (class 6).
    """
    out = []
    for doc in _dedupe(devices):
        if str(doc.get("DeviceType") or "").upper() != "GPU":
            continue
        instances = doc.get("DeviceInstances")
        uris = [
            str(i.get("@odata.id") or "").rstrip("/")
            for i in (instances if isinstance(instances, list) else [])
            if isinstance(i, Mapping)
        ]
        if not any(_path(functions.get(u) or {}, "ClassCode") == 3 for u in uris):
            continue
        name = _text(doc, "Name")
        nvidia = vendors.is_nvidia(doc, *(functions.get(u) or {} for u in uris))
        version = _path(doc, "FirmwareVersion", "Current", "VersionString")
        out.append(
            Gpu(
                id=_text(doc, "Location") or _text(doc, "Id") or _where(doc),
                model=vendors.canonical_gpu_model(name, nvidia) if name else None,
                manufacturer=_text(doc, "Manufacturer"),
                serial=_text(doc, "SerialNumber"),
                part_number=_text(doc, "PartNumber"),
                firmware=version.strip() if isinstance(version, str) and version.strip() else None,
                health=_text(_obj(doc, "Status"), "Health"),
                model_source="Name" if name else None,
            )
        )
    return sorted(out, key=lambda g: _slot_order(g.id))


def _slot_order(gpu_id: str) -> tuple[str, int]:
    """``PCI-E Slot 2`` before ``PCI-E Slot 11``."""
    head, _, tail = gpu_id.rpartition(" ")
    return (head, int(tail)) if tail.isdigit() else (gpu_id, -1)


# -- identity from the chassis (NVIDIA OpenBMC) -------------------------------------------------

_IDENTITY_FIELDS = ("Manufacturer", "Model", "SerialNumber")
#: Chassis types that enclose a whole server, as opposed to a board or a part of one.
_ENCLOSURE_TYPES = {
    "rack",
    "rackmount",
    "shelf",
    "enclosure",
    "standalone",
    "stretchedstandalone",
    "sled",
    "blade",
    "drawer",
    "cartridge",
}


def lacks_identity(system: Doc) -> bool:
    """True when the system names neither its model nor its serial (NVIDIA GH200/GB200)."""
    return not (_text(system, "SerialNumber") or _text(system, "Model"))


def identity_chassis(system: Doc, chassis: Sequence[Doc]) -> Doc | None:
    """The chassis that carries a system's identity when the system itself does not.

    Candidates are the chassis linked to the system (its ``Links.Chassis``, or a chassis whose
    ``Links.ComputerSystems`` names it). An enclosure-type one wins (GB200: ``Chassis_0``, a
    Shelf, "GB200 NVL"); else the first the system links to (GH200: ``BMC_0``, P3809, its
    only link). Chassis that name no serial are skipped.
    """
    uri = system.get("@odata.id")
    linked = links(system, "Chassis")
    by_uri = {str(c.get("@odata.id")): c for c in chassis if isinstance(c, Mapping)}
    candidates = [by_uri[u] for u in linked if u in by_uri]
    for doc in by_uri.values():
        if doc not in candidates and uri in links(doc, "ComputerSystems"):
            candidates.append(doc)
    candidates = [c for c in candidates if _text(c, "SerialNumber")]
    for doc in candidates:
        if str(doc.get("ChassisType") or "").lower() in _ENCLOSURE_TYPES:
            return doc
    return candidates[0] if candidates else None


def with_chassis_identity(system: Doc, chassis: Doc) -> dict[str, Any]:
    """A copy of the system with Manufacturer, Model and SerialNumber taken from the chassis
    where the system has none (nothing the system says is overwritten)."""
    out = dict(system)
    for key in _IDENTITY_FIELDS:
        if not _text(system, key) and _text(chassis, key):
            out[key] = chassis[key]
    return out


# -- BIOS settings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BiosSettings:
    """Current BIOS values, the values pending in the ``@Redfish.Settings`` object (only those
    that differ from current: Dell's object holds only changed attributes, HPE's, Lenovo's and
    the DGX's hold every writable one), and the registry when the BMC has one."""

    uri: str
    current: Mapping[str, Any]
    pending: Mapping[str, Any]
    settings_uri: str | None
    apply_times: tuple[str, ...]
    registry_id: str | None
    registry: Mapping[str, Mapping[str, Any]] | None = None  # AttributeName -> entry
    notes: tuple[str, ...] = ()
    #: False when the BMC has a settings object that could not be read: pending values unknown
    pending_known: bool = True

    def public(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "current": dict(self.current),
            "pending": dict(self.pending),
            "settings_uri": self.settings_uri,
            "apply_times": list(self.apply_times),
            "registry_id": self.registry_id,
            "registry": _compact_registry(self.registry) if self.registry is not None else None,
            "notes": list(self.notes),
            "pending_known": self.pending_known,
        }


_REGISTRY_KEYS = (
    "Type",
    "ReadOnly",
    "Immutable",
    "LowerBound",
    "UpperBound",
    "MinLength",
    "MaxLength",
)


def _compact_registry(registry: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """What a baseline check needs of each registry entry (type, bounds, allowed values), not
    its help texts."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in sorted(registry.items()):
        compact = {k: entry[k] for k in _REGISTRY_KEYS if entry.get(k) is not None}
        values = entry.get("Value")
        if isinstance(values, list):
            compact["Value"] = [
                {"ValueName": v["ValueName"]}
                for v in values
                if isinstance(v, Mapping) and "ValueName" in v
            ]
        out[name] = compact
    return out


def bios_settings_uri(bios: Doc) -> str | None:
    return _str_or_none(_path(bios, "@Redfish.Settings", "SettingsObject", "@odata.id"))


def registry_entries(registry: Doc) -> dict[str, Mapping[str, Any]]:
    """An AttributeRegistry's attributes by name."""
    attributes = _path(registry, "RegistryEntries", "Attributes")
    if not isinstance(attributes, list):
        raise ParseError(ErrorKind.MALFORMED, f"{_where(registry)}: no RegistryEntries.Attributes")
    return {
        str(a["AttributeName"]): a
        for a in attributes
        if isinstance(a, Mapping) and isinstance(a.get("AttributeName"), str)
    }


def parse_bios(
    bios: Doc,
    pending: Doc | None = None,
    registry: Doc | None = None,
    notes: Sequence[str] = (),
    *,
    pending_known: bool = True,
) -> BiosSettings:
    current = bios.get("Attributes")
    if not isinstance(current, Mapping):
        raise ParseError(ErrorKind.MALFORMED, f"{_where(bios)}: Attributes is not an object")
    waiting: dict[str, Any] = {}
    if pending is not None:
        values = pending.get("Attributes") or {}
        if not isinstance(values, Mapping):
            raise ParseError(ErrorKind.MALFORMED, f"{_where(pending)}: Attributes is not an object")
        waiting = {k: v for k, v in values.items() if current.get(k) != v}
    times = _path(bios, "@Redfish.Settings", "SupportedApplyTimes")
    return BiosSettings(
        uri=_where(bios),
        current=dict(current),
        pending=waiting,
        settings_uri=bios_settings_uri(bios),
        apply_times=tuple(str(t) for t in times) if isinstance(times, list) else (),
        registry_id=_text(bios, "AttributeRegistry"),
        registry=registry_entries(registry) if registry is not None else None,
        notes=tuple(notes),
        pending_known=pending_known,
    )


# -- the host record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HostFacts:
    """Everything discovery learned about one server, as plain data (JSON-ready via ``as_dict``)."""

    system: SystemInfo
    manager: ManagerInfo | None
    nics: tuple[Nic, ...]
    pxe: pxe.PxeChoice | None
    gpus: tuple[Gpu, ...]
    infiniband: tuple[InfinibandAdapter, ...] = ()
    firmware: tuple[fw.FirmwareItem, ...] = ()
    #: why the firmware inventory could not be read (it was asked for); None otherwise
    firmware_error: str | None = None
    bios: BiosSettings | None = None
    #: racksmith.redfish.bmc_health's report (extra bmc_health); None when not asked for
    bmc_health: dict[str, Any] | None = None
    pcie: tuple[PcieDevice, ...] = ()
    memory: tuple[MemoryModule, ...] = ()
    notes: tuple[str, ...] = field(default=())
    vendor: str | None = None  # the vendor profile that read it (racksmith.redfish.vendors)

    def public(self) -> dict[str, Any]:
        """The documented fact set (CLI JSON, inventory host vars without the prefix)."""
        s = self.system
        facts: dict[str, Any] = {
            "service_tag": s.service_tag,
            "serial": s.serial,
            "model": s.model,
            "manufacturer": s.manufacturer,
            "uuid": s.uuid,
            "power_state": s.power_state,
            "health": s.health,
            "bios_version": s.bios_version,
            "bmc_firmware": self.manager.firmware if self.manager else None,
            "nics": [n.public() for n in self.nics],
            "pxe_mac": self.pxe.mac if self.pxe else None,
            "pxe_rule": self.pxe.rule if self.pxe else None,
            "gpus": [g.public() for g in self.gpus],
            "memory_gib": s.memory_gib,
            "vendor": self.vendor,
            # which ComputerSystem of the BMC this host is (a multi-node chassis has several)
            "system_uri": s.uri,
            # where each GPU's model came from (Model, PartNumber, PCIe device id, Oem)
            "gpu_model_sources": {g.id: g.model_source for g in self.gpus},
        }
        if self.infiniband:
            facts["infiniband"] = [asdict(a) | {"ports": list(a.ports)} for a in self.infiniband]
        if self.firmware or self.firmware_error:
            facts["firmware"] = [f.public() for f in self.firmware]
        if self.firmware_error:
            facts["firmware_error"] = self.firmware_error
        if self.bios is not None:
            facts["bios"] = self.bios.public()
        if self.bmc_health is not None:
            facts["bmc_health"] = self.bmc_health
        if self.pcie:
            facts["pcie_devices"] = [asdict(d) for d in self.pcie]
        if self.memory:
            facts["memory_modules"] = [asdict(m) for m in self.memory]
        if self.notes:
            facts["notes"] = list(self.notes)
        return facts


class IncompleteHost(ParseError):
    """A fact could not be decided, but the others were read: ``facts`` keeps them, so a report
    names the server (serial, model, MACs) next to the reason."""

    def __init__(self, facts: HostFacts, reason: str) -> None:
        super().__init__(ErrorKind.INCOMPLETE, reason)
        self.facts = facts


def require_complete(facts: HostFacts, rules: Sequence[str]) -> None:
    """Fail closed: a host without a PXE MAC cannot be enlisted, so it is not healthy."""
    if facts.pxe is None and not facts.nics:
        raise IncompleteHost(
            facts,
            "no host NIC: the BMC lists no EthernetInterfaces, network adapter functions or "
            "network boot options, so no PXE MAC can be decided",
        )
    if facts.pxe is None:
        ids = ", ".join(n.id for n in facts.nics)
        raise IncompleteHost(facts, f"no NIC matches the PXE rules {list(rules)} (NICs: {ids})")
