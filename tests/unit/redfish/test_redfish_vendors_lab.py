"""Discovery of every vendor capture through the lab's emulated BMCs, with default settings.

Real sockets and TLS, sushy-static serving each capture, the behaviour layer on top; the
expected values come from the captures (firmware, models) and from the lab server's derived
identity (serial = service tag, PXE MAC, GPU serials), never from the code under test.
"""

from __future__ import annotations

import pytest

from racksmith.redfish.discover import DiscoveryOptions, discover

#: model -> (manufacturer, model, BMC firmware, BIOS, NICs, GPUs, GPU model, PXE rule, profile)
EXPECTED = {
    "supermicro-hgx-h100": (
        "Supermicro",
        "SYS-821GE-TNHR",
        "11.01.01",
        "1.4",
        11,
        8,
        "NVIDIA H100 80GB HBM3",
        "boot:pxe",
        "supermicro",
    ),
    "dgx-h100": (
        "NVIDIA",
        "DGXH100",
        "23.11.20",
        "1.1.3",
        5,
        8,
        "NVIDIA H100 80GB HBM3",
        "boot:pxe",
        "nvidia-dgx",
    ),
    "lenovo-sr670v2-l40": (
        "Lenovo",
        "ThinkSystem SR670 V2",
        "TGBT42S 2.83 2023-07-05",
        "U8E122J",
        4,
        8,
        "NVIDIA L40",
        "first",
        "lenovo",
    ),
    "hpe-dl385g10p": (
        "HPE",
        "ProLiant DL385 Gen10 Plus v2",
        "iLO 5 v2.72",
        "A42 v2.60 (08/11/2022)",
        7,
        0,
        None,
        "boot:pxe",
        "hpe",
    ),
}


def _options(client_options, **kw) -> DiscoveryOptions:
    return DiscoveryOptions(client=client_options, **{"deadline": 20.0, **kw})


def test_mixed_vendor_rack_with_default_settings(rack, server, creds, client_options):
    servers = [server(i, model=m) for i, m in enumerate(EXPECTED, 1)]
    servers.append(server(9, model="hgx-h200-8gpu"))
    lab = rack(servers)
    results = discover(lab.targets(), creds, _options(client_options))
    assert len(results) == len(servers)
    for result, srv in zip(results, servers, strict=True):
        facts = result.as_dict()
        assert result.ok, (srv.model, facts["error"])
        if srv.model == "hgx-h200-8gpu":  # Dell as before
            assert (facts["service_tag"], facts["serial"]) == (srv.service_tag, srv.serial)
            assert facts["pxe_rule"] == "id:NIC.Integrated.1-1-1" and facts["vendor"] == "dell"
            assert len(facts["gpus"]) == 8 and result.requests <= 9
            continue
        make, model, bmc_fw, bios, nics, gpus, gpu_model, rule, profile = EXPECTED[srv.model]
        assert (facts["manufacturer"], facts["model"]) == (make, model)
        assert (facts["bmc_firmware"], facts["bios_version"]) == (bmc_fw, bios)
        # SerialNumber is the asset identity: the emulated BMC serves the lab server's tag there
        assert facts["service_tag"] == facts["serial"] == srv.service_tag
        assert facts["uuid"] == srv.uuid and facts["power_state"] == "Off"
        assert len(facts["nics"]) == nics
        assert facts["pxe_mac"] == srv.pxe_mac and facts["pxe_rule"] == rule
        assert facts["vendor"] == profile
        assert len(facts["gpus"]) == gpus
        assert {g["model"] for g in facts["gpus"]} == ({gpu_model} if gpus else set())
        assert [g["serial"] for g in facts["gpus"]] == [
            srv.gpu_serial(n) for n in range(1, gpus + 1)
        ]
        assert result.requests <= 12
    bmcs = lab.farm.bmcs
    assert all(b.live_sessions() == 0 and b.stats["sessions_created"] == 1 for b in bmcs)


@pytest.mark.parametrize(
    ("model", "source"), [("supermicro-hgx-h100", "Model"), ("lenovo-sr670v2-l40", "PartNumber")]
)
def test_gpu_model_source_is_recorded(rack, server, creds, client_options, model, source):
    lab = rack([server(1, model=model)])
    (result,) = discover(lab.targets(), creds, _options(client_options))
    assert set(result.as_dict()["gpu_model_sources"].values()) == {source}


@pytest.mark.parametrize("model", ["supermicro-hgx-h100", "dgx-h100", "lenovo-sr670v2-l40"])
def test_missing_gpu_is_seen_on_every_vendor(rack, server, creds, client_options, model):
    lab = rack([server(1, model=model, faults=("missing_gpu",))])
    (result,) = discover(lab.targets(), creds, _options(client_options))
    assert result.ok and len(result.as_dict()["gpus"]) == 7


def test_two_servers_of_one_vendor_model_are_distinct(rack, server, creds, client_options):
    lab = rack([server(1, model="dgx-h100"), server(2, model="dgx-h100")])
    first, second = discover(lab.targets(), creds, _options(client_options))
    assert first.ok and second.ok  # no duplicate MAC, serial or UUID between them
    assert first.as_dict()["pxe_mac"] != second.as_dict()["pxe_mac"]


def test_undecided_pxe_nic_keeps_every_fact_read(rack, server, creds, client_options):
    """The generic profile has no "first" rule: a Lenovo read with it has no PXE NIC, and the
    result still names the server."""
    lab = rack([server(1, model="lenovo-sr670v2-l40")])
    srv = lab.bmc("gpu01").server
    (result,) = discover(lab.targets(), creds, _options(client_options, vendor="generic"))
    facts = result.as_dict()
    assert not result.ok and result.group == "bmc_malformed"
    assert facts["error_kind"] == "incomplete" and "no NIC matches the PXE rules" in facts["error"]
    assert (facts["serial"], facts["model"], facts["manufacturer"]) == (
        srv.service_tag,
        "ThinkSystem SR670 V2",
        "Lenovo",
    )
    assert len(facts["nics"]) == 4 and len(facts["gpus"]) == 8 and facts["pxe_mac"] is None
    assert facts["vendor"] == "generic"


def test_configured_rules_apply_to_every_vendor(rack, server, creds, client_options):
    lab = rack([server(1, model="dgx-h100")])
    (result,) = discover(lab.targets(), creds, _options(client_options, pxe_rules=("link:up",)))
    facts = result.as_dict()
    assert result.ok and facts["pxe_rule"] == "link:up"
    assert facts["pxe_mac"] == lab.bmc("gpu01").server.pxe_mac  # the captured LinkUp port
