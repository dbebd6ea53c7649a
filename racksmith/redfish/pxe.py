"""Which NIC PXE-boots: the rules, the choice, and the MACs the firmware's boot options name.

Pure functions on already-parsed NICs and fetched boot-option documents (no I/O). Rules are
tried in order; the first that matches a NIC chooses it, and the rule is recorded next to the
MAC so a report says *why* that port was chosen:

- ``id:<NIC id>``: the NIC with exactly this id (Dell names ports: ``NIC.Integrated.1-1-1``);
- ``slot:<n>``: the first port of Dell's ``NIC.Slot.<n>-*``;
- ``prefix:<id prefix>``: the first NIC whose id starts with the prefix;
- ``link:up``: the first NIC whose ``LinkStatus`` is ``LinkUp``;
- ``boot:pxe``: the NIC of the first enabled PXE entry of ``Boot.BootOrder`` (what the firmware
  itself will PXE-boot from first);
- ``first``: the first NIC by id.

There is no global default list: unset rules (``None``) mean "the vendor profile's rules"
(:mod:`racksmith.redfish.vendors`), because a port name like ``NIC.Integrated.1-1-1`` means
something on a Dell and nothing elsewhere. A list the user writes is used as written, even when
it equals a profile's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from racksmith.macs import normalize_mac

#: Every rule kind, as the option docs list them.
RULE_KINDS = ("id:<NIC id>", "slot:<n>", "prefix:<id prefix>", "link:up", "boot:pxe", "first")


class NicLike(Protocol):
    id: str
    mac: str
    link: str | None


@dataclass(frozen=True)
class PxeChoice:
    mac: str
    nic_id: str
    rule: str


def validate_pxe_rules(rules: Sequence[str]) -> list[str]:
    """Check rule syntax early; a bad rule names itself and the kinds there are."""
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
            raise ValueError(f"PXE rule {rule!r}: use {', '.join(RULE_KINDS)}")
    return out


def rules_for(configured: Sequence[str] | None, profile_rules: Sequence[str]) -> tuple[str, ...]:
    """The rules a host is judged by: the configured ones when set (even when they equal a
    profile's), else its vendor profile's."""
    if configured is None:
        return tuple(profile_rules)
    return tuple(configured)


def choose_pxe(
    nics: Sequence[NicLike], rules: Sequence[str], boot_macs: Sequence[str] = ()
) -> PxeChoice | None:
    """The PXE NIC by the first matching rule, or None (then the host is not ready to enlist).

    ``boot_macs``: MACs of the PXE boot options in boot order (:func:`pxe_boot_macs`), for the
    ``boot:pxe`` rule.
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
# the device path up to the MAC node, without firmware-volume prefixes: the port's location
_PORT_PATH = re.compile(r"(PciRoot\([^)]*\)(?:/[A-Za-z]+\([^)]*\))*?)/MAC\(")


def _text(doc: Mapping[str, Any], key: str) -> str:
    value = doc.get(key)
    return value.strip() if isinstance(value, str) else ""


def _by_reference(options: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    by_ref: dict[str, Mapping[str, Any]] = {}
    for doc in options:
        if not isinstance(doc, Mapping):
            continue
        ref = _text(doc, "BootOptionReference") or _text(doc, "Id")
        if ref:
            by_ref.setdefault(ref, doc)
    return by_ref


def option_mac(doc: Mapping[str, Any]) -> str | None:
    """The MAC a boot option names: from its UEFI device path (``.../MAC(946DAE91FB22,0x1)/...``)
    or, where the path is vendor-specific, from its display name (Supermicro's ``... - 94:6D:...``;
    NVIDIA's ``UEFI PXEv4 (MAC:F0B2B90BFC9E)``)."""
    found = _DEVICE_PATH_MAC.search(_text(doc, "UefiDevicePath")) or _NAME_MAC.search(
        _text(doc, "DisplayName")
    )
    return normalize_mac(found.group(1)) if found else None


def is_pxe_option(doc: Mapping[str, Any]) -> bool:
    """A network boot option that PXE-boots: HTTP boot entries (a ``Uri()`` node or "HTTP" in
    the name) are not PXE."""
    name = _text(doc, "DisplayName").lower()
    path = _text(doc, "UefiDevicePath")
    if "http" in name or ("Uri()" in path and "pxe" not in name):
        return False
    return "pxe" in name or "MAC(" in path


def pxe_boot_macs(boot_order: Sequence[Any], options: Iterable[Mapping[str, Any]]) -> list[str]:
    """MACs of the enabled PXE boot options, in ``Boot.BootOrder`` order, de-duplicated. A BMC
    whose options carry no MAC (Lenovo's ``Network``) gives none."""
    by_ref = _by_reference(options)
    out: list[str] = []
    for ref in boot_order:
        doc = by_ref.get(str(ref))
        if doc is None or doc.get("BootOptionEnabled") is False or not is_pxe_option(doc):
            continue
        mac = option_mac(doc)
        if mac and mac not in out:
            out.append(mac)
    return out


@dataclass(frozen=True)
class BootPort:
    """A host port known only from the firmware's boot options (NVIDIA GH200/GB200 list no
    ``EthernetInterfaces``): its MAC and where it sits (``PciRoot(0x2)/Pci(0x0,0x0)/...``)."""

    mac: str
    path: str
    usb: bool


def boot_option_ports(options: Iterable[Mapping[str, Any]]) -> list[BootPort]:
    """Every MAC the network boot options name (PXE and HTTP, IPv4 and IPv6), once each, in the
    order of the options; ``path`` is the device path up to the MAC node."""
    out: dict[str, BootPort] = {}
    for doc in options:
        if not isinstance(doc, Mapping):
            continue
        path = _text(doc, "UefiDevicePath")
        mac = normalize_mac(m.group(1)) if (m := _DEVICE_PATH_MAC.search(path)) else None
        if not mac or mac in out:
            continue
        where = _PORT_PATH.search(path)
        port = where.group(1) if where else path.split("/MAC(", 1)[0]
        out[mac] = BootPort(mac=mac, path=port, usb="/USB(" in port)
    return list(out.values())
