"""Firmware inventory from the real captures: every member, keyed by a stable component identity.

Expected ids, versions and counts were read from the capture files (racksmith/lab/data/redfish);
the discovery tests serve the captures through sushy-static and use the real client.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from racksmith.lab.bmc.tree import DATA_DIR, SushyStaticUpstream
from racksmith.redfish import firmware as fw
from racksmith.redfish import parse
from racksmith.redfish.client import ClientOptions, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.targets import Target

INVENTORY = "UpdateService/FirmwareInventory"


def _doc(capture: str, uri: str) -> dict:
    rel = uri.removeprefix("/redfish/v1").strip("/")
    return json.loads((DATA_DIR / capture / "redfish" / "v1" / rel / "index.json").read_text())


def _members(capture: str) -> list[str]:
    return [m["@odata.id"] for m in _doc(capture, INVENTORY)["Members"]]


def _items(capture: str) -> list[fw.FirmwareItem]:
    return parse.firmware_inventory(_doc(capture, u) for u in _members(capture))


@pytest.mark.parametrize(
    ("capture", "members"),
    [("nvidia-dgx-h100", 66), ("supermicro-hgx-h100", 106), ("nvidia-gb200", 30)],
)
def test_every_inventory_member_appears_in_discovery(capture, members, discover_capture):
    (outcome,), _ = discover_capture(capture, frozenset({"firmware"}))
    assert outcome.error is None, outcome.error
    facts = outcome.facts.public()
    assert len(_members(capture)) == members
    assert {f["uri"] for f in facts["firmware"]} == set(_members(capture))
    assert all(f["version"] or f["role"] != "active" for f in facts["firmware"] if f["hgx"])


def test_a_member_listed_twice_is_reported_once():
    listed = _members("nvidia-gh200")
    assert len(listed) == 20 and len(set(listed)) == 19  # HGX_FW_FPGA_0 is listed twice
    assert len(_items("nvidia-gh200")) == 19


@pytest.mark.parametrize("capture", ["nvidia-dgx-h100", "supermicro-hgx-h100"])
def test_hgx_baseboard_items_as_seen_through_the_host_bmc(capture):
    kinds = Counter(i.kind for i in _items(capture) if i.hgx)
    assert kinds == {
        "gpu-vbios": 8,
        "gpu-inforom": 8,
        "nvswitch": 4,
        "nvswitch-inforom": 4,
        "pcie-retimer": 8,
        "pcie-switch": 1,
        "fpga": 1,
        "hmc": 1,
        "erot": 15,
    }
    by_component = {i.component: i for i in _items(capture)}
    vbios = {"nvidia-dgx-h100": "96.00.89.00.01", "supermicro-hgx-h100": "96.00.61.00.01"}
    assert by_component["HGX_FW_GPU_SXM_1"].version == vbios[capture]
    assert by_component["HGX_FW_BMC_0"].kind == "hmc"


def test_dell_component_is_the_fqdd_not_the_versioned_id():
    items = _items("dell-idrac9")
    bios = [i for i in items if i.component == "BIOS.Setup.1-1"]
    assert {(i.role, i.version) for i in bios} == {("active", "1.8.2"), ("rollback", "1.2.4")}
    assert fw.active(items)["iDRAC.Embedded.1-1"].version == "6.00.30.00"
    assert fw.active(items)["BIOS.Setup.1-1"].software_id == "159"


def test_hpe_numbered_members_are_named_by_name_and_context():
    active = fw.active(_items("hpe-xl675d-a100"))
    assert active["System ROM @ System Board"].version == "A47 v2.58 (05/19/2022)"
    assert active["Power Supply Firmware @ Bay 1"].version == "3.11"
    assert active["Power Supply Firmware @ Bay 2"].version == "2.03"


def test_image_copies_are_roles_of_one_component():
    items = _items("supermicro-hgx-h100")
    bmc = {i.id: (i.component, i.role, i.version) for i in items if i.component == "BMC"}
    assert bmc["BMC"] == ("BMC", "active", "11.01.01")
    assert bmc["Staging_BMC"] == ("BMC", "staged", "11.01.01")
    assert bmc["Backup_BMC"] == ("BMC", "backup", None)  # "Not Present"
    lenovo = {i.id: (i.component, i.role) for i in _items("lenovo-sr670v2")}
    assert lenovo["UEFI-Pending"] == ("UEFI", "staged")
    assert "UEFI" not in fw.staged(_items("lenovo-sr670v2"))  # pending slot has no version


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("96.00.61.00.01", "96.00.89.00.01"),
        ("2.7.9", "2.7.20"),
        ("HGX-22.10-1-rc34", "HGX-22.10-1-rc57"),
        ("00.02.0134.0000_n00", "00.02.0150.0000_n00"),
        ("1.0rc1", "1.0.1"),
        ("96.00.89.00.01", "96.00.A5.00.1A"),  # VBIOS fields count in hex
        ("96.00.99.00.01", "96.00.A0.00.01"),
        ("2.7.9", "2.7.10"),
    ],
)
def test_version_order(older, newer):
    assert fw.compare(older, newer) == -1 and fw.compare(newer, older) == 1
    assert fw.compare(newer, newer) == 0


def test_paged_collections_are_followed():
    """``Members@odata.nextLink`` pages, as the DGX capture has them, through the same client
    call the inventory uses. The AMI BMC's first page already lists all 264 sensors and still
    links three more pages (75, 150 and 225 in): every page is read (606 links), and the
    parsers keep each member once (``parse.firmware_inventory`` de-duplicates by URI)."""
    upstream = SushyStaticUpstream(DATA_DIR / "nvidia-dgx-h100" / "redfish" / "v1")
    try:
        options = ClientOptions(scheme="http", read_timeout=10)
        with RedfishClient(Target("127.0.0.1", upstream.port), Credentials("u", "p"), options) as c:
            sensors = c.get_collection("/redfish/v1/Chassis/DGX/Sensors")
        first = _doc("nvidia-dgx-h100", "/redfish/v1/Chassis/DGX/Sensors")
        assert first["Members@odata.nextLink"] and len(sensors) == 264 + 189 + 114 + 39
        assert len({s["@odata.id"] for s in sensors}) == first["Members@odata.count"] == 264
    finally:
        upstream.close()
