"""Discovery's extra ``bmc_health`` against the lab's emulated BMCs (the real captures behind
sushy-static, racksmith's behaviour layer): the healthy lab models read OK, the demo rack's
faults read as what they stand for (``bmc_sel_psu``: a Critical log entry, cause psu_fault;
``firmware_old``: a BIOS behind the lab baseline), and a log the BMC will not serve leaves the
host UNKNOWN, never healthy."""

from __future__ import annotations

import yaml

from racksmith.lab.bmc import logs
from racksmith.lab.bmc.updates import OLD_BIOS
from racksmith.lab.spec import DEFAULT_SPEC
from racksmith.redfish import baseline as bl
from racksmith.redfish import bmc_health
from racksmith.redfish.discover import DiscoveryOptions, discover

EXTRAS = frozenset({"firmware", "bmc_health"})


def _read(rack, servers, creds, client_options):
    farm = rack(servers)
    results = discover(
        farm.targets(), creds, DiscoveryOptions(client=client_options, extras=EXTRAS, deadline=60)
    )
    return farm, {b.server.name: r.as_dict() for b, r in zip(farm.farm.bmcs, results, strict=True)}


def test_healthy_lab_models_read_ok_and_the_faults_read_as_they_stand_for(
    rack, server, creds, client_options
):
    servers = [
        server(1, "hgx-h200-8gpu", name="ok-dell"),
        server(2, "supermicro-hgx-h100", name="ok-smc"),
        server(3, "dgx-h100", name="ok-dgx"),
        server(4, "hgx-h200-8gpu", ("bmc_sel_psu",), name="psu"),
        server(5, "hgx-h200-8gpu", ("firmware_old",), name="old"),
    ]
    farm, found = _read(rack, servers, creds, client_options)
    for name in ("ok-dell", "ok-smc", "ok-dgx", "old"):
        assert found[name]["error"] is None, found[name]["error"]
        assert found[name]["bmc_health"] == {"status": "OK", "causes": [], "findings": []}, name
        assert bmc_health.problems(found[name]["bmc_health"]) == []
    psu = found["psu"]["bmc_health"]
    assert (psu["status"], psu["causes"]) == ("FAILED", ["psu_fault"])
    [reason] = bmc_health.problems(psu)
    assert reason.startswith(f"BMC health (psu_fault): Lclog {logs.PSU_ENTRY_ID}: Critical ")
    assert logs.PSU_MESSAGE in reason
    # the Supermicro and DGX captures hold no log services: the lab serves marked stand-ins
    smc = farm.bmc("ok-smc")
    assert logs.STAND_IN in str(smc.logs.resource("/redfish/v1/Managers/1/LogServices/Log"))
    assert found["old"]["bios_version"] == OLD_BIOS
    # the lab's own baseline (inventory/lab/group_vars/all/firmware.yml) sees exactly "old" drift
    group_vars = DEFAULT_SPEC.parent / "group_vars" / "all" / "firmware.yml"
    baseline = bl.load(yaml.safe_load(group_vars.read_text())["racksmith_firmware_baseline"])
    verdicts = {
        name: v.status
        for name, v in zip(found, bl.evaluate(list(found.values()), baseline), strict=True)
    }
    assert verdicts == {
        "ok-dell": bl.COMPLIANT,
        "ok-smc": bl.COMPLIANT,
        "ok-dgx": bl.COMPLIANT,
        "psu": bl.COMPLIANT,
        "old": bl.DRIFT,
    }


def test_a_log_the_bmc_will_not_serve_leaves_the_host_unknown(rack, server, creds, client_options):
    farm = rack([server(1, "hgx-h200-8gpu", name="nolog")])
    entries = "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel/Entries"
    farm.bmc("nolog")._hidden.add(entries)  # the BMC answers 404 for its own SEL's entries
    [result] = discover(
        farm.targets(),
        creds,
        DiscoveryOptions(client=client_options, extras=EXTRAS, deadline=60),
    )
    health = result.as_dict()["bmc_health"]
    assert health["status"] == "UNKNOWN"
    assert health["unread"] == [f"{entries}: http_error"]
    assert bmc_health.problems(health) == [
        f"BMC health (bmc_error): UNKNOWN: could not read {entries}: http_error"
    ]
