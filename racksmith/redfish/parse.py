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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from racksmith.macs import normalize_mac
from racksmith.redfish import vendors
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


# -- PXE choice --------------------------------------------------------------------------------

#: Tried in order; the first rule that matches a NIC chooses the PXE MAC.
DEFAULT_PXE_RULES: tuple[str, ...] = ("id:NIC.Integrated.1-1-1", "id:NIC.Embedded.1-1-1", "link:up")


@dataclass(frozen=True)
class PxeChoice:
    mac: str
    nic_id: str
    rule: str


def validate_pxe_rules(rules: Sequence[str]) -> list[str]:
    """Check rule syntax early (``id:<NIC id>``, ``slot:<n>``, ``prefix:<id prefix>``,
    ``link:up``, ``first``)."""
    out = []
    for rule in rules:
        kind, _, arg = str(rule).partition(":")
        if kind in ("id", "prefix", "slot") and arg:
            out.append(f"{kind}:{arg}")
        elif kind == "link" and arg.lower() == "up":
            out.append("link:up")
        elif kind == "first" and not arg:
            out.append("first")
        elif kind == "boot" and arg.lower() == "pxe":
            out.append("boot:pxe")
        else:
            raise ValueError(
                f"PXE rule {rule!r}: use id:<NIC id>, slot:<n>, prefix:<id prefix>, link:up, "
                "boot:pxe or first"
            )
    return out


def choose_pxe(
    nics: Sequence[Nic], rules: Sequence[str] = DEFAULT_PXE_RULES, boot_macs: Sequence[str] = ()
) -> PxeChoice | None:
    """The PXE NIC by the first matching rule, or None (then the host is not ready to enlist).

    ``boot_macs``: MACs of the PXE boot options in boot order (:func:`pxe_boot_macs`), for the
    ``boot:pxe`` rule: the NIC the firmware itself will PXE-boot from first.
    """
    ordered = sorted(nics, key=lambda n: n.id)
    for rule in validate_pxe_rules(rules):
        kind, _, arg = rule.partition(":")
        if kind == "id":
            match = [n for n in ordered if n.id == arg]
        elif kind == "prefix":
            match = [n for n in ordered if n.id.startswith(arg)]
        elif kind == "slot":
            match = [n for n in ordered if n.id.startswith(f"NIC.Slot.{arg}-")]
        elif kind == "link":
            match = [n for n in ordered if (n.link or "").lower() == "linkup"]
        elif kind == "boot":
            by_mac = {n.mac: n for n in ordered}
            match = [by_mac[m] for m in boot_macs if m in by_mac][:1]
        else:
            match = ordered
        if match:
            return PxeChoice(mac=match[0].mac, nic_id=match[0].id, rule=rule)
    return None


_DEVICE_PATH_MAC = re.compile(r"MAC\(([0-9A-Fa-f]{12})")
_NAME_MAC = re.compile(r"\b([0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{12})\b")


def pxe_boot_macs(boot_order: Sequence[Any], options: Iterable[Doc]) -> list[str]:
    """MACs of the enabled PXE boot options, in ``Boot.BootOrder`` order, de-duplicated.

    The MAC comes from the UEFI device path (``.../MAC(946DAE91FB22,0x1)/IPv4(...)``) or, where
    the path is vendor-specific, from the display name (Supermicro: ``UEFI PXE IPv4 Nvidia
    Network Adapter - 94:6D:AE:91:FB:22``). HTTP boot entries (a ``Uri()`` node or "HTTP" in the
    name) are not PXE. A BMC whose options carry no MAC (Lenovo's ``Network``) gives none.
    """
    by_ref: dict[str, Doc] = {}
    for doc in _dedupe(options):
        ref = _text(doc, "BootOptionReference") or _text(doc, "Id")
        if ref:
            by_ref.setdefault(ref, doc)
    out: list[str] = []
    for ref in boot_order:
        doc = by_ref.get(str(ref))
        if doc is None or doc.get("BootOptionEnabled") is False:
            continue
        name = _text(doc, "DisplayName") or ""
        path = _text(doc, "UefiDevicePath") or ""
        if "http" in name.lower() or ("Uri()" in path and "pxe" not in name.lower()):
            continue
        if "pxe" not in name.lower() and "MAC(" not in path:
            continue
        found = _DEVICE_PATH_MAC.search(path) or _NAME_MAC.search(name)
        mac = normalize_mac(found.group(1)) if found else None
        if mac and mac not in out:
            out.append(mac)
    return out


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


@dataclass(frozen=True)
class Firmware:
    id: str
    name: str | None
    version: str | None
    updateable: bool | None
    state: str  # Installed, Current (staged), Previous (rollback image)


def firmware_inventory(items: Iterable[Doc]) -> list[Firmware]:
    out = []
    for doc in _dedupe(items):
        fid = _text(doc, "Id") or _where(doc).rsplit("/", 1)[-1]
        updateable = doc.get("Updateable")
        out.append(
            Firmware(
                id=fid,
                name=_text(doc, "Name"),
                version=_text(doc, "Version"),
                updateable=updateable if isinstance(updateable, bool) else None,
                state=fid.split("-", 1)[0]
                if fid.split("-", 1)[0] in ("Installed", "Current", "Previous")
                else "Installed",
            )
        )
    return sorted(out, key=lambda f: f.id)


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


# -- the host record ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HostFacts:
    """Everything discovery learned about one server, as plain data (JSON-ready via ``as_dict``)."""

    system: SystemInfo
    manager: ManagerInfo | None
    nics: tuple[Nic, ...]
    pxe: PxeChoice | None
    gpus: tuple[Gpu, ...]
    infiniband: tuple[InfinibandAdapter, ...] = ()
    firmware: tuple[Firmware, ...] = ()
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
        if self.firmware:
            facts["firmware"] = [asdict(f) for f in self.firmware]
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
    if facts.pxe is None:
        ids = ", ".join(n.id for n in facts.nics) or "none"
        raise IncompleteHost(facts, f"no NIC matches the PXE rules {list(rules)} (NICs: {ids})")
