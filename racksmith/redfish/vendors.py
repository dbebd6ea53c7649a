"""Vendor profiles: what differs between Dell, Supermicro, Lenovo, HPE and NVIDIA DGX BMCs.

Redfish fixes the shape of the documents, not where a vendor puts a fact. Every rule here comes
from a real capture in ``racksmith/lab/data/redfish/`` (provenance in its README) and is tested
against it (``tests/unit/redfish/test_redfish_vendors*.py``):

- **asset identity.** Dell's ``SKU`` is the service tag; Supermicro's ``SKU`` is a board id
  (``0x1D1415D9``), Lenovo's the machine type-model (``7Z23CTO1WW``), HPE's the product number
  (``P38411-B21``) and NVIDIA's the DGX part number (``920-24387-2540-000``): on those the
  asset identity is ``SerialNumber``.
- **where GPUs live.** Dell and Lenovo list them as ``Processors`` (Lenovo without ``Model``:
  the part number's first four hex digits are the PCI device id); Supermicro HGX lists them only
  as ``PCIeDevices`` of a chassis; a DGX splits into the host system and an
  ``HGX_Baseboard_0`` system whose ``Processors`` are the GPUs.
- **which NIC PXE-boots.** Dell names its ports (``NIC.Integrated.1-1-1``); the others number
  them, so the profile asks the firmware: the first PXE entry of ``Boot.BootOrder`` whose boot
  option carries a MAC (``boot:pxe``), then a NIC with link, then (where the capture shows the
  on-board port is first) the first NIC.
- **boot-once quirks.** Supermicro and AMI-based DGX BMCs want ``BootSourceOverrideMode`` sent
  together with the target; AMI takes the PATCH on the system's ``/SD`` settings object with the
  document's ETag in ``If-Match``.

A profile is chosen from the system's ``Manufacturer`` first (a DGX runs an AMI BMC, so the
service root alone would say "AMI"), then from the service root's ``Vendor`` and ``Oem`` keys;
an inventory may name one explicitly. This module is pure data and pure functions on
already-fetched documents (no I/O), and imports nothing from the rest of the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Doc = Mapping[str, Any]

#: GPU sources a profile may list, tried in its order; the first that yields GPUs wins.
GPU_SOURCES = ("processors", "baseboard", "pcie", "hpe-devices")


class VendorError(ValueError):
    """An unknown profile name (configuration error, names the choices)."""


@dataclass(frozen=True)
class BootQuirks:
    """How this vendor's BMC wants a one-time boot override written.

    ``send_mode``: also send ``BootSourceOverrideMode`` with this value (a Supermicro or AMI BMC
    rejects or ignores a target without it); ``settings_path``: PATCH this path under the system
    instead of the system itself (AMI's pending-settings object ``SD``); ``if_match``: the PATCH
    needs the ETag of the document it changes.
    """

    send_mode: str | None = None
    settings_path: str | None = None
    if_match: bool = False

    def payload(self, target: str, enabled: str = "Once") -> dict[str, Any]:
        boot: dict[str, Any] = {
            "BootSourceOverrideEnabled": enabled,
            "BootSourceOverrideTarget": target,
        }
        if self.send_mode:
            boot["BootSourceOverrideMode"] = self.send_mode
        return {"Boot": boot}

    def patch_path(self, system_uri: str) -> str:
        if not self.settings_path:
            return system_uri
        return f"{system_uri.rstrip('/')}/{self.settings_path}"


@dataclass(frozen=True)
class VendorProfile:
    """What discovery reads from where on one vendor family's BMCs (docs/redfish.md has a table)."""

    name: str
    label: str
    manufacturers: tuple[str, ...]  # lower-case prefixes of ComputerSystem.Manufacturer
    root_markers: tuple[str, ...]  # service root Vendor values or Oem keys
    pxe_rules: tuple[str, ...]
    service_tag_fields: tuple[str, ...]  # dotted paths in the system, first non-empty wins
    gpu_sources: tuple[str, ...]
    dell_video: bool = False  # GPU firmware from Oem/Dell/DellVideo when the processor lacks it
    boot: BootQuirks = BootQuirks()
    notes: str = ""
    #: when the system names no model or serial, take Manufacturer, Model and SerialNumber from
    #: the chassis linked to it (NVIDIA OpenBMC: GH200, GB200)
    identity_from_chassis: bool = False
    #: when the system has no ``BiosVersion``: the firmware inventory member that is the BIOS
    bios_inventory_id: str | None = None
    #: when the system lists no NICs: the MACs its network boot options name (NVIDIA OpenBMC)
    nics_from_boot_options: bool = False


DELL_PXE_RULES = ("id:NIC.Integrated.1-1-1", "id:NIC.Embedded.1-1-1", "link:up")
_NUMBERED_PXE_RULES = ("boot:pxe", "link:up", "first")

PROFILES: dict[str, VendorProfile] = {
    p.name: p
    for p in (
        VendorProfile(
            name="dell",
            label="Dell iDRAC",
            manufacturers=("dell",),
            root_markers=("Dell",),
            pxe_rules=DELL_PXE_RULES,
            service_tag_fields=("SKU", "Oem.Dell.DellSystem.ChassisServiceTag"),
            gpu_sources=("processors",),
            dell_video=True,
            notes="a 400 'depends on other attribute(s)' to a boot PATCH may have applied it",
        ),
        VendorProfile(
            name="supermicro",
            label="Supermicro BMC",
            manufacturers=("supermicro",),
            root_markers=("Supermicro",),
            pxe_rules=_NUMBERED_PXE_RULES,
            service_tag_fields=("SerialNumber",),
            gpu_sources=("processors", "pcie"),
            boot=BootQuirks(send_mode="UEFI"),
        ),
        VendorProfile(
            name="lenovo",
            label="Lenovo XClarity Controller",
            manufacturers=("lenovo",),
            root_markers=("Lenovo",),
            pxe_rules=_NUMBERED_PXE_RULES,
            service_tag_fields=("SerialNumber",),
            gpu_sources=("processors", "pcie"),
            notes="boot options carry no MAC ('Network'); PXE falls to link, then the first port",
        ),
        VendorProfile(
            name="hpe",
            label="HPE iLO",
            manufacturers=("hpe", "hp"),
            root_markers=("HPE", "Hpe"),
            pxe_rules=_NUMBERED_PXE_RULES,
            service_tag_fields=("SerialNumber",),
            # XL675d: the GPUs are only in the OEM Chassis/1/Devices and Systems/1/PCIDevices
            gpu_sources=("processors", "pcie", "hpe-devices"),
        ),
        VendorProfile(
            name="nvidia-dgx",
            label="NVIDIA DGX (AMI BMC with HGX baseboard)",
            manufacturers=("nvidia",),
            root_markers=("Nvidia",),
            pxe_rules=_NUMBERED_PXE_RULES,
            service_tag_fields=("SerialNumber",),
            gpu_sources=("processors", "baseboard", "pcie"),
            boot=BootQuirks(send_mode="UEFI", settings_path="SD", if_match=True),
        ),
        VendorProfile(
            name="nvidia-openbmc",
            label="NVIDIA OpenBMC (GH200, GB200 boards)",
            manufacturers=(),  # the host system names no manufacturer: the service root decides
            root_markers=("NVIDIA",),
            pxe_rules=("boot:pxe", "link:up"),
            service_tag_fields=("SerialNumber",),
            gpu_sources=("baseboard", "processors"),
            identity_from_chassis=True,
            bios_inventory_id="UEFI",
            nics_from_boot_options=True,
            notes="identity on the chassis, BIOS in the firmware inventory, MACs in BootOptions",
        ),
        VendorProfile(
            name="generic",
            label="any other Redfish BMC",
            manufacturers=(),
            root_markers=(),
            # no "first": an unknown vendor's NIC order means nothing
            pxe_rules=("boot:pxe", "link:up"),
            service_tag_fields=("SerialNumber",),
            gpu_sources=GPU_SOURCES,
        ),
    )
}

AUTO = "auto"


def profile_named(name: str) -> VendorProfile:
    """The profile an inventory or ``--vendor`` names (``auto`` is not a profile)."""
    try:
        return PROFILES[name]
    except KeyError:
        raise VendorError(
            f"unknown vendor profile {name!r}; choose from {AUTO}, {', '.join(PROFILES)}"
        ) from None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def choose(
    system: Doc, service_root: Doc | None = None, override: str | None = None
) -> VendorProfile:
    """The profile for a host: ``override`` (unless ``auto``), else the system's Manufacturer,
    else the service root's ``Vendor`` or an ``Oem`` key, else ``generic``."""
    if override and override != AUTO:
        return profile_named(override)
    manufacturer = _text(system.get("Manufacturer")).lower()
    if manufacturer:
        for profile in PROFILES.values():
            if any(manufacturer.split()[0].startswith(m) for m in profile.manufacturers):
                return profile
    if service_root:
        oem = service_root.get("Oem")
        markers = {_text(service_root.get("Vendor"))}
        markers |= set(oem) if isinstance(oem, Mapping) else set()
        for profile in PROFILES.values():
            if markers & set(profile.root_markers):
                return profile
    return PROFILES["generic"]


def manufacturer_decides(system: Doc) -> bool:
    """True when :func:`choose` needs no service root for this system."""
    manufacturer = _text(system.get("Manufacturer")).lower()
    return bool(manufacturer) and any(
        manufacturer.split()[0].startswith(m) for p in PROFILES.values() for m in p.manufacturers
    )


def dotted(doc: Doc, path: str) -> Any:
    current: Any = doc
    for key in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def service_tag(system: Doc, fields: Sequence[str]) -> tuple[str | None, str | None]:
    """(value, field) of the first non-empty field that names the asset, or (None, None)."""
    for path in fields:
        value = dotted(system, path)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip(), path
    return None, None


# -- systems behind one BMC --------------------------------------------------------------------


_BOOT_KEYS = ("BootOrder", "BootOptions", "BootSourceOverrideTarget", "BootSourceOverrideEnabled")


def is_host(system: Doc) -> bool:
    """A system that boots (a boot order, boot options or a boot override) or has host NICs.

    A DGX's ``HGX_Baseboard_0`` has neither; a GH200's has a ``Boot`` object that holds only
    the allowable values of an override it does not have: either way it is a part of the host
    (GPUs, their memory), not a server of its own."""
    boot = system.get("Boot")
    nics = system.get("EthernetInterfaces")
    boots = isinstance(boot, Mapping) and any(k in boot for k in _BOOT_KEYS)
    return boots or (isinstance(nics, Mapping) and isinstance(nics.get("@odata.id"), str))


@dataclass(frozen=True)
class SystemGroup:
    """One host to report, with the baseboard systems whose GPUs belong to it."""

    host: Doc
    baseboards: tuple[Doc, ...]
    notes: tuple[str, ...] = ()


def partition_systems(systems: Sequence[Doc]) -> list[SystemGroup]:
    """Hosts and their baseboards: one host takes every baseboard (DGX); several hosts are the
    nodes of a multi-node chassis, one result each. With several hosts a baseboard cannot be
    attached by any rule the captures support, so it is left out with a note, never guessed."""
    hosts = [s for s in systems if is_host(s)]
    boards = [s for s in systems if not is_host(s)]
    if not hosts:
        return []
    if len(hosts) == 1:
        return [SystemGroup(hosts[0], tuple(boards))]
    note = ()
    if boards:
        ids = ", ".join(str(b.get("@odata.id")) for b in boards)
        note = (f"{len(hosts)} hosts share this BMC; baseboard system(s) {ids} not attached",)
    return [SystemGroup(h, (), note) for h in hosts]


# -- GPU identity ------------------------------------------------------------------------------

#: NVIDIA PCI device ids -> the name ``nvidia-smi`` prints. Only ids confirmed by a capture in
#: racksmith/lab/data/redfish or by a real host's ``nvidia-smi -q`` (shared fixtures): a name
#: that is guessed would make the triage compare a guess with the site's expectation.
NVIDIA_DEVICE_IDS: dict[int, str] = {
    0x2330: "NVIDIA H100 80GB HBM3",  # supermicro-hgx-h100, nvidia-dgx-h100: 2330-885-A1
    0x2331: "NVIDIA H100 PCIe",  # dell-idrac9: PCIeFunction DeviceId 0x2331
    0x2335: "NVIDIA H200",  # h200x2 host: nvidia-smi -q, GPU part number 2335-895-A1
    0x26B5: "NVIDIA L40",  # lenovo-sr670v2: PCIe device "NVIDIA L40", part 26B5-895-A1
}
NVIDIA_VENDOR_ID = 0x10DE
_MISSING = {"", "n/a", "na", "none", "null", "unknown", "not available", "0"}
_PART_DEVICE = re.compile(r"^([0-9A-Fa-f]{4})-[0-9A-Za-z]{3}-[0-9A-Za-z]{2}\b")
_OEM_MODEL_KEYS = ("GPUModel", "MarketingName", "ProductName")


def _present(value: Any) -> str | None:
    text = _text(value)
    return text if text and text.lower() not in _MISSING else None


def _hex(value: Any) -> int | None:
    text = _text(value).lower()
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def device_id_from_part(part_number: Any) -> int | None:
    """NVIDIA GPU part numbers start with the PCI device id (``2330-885-A1``: 0x2330)."""
    match = _PART_DEVICE.match(_text(part_number))
    return int(match.group(1), 16) if match else None


def _oem_values(doc: Doc, keys: Iterable[str]) -> Iterable[str]:
    """String values of ``keys`` anywhere in the document's ``Oem`` block (two levels deep)."""
    oem = doc.get("Oem")
    if not isinstance(oem, Mapping):
        return
    stack: list[Any] = list(oem.values())
    depth = 0
    while stack and depth < 3:
        nxt: list[Any] = []
        for node in stack:
            if isinstance(node, Mapping):
                for key in keys:
                    value = _present(node.get(key))
                    if value:
                        yield value
                nxt.extend(v for v in node.values() if isinstance(v, Mapping))
        stack, depth = nxt, depth + 1


def is_nvidia(*docs: Doc) -> bool:
    for doc in docs:
        if "nvidia" in _text(doc.get("Manufacturer")).lower():
            return True
        if any("nvidia" in v.lower() for v in _oem_values(doc, ("GPUVendor",))):
            return True
        if _hex(dotted(doc, "ProcessorId.VendorId")) == NVIDIA_VENDOR_ID:
            return True
        if _hex(doc.get("VendorId")) == NVIDIA_VENDOR_ID:
            return True
        if device_id_from_part(doc.get("PartNumber")) in NVIDIA_DEVICE_IDS:
            return True
    return False


def canonical_gpu_model(model: str, nvidia: bool) -> str:
    """The name as ``nvidia-smi`` prints it: Supermicro and DGX BMCs say ``H100 80GB HBM3``
    where Dell and the driver say ``NVIDIA H100 80GB HBM3``; comparing like with like needs one."""
    model = " ".join(model.split())
    if nvidia and not model.lower().startswith("nvidia"):
        return f"NVIDIA {model}"
    return model


@dataclass(frozen=True)
class GpuIdentity:
    model: str | None
    source: str | None  # Model, PartNumber, PCIe device id, Oem; None when nothing said


def gpu_identity(doc: Doc, functions: Sequence[Doc] = (), oem: Sequence[Doc] = ()) -> GpuIdentity:
    """A GPU's model from ``Model``, ``PartNumber``, PCIe vendor/device ids (``functions``: its
    PCIeFunction documents) or OEM data (its own ``Oem`` block and ``oem`` documents such as
    Dell's DellVideo entry), in that order; the source is recorded."""
    nvidia = is_nvidia(doc, *functions, *oem)
    model = _present(doc.get("Model"))
    if model:
        return GpuIdentity(canonical_gpu_model(model, nvidia), "Model")
    device = device_id_from_part(doc.get("PartNumber"))
    if device in NVIDIA_DEVICE_IDS:
        return GpuIdentity(NVIDIA_DEVICE_IDS[device], "PartNumber")
    for fn in functions:
        if _hex(fn.get("VendorId")) == NVIDIA_VENDOR_ID:
            name = NVIDIA_DEVICE_IDS.get(_hex(fn.get("DeviceId")) or -1)
            if name:
                return GpuIdentity(name, "PCIe device id")
    for source in (doc, *functions, *oem):
        for value in _oem_values(source, _OEM_MODEL_KEYS):
            return GpuIdentity(canonical_gpu_model(value, nvidia), "Oem")
    return GpuIdentity(None, None)


def is_gpu_device(device: Doc) -> bool:
    """A PCIeDevice that is a GPU. Redfish has no GPU device type, so: an OEM GPU extension
    (Supermicro ``SmcGPUExtensions``, ``GPUVendor``), an NVIDIA part number or name the
    device table knows, or a processor-class function inline."""
    if _text(device.get("DeviceType")).lower() == "gpu":
        return True
    oem = device.get("Oem")
    if isinstance(oem, Mapping):
        for block in oem.values():
            if isinstance(block, Mapping) and (
                "gpu" in _text(block.get("@odata.type")).lower() or _present(block.get("GPUVendor"))
            ):
                return True
    if device_id_from_part(device.get("PartNumber")) in NVIDIA_DEVICE_IDS:
        return True
    names = {_text(device.get(k)).lower() for k in ("Name", "Model")}
    return any(n.lower() in names for n in NVIDIA_DEVICE_IDS.values())
