"""The Redfish trees the emulated iDRACs serve: the real capture, and one variant derived from it.

Reading: sushy-tools' ``sushy-static`` serves the captured tree (GET from ``<uri>/index.json``,
the captured ``?$skip=50`` pages as folders), run in-process on an ephemeral loopback port, one
per captured tree. The behaviour layer (``racksmith.lab.bmc.behaviour``) fetches pristine
documents from it once, caches them, and adds everything sushy-static does not do. sushy-static
keeps its mockup path in a module global; each upstream sets it under a lock for the duration of
one GET, so several trees share the process. Model variants are overlays here; the other
vendors' captures are served as models by ``racksmith.lab.bmc.captures``.

Variants (``model`` in inventory/lab/rack.yml):

- ``r750-h100pcie``: the capture as is (PowerEdge R750, iDRAC9 6.00.30.00, 1 x H100 PCIe).
- ``hgx-h200-8gpu``: DERIVED, not captured. No public capture of a GPU-dense Dell exists (see
  the data README), so this overlay clones the captured GPU ``Video.Slot.2-1`` (Processor,
  ProcessorMetrics, Dell OEM metrics, DellVideo) into eight GPUs ``Video.Slot.1-1`` ..
  ``Video.Slot.8-1`` and renames the system ``PowerEdge XE9680``. The H200 model name, board
  part number, GPU part number, PCI device id and VBIOS version are copied from a real
  2 x H200 host's ``nvidia-smi -q``. Every derived document carries
  ``Oem.Racksmith.Derived = true`` and says so in its ``Description``. The GPUs' PCIe links are
  left out (the captured ones describe the H100 PCIe card).
"""

from __future__ import annotations

import copy
import http.client
import json
import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "redfish"
CAPTURE = DATA_DIR / "dell-idrac9" / "redfish" / "v1"
ROOT = "/redfish/v1"
SYSTEM = f"{ROOT}/Systems/System.Embedded.1"
CAPTURED_GPU = "Video.Slot.2-1"

DELL_MODELS = ("hgx-h200-8gpu", "r750-h100pcie")
# the other vendors' captures, served as they are (racksmith.lab.bmc.captures)
VENDOR_MODELS = ("supermicro-hgx-h100", "dgx-h100", "lenovo-sr670v2-l40", "hpe-dl385g10p")
MODELS: tuple[str, ...] = DELL_MODELS + VENDOR_MODELS
_MOCKUP_LOCK = threading.Lock()  # sushy-static's mockup path is a module global

# Facts of the real H200 board (shared fixtures h200x2: nvidia-smi -q on a 2 x H200 SXM host).
H200 = {
    "model": "NVIDIA H200",
    "board_part_number": "692-2G520-0282-001",
    "gpu_part_number": "2335-895-A1",
    "pci_device_id": "2335",
    "vbios": "96.00.A5.00.1A",
}
DERIVED_NOTE = (
    "DERIVED by racksmith from Video.Slot.2-1 of the dell-idrac9 capture (H100 PCIe), with H200 "
    "values from a real H200 host; not a capture of real hardware"
)


def gpu_serial_placeholder(slot: int) -> str:
    """Stands in for a GPU serial in derived documents; the identity layer maps it per server."""
    return f"RACKSMITH-GPU-SERIAL-{slot}"


def gpu_guid_placeholder(slot: int) -> str:
    return f"RACKSMITH-GPU-GUID-{slot}"


class SushyStaticUpstream:
    """sushy-tools' static mockup server, in this process, on 127.0.0.1 and a free port."""

    def __init__(self, mockup_root: Path = CAPTURE) -> None:
        from sushy_tools.static import main as sushy_static

        if not (mockup_root / "index.json").is_file():
            raise FileNotFoundError(f"no Redfish mockup at {mockup_root} (expected index.json)")
        root = str(mockup_root)
        self.root = mockup_root

        class QuietHandler(sushy_static.RequestHandler):
            def do_GET(self) -> None:
                with _MOCKUP_LOCK:
                    sushy_static.REDFISH_MOCKUP_FILES = root
                    super().do_GET()

            # sushy-static prints every request's headers; nothing we send it is secret, but a
            # lab log should not fill with them.
            def _log_request(self, method: str) -> None:
                length = int(self.headers.get("content-length", 0))
                if length:
                    self.rfile.read(length)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sushy-static", daemon=True
        )
        self._thread.start()

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Upstreams:
    """One sushy-static upstream and document cache per captured tree, started on first use."""

    def __init__(self) -> None:
        self._stores: dict[Path, MockupStore] = {}
        self._lock = threading.Lock()

    def store(self, root: Path = CAPTURE) -> MockupStore:
        with self._lock:
            if root not in self._stores:
                self._stores[root] = MockupStore(SushyStaticUpstream(root))
            return self._stores[root]

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.upstream.close()
            self._stores.clear()


class MockupStore:
    """Pristine documents from the upstream, cached (the capture never changes)."""

    def __init__(self, upstream: SushyStaticUpstream) -> None:
        self._upstream = upstream
        self.upstream = upstream
        self._cache: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def document(self, path: str) -> dict[str, Any] | None:
        """The captured document at ``path`` (shared: never modify it), or None."""
        try:
            return self._cache[path]
        except KeyError:
            pass
        with self._lock:
            if path not in self._cache:
                status, body = self._upstream.get(path)
                self._cache[path] = json.loads(body) if status == 200 else None
            return self._cache[path]


def _retarget(doc: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """A deep copy with every occurrence of ``old`` (an id inside URIs and names) replaced."""
    return json.loads(json.dumps(doc).replace(old, new))


def _mark(doc: dict[str, Any]) -> dict[str, Any]:
    doc["Description"] = DERIVED_NOTE
    doc.setdefault("Oem", {})["Racksmith"] = {"Derived": True, "Note": DERIVED_NOTE}
    return doc


@dataclass(frozen=True)
class Layout:
    """Where one captured tree keeps the resources the behaviour layer acts on."""

    system: str
    chassis: str
    manager: str
    #: where the BMC takes the boot override: None for the system itself; else the system's
    #: ``@Redfish.Settings`` object, written with ``If-Match`` (the AMI BMC of a DGX: ``SD``)
    boot_settings: str | None = None

    @property
    def reset(self) -> str:
        return f"{self.system}/Actions/ComputerSystem.Reset"

    @property
    def ethernet(self) -> str:
        return f"{self.system}/EthernetInterfaces"


DELL_LAYOUT = Layout(
    SYSTEM, f"{ROOT}/Chassis/System.Embedded.1", f"{ROOT}/Managers/iDRAC.Embedded.1"
)


class Variant:
    """A server model's view of the tree. The base class serves the capture unchanged."""

    name = "r750-h100pcie"
    vendor = "dell"  # the identity rules (identity.py) and error messages follow the vendor
    layout = DELL_LAYOUT
    model_text: tuple[str, str] | None = None  # (captured, served) model name
    gpu_ids: tuple[str, ...] = (CAPTURED_GPU,)

    def __init__(self, store: MockupStore) -> None:
        self.store = store
        self._built: dict[str, str | None] = {}  # path -> JSON text of the variant's document

    def document(self, path: str) -> dict[str, Any] | None:
        """A fresh copy the caller may modify, or None when there is no such resource.

        Built once per path and kept as JSON text: parsing it again is the cheapest deep copy,
        and 256 emulated BMCs ask for the same documents thousands of times.
        """
        try:
            text = self._built[path]
        except KeyError:
            doc = self.build(path)
            text = self._built[path] = json.dumps(doc) if doc is not None else None
        return json.loads(text) if text is not None else None

    def build(self, path: str) -> dict[str, Any] | None:
        """The variant's document at ``path`` (the capture, unchanged, in this base class)."""
        return self.store.document(path)

    def gpu_serial_map(self) -> dict[int, str]:
        """slot -> the serial text in served documents that identity rewriting replaces."""
        return {2: "1654422007043"}

    def gpu_guid_map(self) -> dict[int, str]:
        return {2: "7a814837a73c822f0dfcd45b4fe54ed"}

    def gpu_paths(self, gpu_id: str) -> tuple[str, ...]:
        """Every resource that describes one GPU (hidden together by the ``missing_gpu`` fault)."""
        return (f"{SYSTEM}/Processors/{gpu_id}", f"{SYSTEM}/Oem/Dell/DellVideo/{gpu_id}")


class HgxVariant(Variant):
    """``hgx-h200-8gpu``: derived from the capture (module docstring says how, and why)."""

    name = "hgx-h200-8gpu"
    model_text = ("PowerEdge R750", "PowerEdge XE9680")
    slots = tuple(range(1, 9))
    gpu_ids = tuple(f"Video.Slot.{n}-1" for n in range(1, 9))

    _processors = f"{SYSTEM}/Processors"
    _dell_video = f"{SYSTEM}/Oem/Dell/DellVideo"

    def gpu_serial_map(self) -> dict[int, str]:
        return {n: gpu_serial_placeholder(n) for n in self.slots}

    def gpu_guid_map(self) -> dict[int, str]:
        return {n: gpu_guid_placeholder(n) for n in self.slots}

    def _slot(self, path: str, prefix: str) -> tuple[int, str] | None:
        """(slot, rest of path) when ``path`` is under ``prefix/Video.Slot.N-1``."""
        if not path.startswith(prefix + "/Video.Slot."):
            return None
        head, _, rest = path[len(prefix) + 1 :].partition("/")
        try:
            slot = int(head.removeprefix("Video.Slot.").removesuffix("-1"))
        except ValueError:
            return None
        if head != f"Video.Slot.{slot}-1" or slot not in self.slots:
            return None
        return slot, rest

    def _gpu(self, slot: int, captured: dict[str, Any]) -> dict[str, Any]:
        doc = _retarget(captured, CAPTURED_GPU, f"Video.Slot.{slot}-1")
        if doc.get("ProcessorType") == "GPU":
            doc["Model"] = H200["model"]
            doc["PartNumber"] = H200["board_part_number"]
            doc["SerialNumber"] = gpu_serial_placeholder(slot)
            links = doc.get("Links", {})
            links.pop("PCIeDevice", None)
            links.pop("PCIeFunctions", None)
        return _mark(doc)

    def _video(self, slot: int, captured: dict[str, Any]) -> dict[str, Any]:
        doc = _retarget(captured, CAPTURED_GPU, f"Video.Slot.{slot}-1")
        doc.update(
            {
                "MarketingName": H200["model"],
                "BoardPartNumber": H200["board_part_number"],
                "GPUPartNumber": H200["gpu_part_number"],
                "PCIDeviceID": H200["pci_device_id"],
                "FirmwareVersion": H200["vbios"],
                "SerialNumber": gpu_serial_placeholder(slot),
                "GPUGUID": gpu_guid_placeholder(slot),
                "Name": f"GPU Controller in Slot {slot} of Instance 1",
                "SlotType": "SXM5",
            }
        )
        return _mark(doc)

    def build(self, path: str) -> dict[str, Any] | None:
        if path == SYSTEM:
            doc = copy.deepcopy(super().build(path))
            if doc is not None:
                doc.setdefault("Oem", {})["Racksmith"] = {"Derived": True, "Note": DERIVED_NOTE}
            return doc
        if path == self._processors:
            doc = copy.deepcopy(super().build(path))
            if doc is None:
                return None
            cpus = [m for m in doc["Members"] if CAPTURED_GPU not in m["@odata.id"]]
            gpus = [{"@odata.id": f"{path}/{gid}"} for gid in self.gpu_ids]
            doc["Members"] = gpus + cpus
            doc["Members@odata.count"] = len(doc["Members"])
            return doc
        if path == self._dell_video:
            doc = copy.deepcopy(super().build(path))
            if doc is None:
                return None
            captured = doc["Members"][0]
            doc["Members"] = [self._video(n, captured) for n in self.slots]
            doc["Members@odata.count"] = len(doc["Members"])
            return doc
        for prefix, build in ((self._processors, self._gpu), (self._dell_video, self._video)):
            where = self._slot(path, prefix)
            if where is not None:
                slot, rest = where
                captured_path = f"{prefix}/{CAPTURED_GPU}" + (f"/{rest}" if rest else "")
                captured = self.store.document(captured_path)
                return build(slot, captured) if captured is not None else None
        return super().build(path)


def variant(model: str, store: MockupStore) -> Variant:
    """A Dell model over the iDRAC capture (``captures.variant`` serves every model)."""
    if model == HgxVariant.name:
        return HgxVariant(store)
    if model == Variant.name:
        return Variant(store)
    raise ValueError(f"unknown BMC model {model!r}; known: {', '.join(DELL_MODELS)}")
