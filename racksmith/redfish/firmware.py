"""Firmware inventory: every ``UpdateService/FirmwareInventory`` member, keyed by a stable
component identity, and a version order to compare them. Pure functions, no I/O.

Why a component identity and not the ``Id``: a baseline names components, and the ``Id`` is
not stable everywhere (all shapes below are in the captures of ``racksmith/lab/data/redfish``):

- **Dell** embeds the version in the Id (``Installed-159-1.8.2__BIOS.Setup.1-1``): the
  component is the FQDD after ``__`` (``BIOS.Setup.1-1``); the prefix says which image it is
  (``Installed``/``Current`` run, ``Previous`` is the rollback image, ``Available`` is staged).
- **HPE iLO** numbers its members (``1``, ``2``, ...): the component is the ``Name`` at its
  ``Oem.Hpe.DeviceContext`` (``Power Supply Firmware @ Bay 1``).
- **Supermicro** keeps copies beside the running image (``Staging_BMC``, ``Backup_BIOS``,
  ``Golden_BMC``), **Lenovo** too (``UEFI-Pending``, ``BMC-Backup``): the component is the
  running image's name, the copy's role is recorded.
- everything else (DGX/AMI, NVIDIA OpenBMC, GIGABYTE, the HGX baseboard as seen through the host
  BMC): the ``Id`` is the component (``HGX_FW_GPU_SXM_1``, ``UEFI``, ``BMC``).

HGX baseboard items (``HGX_FW_*``, ``HGX_InfoROM_*``, ``HGX_PCIeSwitchConfig_*``) get a kind
(GPU VBIOS, NVSwitch, PCIe retimer and switch, FPGA, HMC, ERoT, ...) so a report can group them
and the fleet rule can find them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

Doc = Mapping[str, Any]

_DELL_ID = re.compile(r"^(Installed|Current|Previous|Available)-([^-]*)-(.*?)__(.+)$")
_DELL_ROLES = {
    "Installed": "active",
    "Current": "active",
    "Previous": "rollback",
    "Available": "staged",
}
# Supermicro prefixes and Lenovo suffixes of image copies (captures: supermicro-hgx-h100,
# lenovo-sr670v2)
_PREFIX_ROLES = {"Staging_": "staged", "Backup_": "backup", "Golden_": "backup"}
_SUFFIX_ROLES = {"-Pending": "staged", "-Backup": "backup"}
_ABSENT_VERSIONS = {"", "not present", "n/a", "na", "none", "-*", "unknown"}

#: HGX component kinds by Id pattern, first match wins (ids from the DGX H100, Supermicro HGX,
#: GH200 and GB200 captures).
HGX_KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), k)
    for p, k in (
        (r"^HGX_FW_GPU_", "gpu-vbios"),
        (r"^HGX_InfoROM_GPU_", "gpu-inforom"),
        (r"^HGX_FW_NVSwitch_", "nvswitch"),
        (r"^HGX_InfoROM_NVSwitch_", "nvswitch-inforom"),
        (r"^HGX_FW_PCIeRetimer_", "pcie-retimer"),
        (r"^HGX_(FW_PCIeSwitch|PCIeSwitchConfig)_", "pcie-switch"),
        (r"^HGX_FW_FPGA_", "fpga"),
        (r"^HGX_FW_BMC_", "hmc"),
        (r"^HGX_FW_ERoT_", "erot"),
        (r"^HGX_FW_CPLD_", "cpld"),
        (r"^HGX_FW_CPU_", "cpu"),
        (r"^HGX_", "hgx"),
    )
)


@dataclass(frozen=True)
class FirmwareItem:
    """One inventory member. ``component`` is the stable identity a baseline names; ``role``
    says which image of it this is: ``active`` (running), ``staged`` (applies at the next reset
    or activation), ``backup`` or ``rollback``."""

    component: str
    id: str
    uri: str
    name: str | None
    version: str | None
    role: str
    kind: str | None
    hgx: bool
    updateable: bool | None
    software_id: str | None
    manufacturer: str | None
    release_date: str | None
    lowest_supported_version: str | None
    state: str | None  # Status.State (Enabled, Disabled, StandbySpare, ...)

    def public(self) -> dict[str, Any]:
        return asdict(self)


def _text(doc: Doc, key: str) -> str | None:
    value = doc.get(key)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _version(doc: Doc) -> str | None:
    value = _text(doc, "Version")
    return None if value is None or value.lower() in _ABSENT_VERSIONS else value


def identity(doc: Doc) -> tuple[str, str]:
    """(component, role) of one inventory member; see the module docstring for the rules."""
    fid = _text(doc, "Id") or str(doc.get("@odata.id") or "").rstrip("/").rsplit("/", 1)[-1]
    dell = _DELL_ID.match(fid)
    if dell:
        return dell.group(4), _DELL_ROLES[dell.group(1)]
    oem = doc.get("Oem")
    hpe = oem.get("Hpe") if isinstance(oem, Mapping) else None
    if isinstance(hpe, Mapping) and _text(doc, "Name"):
        context = _text(hpe, "DeviceContext")
        name = _text(doc, "Name") or fid
        return (f"{name} @ {context}" if context else name), "active"
    for prefix, role in _PREFIX_ROLES.items():
        if fid.startswith(prefix) and len(fid) > len(prefix):
            return fid[len(prefix) :], role
    for suffix, role in _SUFFIX_ROLES.items():
        if fid.endswith(suffix) and len(fid) > len(suffix):
            return fid[: -len(suffix)], role
    return fid, "active"


def hgx_kind(component: str) -> str | None:
    for pattern, kind in HGX_KINDS:
        if pattern.match(component):
            return kind
    return None


def parse_item(doc: Doc) -> FirmwareItem:
    if not isinstance(doc, Mapping):
        raise ValueError("a firmware inventory member is not a JSON object")
    component, role = identity(doc)
    updateable = doc.get("Updateable")
    status = doc.get("Status")
    kind = hgx_kind(component)
    return FirmwareItem(
        component=component,
        id=_text(doc, "Id") or component,
        uri=str(doc.get("@odata.id") or ""),
        name=_text(doc, "Name"),
        version=_version(doc),
        role=role,
        kind=kind,
        hgx=kind is not None,
        updateable=updateable if isinstance(updateable, bool) else None,
        software_id=_text(doc, "SoftwareId"),
        manufacturer=_text(doc, "Manufacturer"),
        release_date=_text(doc, "ReleaseDate"),
        lowest_supported_version=_text(doc, "LowestSupportedVersion"),
        state=_text(status, "State") if isinstance(status, Mapping) else None,
    )


def inventory(items: Iterable[Doc]) -> list[FirmwareItem]:
    """Every member once (by ``@odata.id``), sorted by component then role."""
    seen: set[str] = set()
    out: list[FirmwareItem] = []
    for doc in items:
        item = parse_item(doc)
        key = item.uri or f"{item.component}/{item.role}/{item.id}"
        if key in seen:
            continue
        seen.add(key)
        out.append(item)
    return sorted(out, key=lambda i: (i.component, i.role, i.id))


def active(items: Iterable[FirmwareItem]) -> dict[str, FirmwareItem]:
    """The running image per component (the first when a BMC lists it twice, as Dell does with
    ``Installed-`` and ``Current-``)."""
    out: dict[str, FirmwareItem] = {}
    for item in items:
        if item.role == "active":
            out.setdefault(item.component, item)
    return out


def staged(items: Iterable[FirmwareItem]) -> dict[str, FirmwareItem]:
    """Images waiting to become active (Dell ``Available-``, Supermicro ``Staging_``, Lenovo
    ``-Pending``), only those with a version."""
    out: dict[str, FirmwareItem] = {}
    for item in items:
        if item.role == "staged" and item.version:
            out.setdefault(item.component, item)
    return out


_TOKEN = re.compile(r"\d+|[A-Za-z]+")
_FIELD_SPLIT = re.compile(r"[^0-9A-Za-z]+")
_HEX_FIELD = re.compile(r"[0-9A-Fa-f]+")


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """An order for vendor version strings (``96.00.89.00.01``, ``96.00.A5.00.1A``, ``2.7.20``,
    ``HGX-22.10-1-rc57``, ``00.02.0150.0000_n00``, ``A47 v2.58 (05/19/2022)``).

    Fields between separators that are all hex digits compare as hexadecimal numbers: NVIDIA
    VBIOS versions count in hex (``96.00.A5`` is newer than ``96.00.89``), and reading a decimal
    field as hex keeps its order. Other fields split into numbers and words; a word sorts
    before a number at the same position, so ``1.0rc1`` < ``1.0.1``."""
    key: list[tuple[int, int | str]] = []
    for part in _FIELD_SPLIT.split(version):
        if not part:
            continue
        if _HEX_FIELD.fullmatch(part):
            key.append((1, int(part, 16)))
            continue
        key.extend(
            (1, int(tok)) if tok.isdigit() else (0, tok.lower()) for tok in _TOKEN.findall(part)
        )
    return tuple(key)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version ``a`` is older than, equal to or newer than ``b``."""
    ka, kb = version_key(a), version_key(b)
    return (ka > kb) - (ka < kb)
