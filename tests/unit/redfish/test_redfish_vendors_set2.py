"""All ten vendor captures, discovered with default settings, against the hand-read ground truth.

Each capture (``racksmith/lab/data/redfish/``, provenance and licences in its README) is served
unchanged by sushy-tools' ``sushy-static`` on a loopback port and read by the real client and
discovery code, exactly as a new user would with no option set. Every expected value below was
copied from the ground-truth tables of the project's ``VENDORS.md`` (read by hand from the JSON),
never from the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Truth:
    manufacturer: str
    model: str
    serial: str
    power: str
    bios: str
    bmc: str
    macs: tuple[str, ...]  # every host NIC MAC as captured (a MAC reported twice appears twice)
    pxe: str | None
    gpus: int
    gpu_model: str | None = None
    gpu_ids: tuple[str, ...] = ()


TRUTH: dict[str, Truth] = {
    # set 2 (VENDORS.md "Ground truth (read from the JSON)")
    "hpe-xl675d-a100": Truth(
        "HPE",
        "ProLiant XL675d Gen10 Plus",
        "JS05NP0896",
        "On",
        "A47 v2.58 (05/19/2022)",
        "iLO 5 v2.70",
        (
            "98:03:9b:7f:c3:38",
            "98:03:9b:1e:de:fc",
            "b4:96:91:67:d8:e8",
            "b4:96:91:67:d8:e9",
            "b4:96:91:67:d8:ea",
            "b4:96:91:67:d8:eb",
        ),
        "b4:96:91:67:d8:e8",
        8,
        "NVIDIA A100-SXM4-40GB",
        tuple(f"PCI-E Slot {n}" for n in range(1, 9)),
    ),
    "hpe-xl675d-a40": Truth(
        "HPE",
        "ProLiant XL675d Gen10 Plus",
        "JS05NP1072",
        "On",
        "A47 v2.52 (10/29/2021)",
        "iLO 5 v2.55",
        ("94:40:c9:6a:42:da", "94:40:c9:6a:42:db", "b4:7a:f1:12:fb:70", "b4:7a:f1:12:fb:71"),
        "94:40:c9:6a:42:da",
        8,
        "NVIDIA A40",
        tuple(f"PCI-E Slot {n}" for n in (1, 2, 3, 5, 7, 9, 11, 13)),
    ),
    "gigabyte-h262-z63": Truth(
        "GIGABYTE",
        "H262-Z63-00",
        "GJG9NF512A000302",
        "On",
        "C27",
        "12.84.13",
        ("b4:2e:99:ba:de:15", "b4:2e:99:ba:de:16", "b4:2e:99:ba:de:16"),
        "b4:2e:99:ba:de:15",
        0,
    ),
    "intel-s2600bpb": Truth(
        "Cray Inc.",
        "S2600BPB",
        "QSBP74100021",
        "On",
        "SE5C620.86B.02.01.0008.C0001.031920191559",
        "1.93.870cf4f0",
        (),
        None,
        0,
    ),
    "nvidia-gh200": Truth(
        "NVIDIA",
        "P3809",
        "1580624650610",
        "On",
        "buildbrain-gcid-35803827",
        "GH200-24.05-2",
        (
            "f0:b2:b9:0b:fc:9e",
            "f0:b2:b9:0b:fc:9f",
            "a0:88:c2:c7:a3:ce",
            "a0:88:c2:c7:b3:7e",
            "58:a2:e1:bb:b1:0e",
            "58:a2:e1:bb:b1:0f",
            "26:c7:6d:da:e8:24",
        ),
        "f0:b2:b9:0b:fc:9e",
        2,
        "NVIDIA GH200 96GB HBM3",
        ("GPU_0", "GPU_1"),
    ),
    "nvidia-gb200": Truth(
        "NVIDIA",
        "GB200 NVL",
        "1333024020524",
        "On",
        "buildbrain-gcid-38635631",
        "GB200Nvl-24.12-8",
        ("d0:f4:05:43:95:04", "ee:a3:ab:6b:53:03", "f4:4d:ad:02:27:62"),
        "d0:f4:05:43:95:04",
        4,
        None,  # the capture names no GPU model
        ("GPU_0", "GPU_1", "GPU_2", "GPU_3"),
    ),
}

#: set 1 (VENDORS.md's table and the data README): the facts that table gives
SET1 = {
    "supermicro-hgx-h100": (
        "Supermicro",
        "SYS-821GE-TNHR",
        "S889914X3710910",
        "94:6d:ae:91:fb:22",
        8,
    ),
    "hpe-dl385g10p": ("HPE", "ProLiant DL385 Gen10 Plus v2", "MXQ302099S", "b8:3f:d2:d7:f7:4a", 0),
    "lenovo-sr670v2": ("Lenovo", "ThinkSystem SR670 V2", "J105958B", "00:62:0b:4c:28:4e", 8),
    "nvidia-dgx-h100": ("NVIDIA", "DGXH100", "1662923610124", "a0:88:c2:82:6e:52", 8),
    "dell-idrac9": ("Dell Inc.", "PowerEdge R750", "CNIVC0014M0388", "e4:3d:1a:13:27:f0", 1),
}


@pytest.mark.parametrize("capture", sorted(TRUTH))
def test_set2_capture_reads_as_the_ground_truth(capture, discover_capture):
    truth = TRUTH[capture]
    outcomes, _ = discover_capture(capture)
    assert len(outcomes) == 1, [o.system for o in outcomes]  # HGX_Baseboard_0 is no server
    (outcome,) = outcomes
    assert outcome.facts is not None
    f = outcome.facts.public()
    assert (f["manufacturer"], f["model"], f["serial"], f["service_tag"]) == (
        truth.manufacturer,
        truth.model,
        truth.serial,
        truth.serial,  # the asset identity is the serial on every one of these
    )
    assert (f["power_state"], f["bios_version"], f["bmc_firmware"]) == (
        truth.power,
        truth.bios,
        truth.bmc,
    )
    assert sorted(n["mac"] for n in f["nics"]) == sorted(truth.macs)
    assert f["pxe_mac"] == truth.pxe
    assert len(f["gpus"]) == truth.gpus
    assert {g["model"] for g in f["gpus"]} == ({truth.gpu_model} if truth.gpus else set())
    if truth.gpu_ids:
        assert [g["id"] for g in f["gpus"]] == list(truth.gpu_ids)
    if truth.pxe is None:
        assert outcome.error is not None and outcome.error.kind.value == "incomplete"
        assert "no host NIC" in outcome.error.reason
    else:
        assert outcome.error is None, outcome.error


def test_hpe_baseboard_and_nvswitch_typed_gpu_are_not_counted(discover_capture):
    (outcome,), _ = discover_capture("hpe-xl675d-a100")
    gpus = outcome.facts.gpus
    assert "Baseboard" not in {g.id for g in gpus} and "PCI-E Slot 9" not in {g.id for g in gpus}
    assert all(g.model_source == "Name" and g.firmware == "92.00.19.00.10" for g in gpus)
    assert gpus[0].serial == "1323620023536"
    assert any("left out" in n for n in outcome.facts.notes)  # the two skipped devices said so


def test_nvidia_openbmc_facts_say_where_they_came_from(discover_capture):
    for capture, chassis in (("nvidia-gh200", "BMC_0"), ("nvidia-gb200", "Chassis_0")):
        (outcome,), _ = discover_capture(capture)
        notes = " | ".join(outcome.facts.notes)
        assert f"/redfish/v1/Chassis/{chassis}" in notes
        assert "firmware inventory member UEFI" in notes and "boot options" in notes
        assert outcome.facts.vendor == "nvidia-openbmc"
        assert outcome.facts.pxe.rule == "boot:pxe"


@pytest.mark.parametrize("capture", sorted(SET1))
def test_set1_captures_unchanged(capture, discover_capture):
    manufacturer, model, serial, pxe, gpus = SET1[capture]
    (outcome,), _ = discover_capture(capture)
    f = outcome.facts.public()
    assert outcome.error is None
    assert (f["manufacturer"], f["model"], f["serial"], f["pxe_mac"], len(f["gpus"])) == (
        manufacturer,
        model,
        serial,
        pxe,
        gpus,
    )
