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


# -- what the discover phase does with a host's report (bmc_health.problems) ----------------------


def test_a_healthy_report_lets_the_host_go_on_and_a_finding_names_its_cause(docs):
    ok = bmc_health.report([])
    assert bmc_health.problems(ok) == []
    entry = {
        **docs["lclog"][0],
        "Severity": "Critical",
        "MessageId": "IDRAC.2.7.PSU0003",
        "Message": "The power input for power supply 2 is lost.",
        "Created": "2024-08-08T19:00:00-05:00",
    }
    failed = bmc_health.report(bmc_health.log_findings([entry], log="Lclog"))
    assert bmc_health.problems(failed) == [
        f"BMC health (psu_fault): Lclog {entry['Id']}: Critical IDRAC.2.7.PSU0003 at "
        "2024-08-08T19:00:00-05:00: The power input for power supply 2 is lost."
    ]
    # the phase's knobs: older entries and the site's harmless ones do not count
    assert bmc_health.host_problems(failed, "2024-08-09T00:00:01Z") == []  # 1 s after it
    assert bmc_health.host_problems(failed, "", ["PSU0003"]) == []
    assert bmc_health.host_problems(failed, "2024-08-08T00:00:00+00:00", ["SWC"]) != []


def test_anything_unread_is_unknown_never_healthy():
    unknown = "BMC health (bmc_error): UNKNOWN"
    assert bmc_health.problems(None)[0].startswith(f"{unknown}: not read")
    assert bmc_health.problems("OK")[0].startswith(f"{unknown}: unusable report")
    partial = {"status": "UNKNOWN", "findings": [], "unread": ["/redfish/v1/X: http_error"]}
    assert bmc_health.problems(partial) == [f"{unknown}: could not read /redfish/v1/X: http_error"]
    # beside a finding, the unread part is said on its line: the finding's cause stays primary
    found = {
        "status": "UNKNOWN",
        "findings": [{"cause": "psu_fault", "source": "health", "what": "PSU 2", "detail": "x"}],
        "unread": ["/redfish/v1/X: timeout"],
    }
    assert bmc_health.problems(found) == [
        "BMC health (psu_fault): PSU 2: x (and UNKNOWN: could not read /redfish/v1/X: timeout)"
    ]
    assert bmc_health.problems({"status": "maybe", "findings": []}) == [
        f"{unknown}: status 'maybe'"
    ]
    assert bmc_health.problems({"status": "FAILED", "findings": []}) == [
        f"{unknown}: FAILED without findings"
    ]


def test_bad_site_settings_are_errors_naming_them():
    with pytest.raises(ValueError, match="give a UTC offset"):
        bmc_health.host_problems(bmc_health.report([]), "2024-08-08T00:00:00")
    with pytest.raises(ValueError, match="not an ISO 8601 time"):
        bmc_health.host_problems(bmc_health.report([]), "yesterday")
    with pytest.raises(ValueError, match="must be a list"):
        bmc_health.host_problems(bmc_health.report([]), "", "PSU0003")
    with pytest.raises(ValueError, match=re.escape("BMC log allow pattern '('")):
        bmc_health.host_problems(bmc_health.report([]), "", ["("])


def test_a_cpu_dts_margin_is_not_a_temperature():
    """The real Lenovo XCC capture reports ``CPU 1 DTS`` at -51 beside ``CPU 1 Temp`` at 27 C: a
    margin below the throttle point, not a broken sensor."""
    import json

    from racksmith.lab.bmc.tree import DATA_DIR

    thermal = json.loads(
        (DATA_DIR / "lenovo-sr670v2/redfish/v1/Chassis/1/Thermal/index.json").read_text()
    )
    dts = [t for t in thermal["Temperatures"] if t["Name"].endswith("DTS")]
    assert dts and all(t["ReadingCelsius"] < -20 for t in dts)
    assert bmc_health.sensor_findings(thermal, None) == []
    broken = copy.deepcopy(thermal)
    next(t for t in broken["Temperatures"] if t["Name"] == "CPU 1 Temp")["ReadingCelsius"] = -51
    assert [f.what for f in bmc_health.sensor_findings(broken, None)] == ["CPU 1 Temp"]
