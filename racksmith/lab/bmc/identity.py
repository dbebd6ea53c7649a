"""Give each emulated iDRAC its own identity by rewriting the captured one in served text.

The capture is one real R750 (service tag ``F54P1G3``, its serial, UUID, MACs, GPU serial). Each
emulated BMC replaces those strings, wherever they occur (``SKU``, ``HostName idrac-F54P1G3``,
firmware names that embed a MAC, ...), by the values ``racksmith.lab.spec.Server`` derives for
it, so the BMC reports the same PXE MAC that the lab host's eth0 carries and MAAS enlists.
Identity is derived in spec.py only; this module just maps captured values to those
(``CAPTURED_NIC_PORTS``: captured NIC MAC -> ``Server.mac(port)``; port 1 is the PXE NIC and
port 0 the iDRAC itself).
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

from racksmith.lab.bmc.tree import Variant
from racksmith.lab.spec import Server

CAPTURED_TAG = "F54P1G3"
CAPTURED_SERIAL = "CNIVC0014M0388"
CAPTURED_UUID = "4c4c4544-0035-3410-8050-c6c04f314733"
CAPTURED_PLATFORM_GUID = "3347314f-c0c6-5080-3410-00354c4c4544"
CAPTURED_EXPRESS_CODE = "32961952659"  # the service tag read as a base-36 number
CAPTURED_BMC_MAC = "b0:7b:25:d6:51:82"
CAPTURED_NIC_PORTS: tuple[tuple[str, int], ...] = (
    ("E4:3D:1A:13:27:F0", 1),  # NIC.Integrated.1-1-1: the PXE port
    ("E4:3D:1A:13:27:F1", 2),  # NIC.Integrated.1-2-1
    ("70:B5:E8:F0:52:DC", 3),  # NIC.Embedded.1-1-1
    ("70:B5:E8:F0:52:DD", 4),  # NIC.Embedded.2-1-1
    ("B8:3F:D2:90:97:C4", 5),  # NIC.Slot.5-1 (BlueField-2)
    ("B8:3F:D2:A4:1B:D2", 6),  # InfiniBand.Slot.7-1 (ConnectX-6)
    ("B8:3F:D2:A4:1B:D3", 7),  # InfiniBand.Slot.7-2
)


@dataclass(frozen=True)
class Identity:
    """Ordered (captured, served) text pairs for one BMC."""

    pairs: tuple[tuple[str, str], ...]

    def apply(self, text: str) -> str:
        for old, new in self.pairs:
            if old in text:
                text = text.replace(old, new)
        return text


def _both_cases(old: str, new: str) -> list[tuple[str, str]]:
    return [(old.upper(), new.upper()), (old.lower(), new.lower())]


def _mac_spellings(old: str, new: str) -> list[tuple[str, str]]:
    """A MAC as captures spell it: colons in either case, and bare hex (UEFI device paths and
    boot option names: ``MAC(946DAE91FB22,0x1)``)."""
    bare_old, bare_new = old.replace(":", ""), new.replace(":", "")
    return _both_cases(old, new) + _both_cases(bare_old, bare_new)


def _for_capture(server: Server, variant: Variant) -> Identity:
    """A vendor capture (racksmith.lab.bmc.captures): ``SerialNumber`` is the asset identity
    there, so it becomes the lab server's service tag; MACs in order, the PXE NIC as port 1."""
    pairs: list[tuple[str, str]] = []
    serial = getattr(variant, "captured_serial", "")
    if serial:
        pairs.append((serial, server.service_tag))
    captured_uuid = getattr(variant, "captured_uuid", "")
    if captured_uuid:
        pairs += _both_cases(captured_uuid, server.uuid)
    for port, mac in enumerate(getattr(variant, "captured_macs", ()), 1):
        pairs += _mac_spellings(mac, server.mac(port))
    for slot, text in variant.gpu_serial_map().items():
        pairs.append((text, server.gpu_serial(slot)))
    return Identity(tuple(pairs))


def for_server(server: Server, variant: Variant) -> Identity:
    if variant.vendor != "dell":
        return _for_capture(server, variant)
    tag = server.service_tag
    new_uuid = uuidlib.UUID(server.uuid)
    pairs: list[tuple[str, str]] = [
        (CAPTURED_TAG, tag),
        (CAPTURED_EXPRESS_CODE, str(int(tag, 36))),
        (CAPTURED_SERIAL, server.serial),
        (CAPTURED_UUID, str(new_uuid)),
        (CAPTURED_UUID.upper(), str(new_uuid).upper()),
        (CAPTURED_PLATFORM_GUID, str(uuidlib.UUID(bytes=new_uuid.bytes[::-1]))),
    ]
    pairs += _both_cases(CAPTURED_BMC_MAC, server.mac(0))
    for captured, port in CAPTURED_NIC_PORTS:
        pairs += _both_cases(captured, server.mac(port))
    for slot, text in variant.gpu_serial_map().items():
        pairs.append((text, server.gpu_serial(slot)))
    for slot, text in variant.gpu_guid_map().items():
        pairs.append((text, f"{int(server.gpu_serial(slot)):032x}"[-31:]))
    if variant.model_text:
        pairs.append(variant.model_text)
    return Identity(tuple(pairs))
