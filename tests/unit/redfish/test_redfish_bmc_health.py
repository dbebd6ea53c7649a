"""BMC health from the BMC's own documents, on the real iDRAC9 capture: its SEL (OEM diagnostic
events, severity OK), its Lifecycle log (one Critical entry, SWC9005, harmless), Health rollups
and sensors all OK; then the same documents with one value changed per case (each change says
what real failure it stands for)."""

from __future__ import annotations

import copy
import re
from datetime import datetime

import pytest

from racksmith.redfish import bmc_health
from racksmith.triage.causes import CAUSES

MANAGER = "/redfish/v1/Managers/iDRAC.Embedded.1"
CHASSIS = "/redfish/v1/Chassis/System.Embedded.1"


@pytest.fixture(scope="module")
def docs(capture):
    return {
        "sel": capture.members(f"{MANAGER}/LogServices/Sel/Entries"),
        "lclog": capture.members(f"{MANAGER}/LogServices/Lclog/Entries"),
        "system": capture.load("/redfish/v1/Systems/System.Embedded.1"),
        "chassis": capture.load(CHASSIS),
        "power": capture.load(f"{CHASSIS}/Power"),
        "thermal": capture.load(f"{CHASSIS}/Thermal"),
    }


def test_the_captured_idrac_is_healthy_once_its_harmless_entry_is_allowed(docs):
    findings = (
        bmc_health.log_findings(docs["sel"], log="Sel")
        + bmc_health.log_findings(docs["lclog"], log="Lclog")
        + bmc_health.health_findings(
            docs["system"], docs["chassis"], docs["power"], docs["thermal"]
        )
        + bmc_health.sensor_findings(docs["thermal"], docs["power"])
    )
    assert bmc_health.report(findings) == {"status": "OK", "causes": [], "findings": []}
    # without the allow-list, the Lifecycle log's Critical SWC9005 counts
    counted = bmc_health.log_findings(docs["lclog"], allow=[], log="Lclog")
    assert [f.detail.split(" at ")[0] for f in counted] == ["Critical IDRAC.2.7.SWC9005"]


def test_an_entry_since_counts_and_older_ones_do_not(docs):
    entry = {
        **docs["lclog"][0],
        "Severity": "Critical",
        "MessageId": "IDRAC.2.7.PSU0003",
        "Message": "Power supply 2 is lost.",
        "Created": "2024-08-08T19:00:00-05:00",
    }
    since = datetime.fromisoformat("2024-08-08T18:50:00-05:00")
    found = bmc_health.log_findings([entry], since=since)
    assert [(f.cause, f.source) for f in found] == [("psu_fault", "log")]
    assert (
        bmc_health.log_findings([entry], since=datetime.fromisoformat("2024-08-09T00:00:00-05:00"))
        == []
    )
    site = bmc_health.allow_patterns([r"PSU0003"])
    assert bmc_health.log_findings([entry], allow=site) == []
    with pytest.raises(ValueError, match=re.escape("allow pattern '('")):
        bmc_health.allow_patterns(["("])


def test_health_rollups_and_sensor_sanity(docs):
    power = copy.deepcopy(docs["power"])
    power["PowerSupplies"][1]["Status"]["Health"] = "Critical"  # a failed PSU
    power["Redundancy"] = [{"Name": "PSU Redundancy", "Status": {"Health": "Warning"}}]
    thermal = copy.deepcopy(docs["thermal"])
    thermal["Temperatures"][2]["ReadingCelsius"] = 255  # a sensor reading nonsense
    for fan in thermal["Fans"]:  # fans at full speed in a cool chassis
        fan.update(Reading=100, ReadingUnits="Percent")
    system = copy.deepcopy(docs["system"])
    system["Status"]["HealthRollup"] = "Critical"
    findings = bmc_health.health_findings(system, docs["chassis"], power, thermal)
    findings += bmc_health.sensor_findings(thermal, power)
    got = [(f.cause, f.source, f.what) for f in findings]
    assert got == [
        ("hardware_critical", "health", "system"),
        ("psu_fault", "health", "PS2 Status"),
        ("thermal", "sensor", "System Board Inlet Temp"),
        ("thermal", "sensor", "fans"),
        ("psu_fault", "sensor", "PSU Redundancy"),
    ]
    report = bmc_health.report(findings)
    assert report["status"] == "FAILED"
    assert set(report["causes"]) <= set(CAUSES)  # every cause is one triage knows


def test_rpm_without_a_maximum_is_not_judged(docs):
    assert all(f.what != "fans" for f in bmc_health.sensor_findings(docs["thermal"], None))


def test_read_one_emulated_idrac(rack, server, creds, client_options):
    from racksmith.redfish.client import RedfishClient

    lab = rack([server(1, model="r750-h100pcie")])
    with RedfishClient(lab.target("gpu01"), creds, client_options) as c:
        healthy = bmc_health.read(c)
    # every log (Sel, Lclog, FaultList), the rollups and the sensors were read; the one
    # Critical entry of the Lifecycle log is the built-in harmless SWC9005
    assert healthy == {"status": "OK", "causes": [], "findings": []}
    assert lab.bmc("gpu01").stats["status_404"] == 0
