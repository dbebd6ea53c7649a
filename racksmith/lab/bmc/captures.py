"""The other vendors' real captures, served as rack models (``model:`` in the rack file).

Each model is one capture from ``racksmith/lab/data/redfish/`` (provenance in its README), served
unchanged except for identity: each emulated BMC rewrites the captured serial, UUID, host NIC
MACs (in every spelling the capture uses: ``94:6d:ae:91:fb:22``, ``BE:3A:...``, the boot
option's ``946DAE91FB22``) and GPU serials to the values ``racksmith.lab.spec.Server`` derives,
so the BMC reports the PXE MAC the lab host carries. On these vendors the asset identity is
``SerialNumber`` (see ``racksmith.redfish.vendors``), so the served serial is the lab server's
service tag, and discovery names the host as it names a Dell one.

- ``supermicro-hgx-h100``: SYS-821GE-TNHR, BMC 11.01.01; 8 x H100 SXM as
  ``Chassis/1/PCIeDevices/GPU1..8``; PXE NIC: the first PXE boot option (``94:6d:ae:91:fb:22``).
- ``dgx-h100``: DGXH100, BMC 23.11.20; 8 x H100 SXM as ``Systems/HGX_Baseboard_0/Processors``;
  PXE NIC: the first PXE boot option, also the one with link (``a0:88:c2:82:6e:52``). Reset
  types only in ``Systems/DGX/ResetActionInfo`` (``On``, ``ForceOff``, ``ForceRestart``,
  ``GracefulShutdown``). The boot override is written where the capture points: the system's
  ``@Redfish.Settings`` object ``Systems/DGX/SD`` (it alone lists the allowable targets and
  modes, ``UEFI`` only), as a *pending* setting the firmware applies at the next boot; the
  PATCH must carry the object's ETag in ``If-Match``, as NVIDIA's DGX H100 user guide
  ("Redfish APIs support") and NVIDIA/libredfish (``nvidia_viking``: GET ``SD``, PATCH it with
  ``If-Match`` set to its ``@odata.etag``) do. The emulation answers 428 without ``If-Match``
  and 412 for a stale ETag (the standard Redfish answers); what the DGX answers to a boot PATCH
  on ``Systems/DGX`` itself is not shown anywhere, so the emulation refuses it (405) rather than
  invent a success.
- ``lenovo-sr670v2-l40``: ThinkSystem SR670 V2, XCC TGBT42S; 8 x L40 as ``Processors`` without
  ``Model``; PXE NIC: the first port ``NIC1`` (its boot options carry no MAC).
- ``hpe-dl385g10p``: ProLiant DL385 Gen10 Plus v2, iLO 5 2.72; no GPU in the capture; PXE NIC:
  the first PXE boot option (``b8:3f:d2:d7:f7:4a``).

Nothing is derived: no public capture of an HPE GPU server was found, so the HPE model has no
GPUs (as captured), and the lab's expectation for it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from racksmith.lab.bmc import tree
from racksmith.lab.bmc.tree import DATA_DIR, ROOT, Layout, MockupStore, Upstreams, Variant


@dataclass(frozen=True)
class Capture:
    """One vendor capture served as a model."""

    model: str
    directory: str  # under racksmith/lab/data/redfish
    vendor: str  # racksmith.redfish.vendors profile name
    layout: Layout
    pxe_mac: str  # the NIC the vendor profile picks: the lab host's eth0 (port 1)
    gpus: tuple[str, ...]  # URIs of the GPU documents, slot 1 first (serials are rewritten)

    @property
    def root(self) -> Path:
        return DATA_DIR / self.directory / "redfish" / "v1"


def _layout(system: str, chassis: str, manager: str, boot_settings: str | None = None) -> Layout:
    return Layout(
        f"{ROOT}/Systems/{system}",
        f"{ROOT}/Chassis/{chassis}",
        f"{ROOT}/Managers/{manager}",
        f"{ROOT}/Systems/{system}/{boot_settings}" if boot_settings else None,
    )


CAPTURES: dict[str, Capture] = {
    c.model: c
    for c in (
        Capture(
            "supermicro-hgx-h100",
            "supermicro-hgx-h100",
            "supermicro",
            _layout("1", "1", "1"),
            "94:6d:ae:91:fb:22",
            tuple(f"{ROOT}/Chassis/1/PCIeDevices/GPU{n}" for n in range(1, 9)),
        ),
        Capture(
            "dgx-h100",
            "nvidia-dgx-h100",
            "nvidia-dgx",
            # boot override through the settings object, with If-Match: see the module docstring
            _layout("DGX", "DGX", "BMC", boot_settings="SD"),
            "a0:88:c2:82:6e:52",
            tuple(f"{ROOT}/Systems/HGX_Baseboard_0/Processors/GPU_SXM_{n}" for n in range(1, 9)),
        ),
        Capture(
            "lenovo-sr670v2-l40",
            "lenovo-sr670v2",
            "lenovo",
            _layout("1", "1", "1"),
            "00:62:0b:4c:28:4e",
            tuple(f"{ROOT}/Systems/1/Processors/GPU{n}" for n in range(1, 9)),
        ),
        Capture(
            "hpe-dl385g10p",
            "hpe-dl385g10p",
            "hpe",
            _layout("1", "1", "1"),
            "b8:3f:d2:d7:f7:4a",
            (),
        ),
    )
}
if tuple(CAPTURES) != tree.VENDOR_MODELS:  # the CLI's choices come from tree.MODELS
    raise ImportError("racksmith.lab.bmc: captures.CAPTURES and tree.VENDOR_MODELS differ")


def _mac(value: Any) -> str | None:
    text = str(value or "").strip().lower().replace("-", ":")
    return text if len(text) == 17 and text.count(":") == 5 else None


class CaptureVariant(Variant):
    """A vendor capture as it is; only identity (identity.py) changes per BMC."""

    def __init__(self, store: MockupStore, capture: Capture) -> None:
        super().__init__(store)
        self.capture = capture
        self.name = capture.model
        self.vendor = capture.vendor
        self.layout = capture.layout
        self.gpu_ids = capture.gpus
        system = store.document(capture.layout.system) or {}
        self.captured_serial = str(system.get("SerialNumber") or "")
        self.captured_uuid = str(system.get("UUID") or "")
        self.captured_macs = self._host_macs(system)
        if capture.pxe_mac not in self.captured_macs:
            raise ValueError(f"{capture.model}: PXE MAC {capture.pxe_mac} is not a host NIC")
        self._gpu_serials = {
            slot: str((store.document(uri) or {}).get("SerialNumber") or "")
            for slot, uri in enumerate(capture.gpus, 1)
        }

    def _host_macs(self, system: dict[str, Any]) -> tuple[str, ...]:
        """Host NIC MACs (not the BMC's host interface), the PXE one first: port 1, 2, ..."""
        link = (system.get("EthernetInterfaces") or {}).get("@odata.id")
        collection = self.store.document(link) if link else None
        macs: list[str] = []
        for member in (collection or {}).get("Members", []):
            doc = self.store.document(member.get("@odata.id", "")) or {}
            if (doc.get("Links") or {}).get("HostInterface"):
                continue
            for key in ("PermanentMACAddress", "MACAddress"):
                mac = _mac(doc.get(key))
                if mac and mac not in macs:
                    macs.append(mac)
        pxe = self.capture.pxe_mac
        return (pxe, *(m for m in macs if m != pxe)) if pxe in macs else tuple(macs)

    def gpu_serial_map(self) -> dict[int, str]:
        return {slot: serial for slot, serial in self._gpu_serials.items() if serial}

    def gpu_guid_map(self) -> dict[int, str]:
        return {}

    def gpu_paths(self, gpu_id: str) -> tuple[str, ...]:
        return (gpu_id,)  # the capture's GPU URIs are the ids here


def variant(model: str, upstreams: Upstreams) -> Variant:
    """The served view of any model: Dell's over the iDRAC capture, the others' captures."""
    capture = CAPTURES.get(model)
    if capture is None:
        return tree.variant(model, upstreams.store(tree.CAPTURE))
    return CaptureVariant(upstreams.store(capture.root), capture)
