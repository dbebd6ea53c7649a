"""Discovery over a rack of emulated iDRACs: facts, every fault in its group, duplicates, limits."""

from __future__ import annotations

import time

import pytest

from racksmith.lab.bmc.behaviour import Latency, Settings
from racksmith.redfish.client import ClientOptions
from racksmith.redfish.discover import PUBLIC_KEYS, DiscoveryOptions, discover, discover_one


def _options(client_options: ClientOptions, **kw) -> DiscoveryOptions:
    return DiscoveryOptions(client=client_options, **{"deadline": 6.0, **kw})


def test_healthy_hgx_and_r750_facts(rack, server, creds, client_options):
    lab = rack([server(1), server(4, model="r750-h100pcie")])
    hgx, r750 = discover(lab.targets(), creds, _options(client_options))
    assert hgx.ok and r750.ok
    h, r = hgx.as_dict(), r750.as_dict()
    assert list(h)[: len(PUBLIC_KEYS)] == list(PUBLIC_KEYS)  # the CLI test checks the issue keys
    s1 = lab.bmc("gpu01").server
    assert (h["service_tag"], h["serial"], h["uuid"]) == (s1.service_tag, s1.serial, s1.uuid)
    assert h["model"] == "PowerEdge XE9680" and h["manufacturer"] == "Dell Inc."
    assert h["pxe_mac"] == s1.pxe_mac and h["pxe_rule"] == "id:NIC.Integrated.1-1-1"
    assert all(n["mac"] == n["mac"].lower() for n in h["nics"]) and len(h["nics"]) == 5
    assert [g["model"] for g in h["gpus"]] == ["NVIDIA H200"] * 8
    assert [g["serial"] for g in h["gpus"]] == [s1.gpu_serial(n) for n in range(1, 9)]
    assert {g["firmware"] for g in h["gpus"]} == {"96.00.A5.00.1A"}
    assert (h["bmc_firmware"], h["bios_version"], h["error"]) == ("6.00.30.00", "1.8.2", None)
    assert r["model"] == "PowerEdge R750" and [g["model"] for g in r["gpus"]] == [
        "NVIDIA H100 PCIe"
    ]
    assert r["gpus"][0]["firmware"] == "96.00.30.00.01"
    # one session each, logged out
    assert all(b.live_sessions() == 0 and b.stats["sessions_created"] == 1 for b in lab.farm.bmcs)


def test_same_facts_with_and_without_expand(rack, server, creds, client_options):
    lab = rack([server(3)])
    never = ClientOptions(**{**client_options.__dict__, "expand": "never"})
    with_expand = discover(lab.targets(), creds, _options(client_options))[0]
    without = discover(lab.targets(), creds, _options(never))[0]
    assert with_expand.as_dict() == without.as_dict()
    assert with_expand.requests < without.requests


@pytest.mark.parametrize(
    ("fault", "group", "reason"),
    [
        ("bmc_unreachable", "bmc_unreachable", "cannot connect"),
        ("bmc_auth_failed", "bmc_auth_failed", "401"),
        ("bmc_slow", "bmc_timeout", "no answer"),
        ("bmc_hang", "bmc_timeout", "no answer"),
        ("bmc_busy", "bmc_unreachable", "RAC0218"),
        ("bmc_reset", "bmc_unreachable", "reset"),
        ("bmc_malformed", "bmc_malformed", "not a JSON object"),
        ("bmc_empty_systems", "bmc_malformed", "Systems collection is empty"),
    ],
)
def test_each_fault_lands_in_its_group_with_a_reason(
    rack, server, creds, client_options, fault, group, reason
):
    lab = rack([server(1, faults=(fault,))])
    options = _options(
        ClientOptions(**{**client_options.__dict__, "read_timeout": 1.5}), deadline=3.0
    )
    started = time.monotonic()
    (result,) = discover(lab.targets(), creds, options)
    assert not result.ok and result.group == group
    assert reason in result.error.reason
    assert result.as_dict()["error"] == result.error.reason and result.facts is None
    assert time.monotonic() - started < options.deadline + 5  # deadline + logout budget at most
    if fault != "bmc_slow":
        assert lab.farm.bmcs[0].live_sessions() == 0
    # bmc_slow: the BMC created the session but answered after we gave up, so no token ever
    # reached us; like a real iDRAC it keeps that session until its idle timeout.


def test_transient_session_limit_recovers(rack, server, creds, client_options):
    lab = rack([server(1, faults=("bmc_503",))])
    (result,) = discover(lab.targets(), creds, _options(client_options))
    assert result.ok and lab.bmc("gpu01").stats["busy"] == 2


def test_empty_ethernet_interfaces_fall_back_to_device_functions(
    rack, server, creds, client_options
):
    lab = rack([server(2, faults=("bmc_empty_nics",))])
    (result,) = discover(lab.targets(), creds, _options(client_options))
    assert result.ok
    facts = result.as_dict()
    assert facts["pxe_mac"] == lab.bmc("gpu02").server.pxe_mac
    assert [n["id"] for n in facts["nics"]] == [
        "NIC.Embedded.1-1-1",
        "NIC.Embedded.2-1-1",
        "NIC.Integrated.1-1-1",
        "NIC.Integrated.1-2-1",
    ]
    assert any("NetworkDeviceFunctions" in note for note in facts["notes"])


def test_missing_gpu_is_reported_not_hidden(rack, server, creds, client_options):
    lab = rack([server(5, faults=("missing_gpu",))])
    (result,) = discover(lab.targets(), creds, _options(client_options))
    assert result.ok  # the BMC is fine; triage (discover.yml) quarantines the host
    assert [g["id"] for g in result.as_dict()["gpus"]] == [f"Video.Slot.{n}-1" for n in range(1, 8)]


def test_no_pxe_nic_fails_closed(rack, server, creds, client_options):
    lab = rack([server(1)])
    (result,) = discover(
        lab.targets(), creds, _options(client_options, pxe_rules=("id:NIC.Slot.9-1",))
    )
    assert result.group == "bmc_malformed" and "PXE rules" in result.error.reason


def test_duplicates_are_flagged_not_merged(rack, server, creds, client_options):
    # Two BMCs with one identity (a cloned board, a swapped iDRAC), plus a healthy third.
    lab = rack([server(7, name="a"), server(7, name="b"), server(8, name="c")])
    results = discover(lab.targets(), creds, _options(client_options))
    assert [r.group for r in results] == ["bmc_duplicate", "bmc_duplicate", "bmc_ok"]
    a, b, _ = results
    assert str(lab.target("b")) in a.error.reason and str(lab.target("a")) in b.error.reason
    assert "MAC" in a.error.reason and "serial" in a.error.reason
    assert a.facts is not None  # facts kept for the operator


def test_extras_collect_firmware_infiniband_pcie_memory(rack, server, creds, client_options):
    lab = rack([server(4, model="r750-h100pcie")])
    extras = frozenset({"firmware", "infiniband", "pcie", "memory"})
    (result,) = discover(lab.targets(), creds, _options(client_options, extras=extras))
    facts = result.as_dict()
    assert len(facts["firmware"]) == 29 and facts["infiniband"][0]["id"] == "InfiniBand.Slot.7"
    assert len(facts["pcie_devices"]) == len({d["id"] for d in facts["pcie_devices"]})
    assert sum(m["capacity_mib"] for m in facts["memory_modules"]) == 512 * 1024


def test_concurrency_bound_and_wall_time(rack, server, creds, client_options):
    # 8 BMCs at 0.2 s per request, 4 workers: two rounds of R requests each.
    lab = rack([server(i) for i in range(1, 9)], settings=Settings(latency=Latency(0.2, 0.2)))
    started = time.monotonic()
    results = discover(lab.targets(), creds, _options(client_options, concurrency=4))
    wall = time.monotonic() - started
    requests = results[0].requests
    assert all(r.ok for r in results)
    model = 2 * requests * 0.2
    assert model * 0.95 <= wall <= model * 1.6, (wall, model)


def test_discover_one_never_raises(creds, client_options):
    from racksmith.redfish.targets import Target

    result = discover_one(Target("127.0.0.1", 9), creds, _options(client_options))  # discard port
    assert not result.ok and result.group == "bmc_unreachable"
