"""Pure parsers on the real iDRAC9 capture (PowerEdge R750, iDRAC 6.00.30.00, 1 x H100 PCIe)."""

from __future__ import annotations

import copy

import pytest

from racksmith.redfish import parse, pxe
from racksmith.redfish.errors import ErrorKind

SYSTEM = "/redfish/v1/Systems/System.Embedded.1"
CHASSIS = "/redfish/v1/Chassis/System.Embedded.1"


def test_system_identity_uses_sku_as_service_tag_not_serial(capture):
    info = parse.parse_system(capture.load(SYSTEM))
    assert info.service_tag == "F54P1G3"
    assert info.serial == "CNIVC0014M0388"  # board serial, a different fact
    assert (info.model, info.manufacturer) == ("PowerEdge R750", "Dell Inc.")
    assert info.uuid == "4c4c4544-0035-3410-8050-c6c04f314733"
    assert (info.power_state, info.health, info.bios_version) == ("On", "OK", "1.8.2")
    assert info.memory_gib == 512 and info.cpu_count == 2
    assert "PowerCycle" in info.reset_types and info.reset_target.endswith(
        "/Actions/ComputerSystem.Reset"
    )
    assert info.boot.enabled == "Disabled" and "Pxe" in info.boot.allowed_targets
    assert info.manager_uris == ("/redfish/v1/Managers/iDRAC.Embedded.1",)
    assert info.dell_video_uri == f"{SYSTEM}/Oem/Dell/DellVideo"


def test_system_pcie_links_are_deduplicated(capture):
    doc = capture.load(SYSTEM)
    raw = [d["@odata.id"] for d in doc["PCIeDevices"]]
    info = parse.parse_system(doc)
    assert len(raw) == 18 and len(set(raw)) < len(raw)  # the capture repeats multi-function devices
    assert sorted(info.pcie_device_uris) == sorted(set(raw))


def test_service_tag_falls_back_to_dell_oem_and_missing_tag_is_incomplete(capture):
    doc = capture.load(SYSTEM)
    doc["SKU"] = ""
    assert parse.parse_system(doc).service_tag == "F54P1G3"  # Oem.Dell.DellSystem.ChassisServiceTag
    del doc["Oem"]
    with pytest.raises(parse.ParseError) as err:
        parse.parse_system(doc)
    assert err.value.kind is ErrorKind.INCOMPLETE and "SKU" in err.value.reason


def test_wrong_types_are_malformed_not_crashes(capture):
    doc = capture.load(SYSTEM)
    doc["Model"] = {"unexpected": "object"}
    with pytest.raises(parse.ParseError) as err:
        parse.parse_system(doc)
    assert err.value.kind is ErrorKind.MALFORMED
    with pytest.raises(parse.ParseError):
        parse.member_links({"@odata.id": "/x", "Members": "not a list"})


def test_manager_firmware_and_clock(capture):
    manager = parse.parse_manager(capture.load("/redfish/v1/Managers/iDRAC.Embedded.1"))
    assert manager.firmware == "6.00.30.00" and manager.model == "15G Monolithic"
    when = parse.parse_datetime(manager.datetime)
    assert when.utcoffset().total_seconds() == -5 * 3600
    with pytest.raises(parse.ParseError):
        parse.parse_datetime("2024-08-08T18:48:10")  # no offset: cannot compute a skew


def test_nics_from_ethernet_interfaces_are_permanent_and_lowercase(capture):
    nics = parse.nics_from_ethernet_interfaces(capture.members(f"{SYSTEM}/EthernetInterfaces"))
    assert [(n.id, n.mac) for n in nics] == [
        ("NIC.Embedded.1-1-1", "70:b5:e8:f0:52:dc"),
        ("NIC.Embedded.2-1-1", "70:b5:e8:f0:52:dd"),
        ("NIC.Integrated.1-1-1", "e4:3d:1a:13:27:f0"),
        ("NIC.Integrated.1-2-1", "e4:3d:1a:13:27:f1"),
        ("NIC.Slot.5-1", "b8:3f:d2:90:97:c4"),
    ]
    assert nics[0].link == "LinkDown" and nics[-1].link is None


def test_permanent_mac_wins_over_assigned_mac(capture):
    doc = capture.load(f"{SYSTEM}/EthernetInterfaces/NIC.Integrated.1-1-1")
    doc["MACAddress"] = "02:00:00:00:00:99"  # a virtual / assigned address
    assert parse.nics_from_ethernet_interfaces([doc])[0].mac == "e4:3d:1a:13:27:f0"
    doc["PermanentMACAddress"] = "00:00:00:00:00:00"  # null MAC: fall back to MACAddress
    assert parse.nics_from_ethernet_interfaces([doc])[0].mac == "02:00:00:00:00:99"


def _adapter_functions(capture) -> tuple[list[dict], dict[str, list[dict]]]:
    adapters = capture.members(f"{CHASSIS}/NetworkAdapters")
    functions = {
        a["Id"]: capture.members(a["NetworkDeviceFunctions"]["@odata.id"]) for a in adapters
    }
    return adapters, functions


def test_device_function_fallback_skips_disabled_and_infiniband(capture):
    _, functions = _adapter_functions(capture)
    nics = parse.nics_from_device_functions(functions)
    ids = [n.id for n in nics]
    # BlueField NIC.Slot.5-1 reports NetDevFuncType "Disabled";
    # InfiniBand.Slot.7 ports are not Ethernet.
    assert ids == [
        "NIC.Embedded.1-1-1",
        "NIC.Embedded.2-1-1",
        "NIC.Integrated.1-1-1",
        "NIC.Integrated.1-2-1",
    ]
    assert all(n.source == "NetworkDeviceFunctions" and n.mac == n.mac.lower() for n in nics)


def test_device_function_fallback_skips_fibre_channel(capture):
    _, functions = _adapter_functions(capture)
    fc = copy.deepcopy(functions["NIC.Integrated.1"][0])
    fc["Id"], fc["NetDevFuncType"] = "FC.Slot.1-1", "FibreChannel"
    functions["FC.Slot.1"] = [fc]
    assert "FC.Slot.1-1" not in [n.id for n in parse.nics_from_device_functions(functions)]


def test_infiniband_adapter_from_capture(capture):
    adapters, functions = _adapter_functions(capture)
    (ib,) = parse.infiniband_adapters(adapters, functions)
    assert ib.id == "InfiniBand.Slot.7" and ib.manufacturer == "Mellanox Technologies"
    assert ib.firmware == "20.31.10.14"
    assert [p["mac"] for p in ib.ports] == ["b8:3f:d2:a4:1b:d2", "b8:3f:d2:a4:1b:d3"]


def test_gpus_from_processors_with_firmware_from_dellvideo(capture):
    processors = capture.members(f"{SYSTEM}/Processors")
    without = parse.gpus(processors)
    assert [g.id for g in without] == ["Video.Slot.2-1"] and without[0].firmware is None
    assert parse.gpus_need_firmware(without)
    video = capture.load(f"{SYSTEM}/Oem/Dell/DellVideo")["Members"]  # iDRAC inlines these members
    (gpu,) = parse.gpus(processors, video)
    assert (gpu.model, gpu.serial, gpu.firmware) == (
        "NVIDIA H100 PCIe",
        "1654422007043",
        "96.00.30.00.01",
    )
    assert gpu.part_number == "699-21010-0200-600"
    # ProcessorSummary.Count (2) excludes the GPU: count GPUs from ProcessorType only.
    assert parse.parse_system(capture.load(SYSTEM)).cpu_count == 2


def test_firmware_inventory(capture):
    firmware = parse.firmware_inventory(
        capture.members("/redfish/v1/UpdateService/FirmwareInventory")
    )
    assert len(firmware) == 29
    installed = {f.component: f.version for f in firmware if f.role == "active"}
    # Dell embeds the version in the Id: the component is the FQDD after "__"
    assert installed["BIOS.Setup.1-1"] == "1.8.2"
    assert installed["iDRAC.Embedded.1-1"] == "6.00.30.00"
    assert {f.version for f in firmware if f.role == "rollback"} == {"1.2.4", "4.40.29.00"}
    bios = next(f for f in firmware if f.id == "Previous-159-1.2.4__BIOS.Setup.1-1")
    assert (bios.component, bios.software_id) == ("BIOS.Setup.1-1", "159")


def test_pcie_devices_and_memory(capture):
    devices = parse.pcie_devices(capture.members(f"{CHASSIS}/PCIeDevices"))
    assert len(devices) == 13
    assert any(d.id == "23-0" for d in devices)
    modules = parse.memory_modules(capture.members(f"{SYSTEM}/Memory"))
    assert modules and sum(m.capacity_mib or 0 for m in modules) == 512 * 1024


@pytest.mark.parametrize(
    ("rules", "nic_id", "rule"),
    [
        (["id:NIC.Integrated.1-1-1"], "NIC.Integrated.1-1-1", "id:NIC.Integrated.1-1-1"),
        (["id:NIC.Nope.1", "slot:5"], "NIC.Slot.5-1", "slot:5"),
        (["prefix:NIC.Embedded.2"], "NIC.Embedded.2-1-1", "prefix:NIC.Embedded.2"),
        (["link:up", "first"], "NIC.Embedded.1-1-1", "first"),  # every port is down in the capture
    ],
)
def test_pxe_rules_say_which_rule_chose(capture, rules, nic_id, rule):
    nics = parse.nics_from_ethernet_interfaces(capture.members(f"{SYSTEM}/EthernetInterfaces"))
    choice = pxe.choose_pxe(nics, rules)
    assert (choice.nic_id, choice.rule) == (nic_id, rule)


def test_pxe_by_link_state_and_no_match(capture):
    docs = capture.members(f"{SYSTEM}/EthernetInterfaces")
    cabled = next(d for d in docs if d["Id"] == "NIC.Integrated.1-2-1")
    cabled["LinkStatus"] = "LinkUp"
    nics = parse.nics_from_ethernet_interfaces(docs)
    assert pxe.choose_pxe(nics, ["link:up"]).nic_id == "NIC.Integrated.1-2-1"
    assert pxe.choose_pxe(nics, ["id:NIC.Slot.9-1"]) is None
    with pytest.raises(ValueError, match="PXE rule"):
        pxe.validate_pxe_rules(["mac:aa"])


def test_empty_ethernet_interfaces_parse_to_no_nics():
    # iDRAC 7.00 returned 0 members here; discovery then uses NetworkDeviceFunctions.
    assert parse.nics_from_ethernet_interfaces([]) == []


def test_normalize_mac():
    assert parse.normalize_mac("E4-3D-1A-13-27-F0") == "e4:3d:1a:13:27:f0"
    for bad in (None, "", "00:00:00:00:00:00", "zz:3d:1a:13:27:f0", 42):
        assert parse.normalize_mac(bad) is None
