"""Vendor profiles against the real captures on disk (pure parsing, no server).

Every expected value below was read from the capture by eye (see the data README), not computed
by the code under test: serials, models, MACs, GPU part numbers.
"""

from __future__ import annotations

import copy
import json
from functools import cache

import pytest

from racksmith.lab.bmc.tree import DATA_DIR
from racksmith.redfish import parse, pxe, vendors
from racksmith.redfish.discover import DiscoveryOptions


@cache
def _load(capture: str, uri: str) -> dict:
    rel = uri.removeprefix("/redfish/v1").strip("/")
    return json.loads((DATA_DIR / capture / "redfish" / "v1" / rel / "index.json").read_text())


def doc(capture: str, uri: str) -> dict:
    return copy.deepcopy(_load(capture, uri))


def members(capture: str, uri: str) -> list[dict]:
    return [doc(capture, m["@odata.id"]) for m in _load(capture, uri)["Members"]]


SMC, DGX, LENOVO, HPE, DELL = (
    "supermicro-hgx-h100",
    "nvidia-dgx-h100",
    "lenovo-sr670v2",
    "hpe-dl385g10p",
    "dell-idrac9",
)
HOSTS = {
    SMC: "/redfish/v1/Systems/1",
    DGX: "/redfish/v1/Systems/DGX",
    LENOVO: "/redfish/v1/Systems/1",
    HPE: "/redfish/v1/Systems/1",
    DELL: "/redfish/v1/Systems/System.Embedded.1",
}


# -- choosing a profile ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capture", "profile"),
    [(SMC, "supermicro"), (DGX, "nvidia-dgx"), (LENOVO, "lenovo"), (HPE, "hpe"), (DELL, "dell")],
)
def test_profile_from_manufacturer(capture, profile):
    system = doc(capture, HOSTS[capture])
    assert vendors.manufacturer_decides(system)
    assert vendors.choose(system, doc(capture, "/redfish/v1")).name == profile


def test_dgx_is_chosen_by_manufacturer_not_by_its_ami_service_root():
    root = doc(DGX, "/redfish/v1")
    assert root["Vendor"] == "AMI"  # the service root alone names the BMC's maker
    assert vendors.choose({}, root).name == "generic"
    assert vendors.choose(doc(DGX, HOSTS[DGX]), root).name == "nvidia-dgx"


def test_service_root_decides_when_manufacturer_is_missing():
    for capture, name in ((HPE, "hpe"), (LENOVO, "lenovo"), (SMC, "supermicro")):
        system = doc(capture, HOSTS[capture])
        del system["Manufacturer"]
        assert not vendors.manufacturer_decides(system)
        assert vendors.choose(system, doc(capture, "/redfish/v1")).name == name
    assert vendors.choose({"Manufacturer": "Acme"}, {"Vendor": "Acme"}).name == "generic"


def test_override_wins_and_unknown_names_fail():
    system = doc(SMC, HOSTS[SMC])
    assert vendors.choose(system, None, "lenovo").name == "lenovo"
    assert vendors.choose(system, None, vendors.AUTO).name == "supermicro"
    with pytest.raises(vendors.VendorError, match=r"unknown vendor profile 'acme'.*supermicro"):
        vendors.choose(system, None, "acme")
    with pytest.raises(vendors.VendorError):
        DiscoveryOptions(vendor="acme")


# -- identity ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capture", "tag", "serial", "model", "manufacturer", "bios"),
    [
        (SMC, "S889914X3710910", "S889914X3710910", "SYS-821GE-TNHR", "Supermicro", "1.4"),
        (DGX, "1662923610124", "1662923610124", "DGXH100", "NVIDIA", "1.1.3"),
        (LENOVO, "J105958B", "J105958B", "ThinkSystem SR670 V2", "Lenovo", "U8E122J"),
        (
            HPE,
            "MXQ302099S",
            "MXQ302099S",
            "ProLiant DL385 Gen10 Plus v2",
            "HPE",
            "A42 v2.60 (08/11/2022)",
        ),
        (DELL, "F54P1G3", "CNIVC0014M0388", "PowerEdge R750", "Dell Inc.", "1.8.2"),
    ],
)
def test_asset_identity_field_per_vendor(capture, tag, serial, model, manufacturer, bios):
    system = doc(capture, HOSTS[capture])
    profile = vendors.choose(system)
    info = parse.parse_system(system, profile.service_tag_fields)
    assert (info.service_tag, info.serial, info.model) == (tag, serial, model)
    assert (info.manufacturer, info.bios_version, info.power_state) == (manufacturer, bios, "On")


def test_sku_is_not_the_asset_identity_outside_dell():
    # what SKU holds on each (a board id, a machine type, a product and a part number)
    skus = {SMC: "0x1D1415D9", LENOVO: "7Z23CTO1WW", HPE: "P38411-B21", DGX: "920-24387-2540-000"}
    for capture, sku in skus.items():
        system = doc(capture, HOSTS[capture])
        assert system["SKU"] == sku
        assert (
            parse.parse_system(system, vendors.choose(system).service_tag_fields).service_tag != sku
        )


def test_missing_asset_identity_names_the_field():
    system = doc(SMC, HOSTS[SMC])
    del system["SerialNumber"]
    with pytest.raises(parse.ParseError, match=r"Systems/1: no service tag \(SerialNumber\)"):
        parse.parse_system(system, ("SerialNumber",))


# -- systems behind one BMC --------------------------------------------------------------------


def test_dgx_baseboard_attaches_to_its_host():
    systems = members(DGX, "/redfish/v1/Systems")
    assert [s["Id"] for s in systems] == ["DGX", "HGX_Baseboard_0"]
    (group,) = vendors.partition_systems(systems)
    assert group.host["Id"] == "DGX"
    assert [b["Id"] for b in group.baseboards] == ["HGX_Baseboard_0"]


def test_multi_node_chassis_gives_one_host_per_node():
    node1 = doc(SMC, HOSTS[SMC])
    node2 = json.loads(json.dumps(node1).replace("/Systems/1", "/Systems/2"))
    node2["Id"], node2["SerialNumber"] = "2", "S889914X3710911"
    groups = vendors.partition_systems([node1, node2])
    assert [g.host["@odata.id"] for g in groups] == [
        "/redfish/v1/Systems/1",
        "/redfish/v1/Systems/2",
    ]
    assert all(not g.baseboards and not g.notes for g in groups)
    board = doc(DGX, "/redfish/v1/Systems/HGX_Baseboard_0")
    with_board = vendors.partition_systems([node1, node2, board])
    assert len(with_board) == 2 and all(not g.baseboards for g in with_board)
    assert "HGX_Baseboard_0 not attached" in with_board[0].notes[0]  # never guessed
    assert vendors.partition_systems([board]) == []


# -- GPUs --------------------------------------------------------------------------------------


def test_supermicro_gpus_are_pcie_devices_of_the_chassis():
    assert not parse.gpus(members(SMC, "/redfish/v1/Systems/1/Processors"))
    devices = members(SMC, "/redfish/v1/Chassis/1/PCIeDevices")
    assert len(devices) == 26  # 8 GPUs, 10 NICs, 8 NVMe drives
    gpus = parse.gpus_from_pcie(devices)
    assert [g.id for g in gpus] == [f"GPU{n}" for n in range(1, 9)]
    assert {(g.model, g.model_source) for g in gpus} == {("NVIDIA H100 80GB HBM3", "Model")}
    assert gpus[0].serial == "1652323019599" and gpus[0].firmware == "96.00.61.00.01"
    assert gpus[0].part_number == "2330-885-A1"


def test_dgx_gpus_are_processors_of_the_baseboard_system():
    assert not parse.gpus(members(DGX, "/redfish/v1/Systems/DGX/Processors"))
    gpus = parse.gpus(members(DGX, "/redfish/v1/Systems/HGX_Baseboard_0/Processors"))
    assert [g.id for g in gpus] == [f"GPU_SXM_{n}" for n in range(1, 9)]  # not FPGA_0
    assert {g.model for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert gpus[0].serial == "1652923003067" and gpus[0].firmware == "96.00.89.00.01"


def test_lenovo_gpus_without_model_are_named_from_the_part_number():
    processors = members(LENOVO, "/redfish/v1/Systems/1/Processors")
    assert all(p.get("Model") is None for p in processors if p["ProcessorType"] == "GPU")
    gpus = parse.gpus(processors)
    assert len(gpus) == 8
    assert {(g.model, g.model_source) for g in gpus} == {("NVIDIA L40", "PartNumber")}
    # the same GPUs are PCIe devices too; the profile reads processors first, so none twice
    pcie = parse.gpus_from_pcie(members(LENOVO, "/redfish/v1/Chassis/1/PCIeDevices"))
    assert sorted(g.serial for g in pcie) == sorted(g.serial for g in gpus)
    assert vendors.PROFILES["lenovo"].gpu_sources[0] == "processors"


def test_hpe_capture_has_no_gpu_and_no_device_is_mistaken_for_one():
    assert not parse.gpus(members(HPE, "/redfish/v1/Systems/1/Processors"))
    devices = members(HPE, "/redfish/v1/Chassis/1/PCIeDevices")
    assert "Embedded Video Controller" in {d["Name"] for d in devices}
    assert parse.gpus_from_pcie(devices) == []


def test_dell_gpu_unchanged():
    (gpu,) = parse.gpus(members(DELL, "/redfish/v1/Systems/System.Embedded.1/Processors"))
    assert (gpu.model, gpu.model_source, gpu.serial) == (
        "NVIDIA H100 PCIe",
        "Model",
        "1654422007043",
    )


def test_gpu_model_sources_in_order():
    proc = doc(DELL, "/redfish/v1/Systems/System.Embedded.1/Processors/Video.Slot.2-1")
    function = doc(
        DELL, "/redfish/v1/Systems/System.Embedded.1/PCIeDevices/23-0/PCIeFunctions/23-0-0"
    )
    assert (function["VendorId"], function["DeviceId"]) == ("0x10de", "0x2331")
    assert vendors.gpu_identity(proc, [function]) == vendors.GpuIdentity(
        "NVIDIA H100 PCIe", "Model"
    )
    proc["Model"] = "N/A"  # what Lenovo writes where it knows nothing
    # the Dell part number 699-21010-0200-600 is a board number, not a device id: next source
    assert vendors.gpu_identity(proc, [function]) == vendors.GpuIdentity(
        "NVIDIA H100 PCIe", "PCIe device id"
    )
    assert vendors.gpu_identity(proc) == vendors.GpuIdentity(None, None)
    # Supermicro's function carries zero ids but its OEM block names the GPU
    smc_fn = doc(SMC, "/redfish/v1/Chassis/1/PCIeDevices/GPU1/PCIeFunctions/1")
    smc_gpu = doc(SMC, "/redfish/v1/Chassis/1/PCIeDevices/GPU1")
    del smc_gpu["Model"], smc_gpu["PartNumber"]
    assert vendors.gpu_identity(smc_gpu, [smc_fn]) == vendors.GpuIdentity(
        "NVIDIA H100 80GB HBM3", "Oem"
    )


def test_model_names_compare_like_with_like():
    assert vendors.canonical_gpu_model("H100 80GB HBM3", nvidia=True) == "NVIDIA H100 80GB HBM3"
    assert vendors.canonical_gpu_model("NVIDIA  H200", nvidia=True) == "NVIDIA H200"
    assert vendors.canonical_gpu_model("Instinct MI300X", nvidia=False) == "Instinct MI300X"


# -- NICs and the PXE NIC ----------------------------------------------------------------------


def _nics(capture: str) -> list[parse.Nic]:
    return parse.nics_from_ethernet_interfaces(
        members(capture, f"{HOSTS[capture]}/EthernetInterfaces")
    )


def test_bmc_host_interface_is_not_a_host_nic():
    smc = _nics(SMC)
    assert len(smc) == 11 and "ToManager" not in {n.id for n in smc}
    assert "be:3a:f2:b6:05:9f" not in {n.mac for n in smc}  # the RNDIS link to the BMC
    assert [n.id for n in _nics(LENOVO)] == ["NIC1", "NIC2", "NIC3", "NIC4"]
    assert len(_nics(HPE)) == 7 and len(_nics(DGX)) == 5


@pytest.mark.parametrize(
    ("capture", "macs"),
    [
        (SMC, ["94:6d:ae:91:fb:22", "94:6d:ae:91:09:c2"]),
        (HPE, ["b8:3f:d2:d7:f7:4a", "88:e9:a4:80:9d:a2"]),  # HTTP boot entries skipped
        (DGX, ["a0:88:c2:82:6e:52", "6c:fe:54:41:15:79"]),
        (LENOVO, []),  # "Network": no MAC in Lenovo's boot options
    ],
)
def test_pxe_boot_macs_follow_the_boot_order(capture, macs):
    system = doc(capture, HOSTS[capture])
    found = pxe.pxe_boot_macs(
        system["Boot"]["BootOrder"], members(capture, f"{HOSTS[capture]}/BootOptions")
    )
    assert found[:2] == macs


@pytest.mark.parametrize(
    ("capture", "mac", "rule"),
    [
        (SMC, "94:6d:ae:91:fb:22", "boot:pxe"),
        (HPE, "b8:3f:d2:d7:f7:4a", "boot:pxe"),
        (DGX, "a0:88:c2:82:6e:52", "boot:pxe"),
        (LENOVO, "00:62:0b:4c:28:4e", "first"),
        (DELL, "e4:3d:1a:13:27:f0", "id:NIC.Integrated.1-1-1"),
    ],
)
def test_default_rules_pick_the_pxe_nic_per_vendor(capture, mac, rule):
    system = doc(capture, HOSTS[capture])
    profile = vendors.choose(system)
    rules = DiscoveryOptions().rules_for(profile)
    order = system["Boot"].get("BootOrder") or []
    boot = pxe.pxe_boot_macs(order, members(capture, f"{HOSTS[capture]}/BootOptions"))
    choice = pxe.choose_pxe(_nics(capture), rules, boot)
    assert choice is not None and (choice.mac, choice.rule) == (mac, rule)


def test_dell_rules_set_on_purpose_are_used_on_every_vendor():
    """Unset rules are the vendor profile's; a list the user writes is used as written, Dell's
    included (it used to be taken for "the default" and silently replaced by the profile's)."""
    supermicro = vendors.PROFILES["supermicro"]
    assert DiscoveryOptions().rules_for(supermicro) == ("boot:pxe", "link:up", "first")
    chosen = DiscoveryOptions(pxe_rules=vendors.DELL_PXE_RULES)
    assert chosen.rules_for(supermicro) == vendors.DELL_PXE_RULES
    # on the real Supermicro capture, Dell's port names match nothing and no port has link:
    # the user's rules leave the host without a PXE NIC instead of quietly using boot:pxe
    system = doc(SMC, HOSTS[SMC])
    boot = pxe.pxe_boot_macs(system["Boot"]["BootOrder"], members(SMC, f"{HOSTS[SMC]}/BootOptions"))
    assert pxe.choose_pxe(_nics(SMC), chosen.rules_for(supermicro), boot) is None
    assert pxe.choose_pxe(_nics(SMC), DiscoveryOptions().rules_for(supermicro), boot).rule == (
        "boot:pxe"
    )


def test_configured_rules_replace_the_profiles():
    options = DiscoveryOptions(pxe_rules=("link:up",))
    assert options.rules_for(vendors.PROFILES["supermicro"]) == ("link:up",)
    assert DiscoveryOptions().rules_for(vendors.PROFILES["dell"]) == vendors.DELL_PXE_RULES
    assert pxe.validate_pxe_rules(["boot:pxe"]) == ["boot:pxe"]
    with pytest.raises(ValueError, match="boot:pxe"):
        pxe.validate_pxe_rules(["boot:http"])
    # an unknown vendor gets no "first": its NIC order means nothing
    assert "first" not in vendors.PROFILES["generic"].pxe_rules


# -- boot-once quirks --------------------------------------------------------------------------


def test_boot_once_payload_per_vendor():
    smc = vendors.PROFILES["supermicro"].boot
    assert smc.payload("Pxe") == {
        "Boot": {
            "BootSourceOverrideEnabled": "Once",
            "BootSourceOverrideTarget": "Pxe",
            "BootSourceOverrideMode": "UEFI",
        }
    }
    assert smc.patch_path("/redfish/v1/Systems/1") == "/redfish/v1/Systems/1"
    dgx = vendors.PROFILES["nvidia-dgx"].boot
    assert (
        dgx.patch_path("/redfish/v1/Systems/DGX") == "/redfish/v1/Systems/DGX/SD" and dgx.if_match
    )
    assert "BootSourceOverrideMode" not in vendors.PROFILES["dell"].boot.payload("Pxe")["Boot"]
    assert "Pxe" in doc(SMC, HOSTS[SMC])["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"]
