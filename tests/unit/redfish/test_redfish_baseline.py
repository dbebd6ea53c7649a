"""Baselines and compliance verdicts over real discovery results.

The host results come from discovering the real captures (sushy-static, real client, extras
firmware and bios). Where a test needs a host that differs from the capture (an older VBIOS, a
staged image, a pending BIOS value) it copies the real result and changes one named value, and
says so; versions and attribute values are the captured ones. The attribute registry is
sushy-tools' own (the emulator's ``bios_registry.json``, in the installed package).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import sushy_tools

from racksmith.redfish import baseline as bl
from racksmith.redfish import parse
from racksmith.redfish.discover import BmcResult

EXTRAS = frozenset({"firmware", "bios"})


@pytest.fixture
def result(discover_capture):
    """``result(capture)``: a real capture's discovery result (``BmcResult.as_dict()``), a copy
    the test may edit."""

    def get(capture: str) -> dict:
        (outcome,), _ = discover_capture(capture, EXTRAS)
        return copy.deepcopy(BmcResult(capture, outcome.facts, outcome.error).as_dict())

    return get


def _set_version(res: dict, component: str, version: str, role: str = "active") -> None:
    (item,) = [f for f in res["firmware"] if f["component"] == component and f["role"] == role]
    item["version"] = version


DGX = {
    "name": "dgx-h100",
    "match": {"vendor": "nvidia-dgx", "model": "DGXH100"},
    "firmware": [
        {"component": "HGX_FW_GPU_SXM_*", "minimum": "96.00.89.00.01", "target": "96.00.89.00.01"},
        {"component": "HGX_FW_NVSwitch_*", "target": "96.10.55.00.01"},
    ],
    "bios": {"VTdSupport": "Enable"},
}


def baseline(*types: dict, **top) -> bl.Baseline:
    return bl.parse_baseline({"host_types": list(types), **top}, "test-baseline")


def _nvswitch_version(result) -> str:
    (item,) = [f for f in result("nvidia-dgx-h100")["firmware"] if f["id"] == "HGX_FW_NVSwitch_0"]
    return item["version"]


def test_captured_dgx_is_compliant_with_its_own_versions(result):
    nvswitch = {**DGX["firmware"][1], "target": _nvswitch_version(result)}
    dgx = dict(DGX, firmware=[DGX["firmware"][0], nvswitch])
    (verdict,) = bl.evaluate([result("nvidia-dgx-h100")], baseline(dgx))
    assert verdict.status == bl.COMPLIANT and not verdict.quarantined, verdict
    names = {f.name for f in verdict.findings}
    assert {f"HGX_FW_GPU_SXM_{n}" for n in range(1, 9)} <= names and "VTdSupport" in names


def test_older_vbios_drifts_and_quarantines_with_the_components_named(result):
    host = result("nvidia-dgx-h100")
    _set_version(host, "HGX_FW_GPU_SXM_3", "96.00.61.00.01")  # Supermicro's captured VBIOS
    dgx = dict(DGX, firmware=[DGX["firmware"][0]])
    (verdict,) = bl.evaluate([host], baseline(dgx, fleet_same_hgx=True))
    assert verdict.status == bl.DRIFT and verdict.quarantined
    (gpu3,) = [f for f in verdict.findings if f.name == "HGX_FW_GPU_SXM_3" and f.what == "firmware"]
    assert (gpu3.current, gpu3.wanted, gpu3.action, gpu3.activation) == (
        "96.00.61.00.01",
        "96.00.89.00.01",
        "upgrade",
        "ac-cycle",
    )
    assert "QUARANTINED: drift in HGX_FW_GPU_SXM_3" in verdict.reasons
    warned = bl.evaluate([host], baseline(dict(dgx, on_drift="warn")))[0]
    assert warned.status == bl.DRIFT and not warned.quarantined
    assert "warning: drift in HGX_FW_GPU_SXM_3" in warned.reasons


def test_newer_than_target_is_a_downgrade_unless_allowed(result):
    dgx = dict(
        DGX, bios={}, firmware=[{"component": "HGX_FW_GPU_SXM_*", "target": "96.00.61.00.01"}]
    )
    (verdict,) = bl.evaluate([result("nvidia-dgx-h100")], baseline(dgx))
    assert verdict.status == bl.DRIFT
    assert {f.action for f in verdict.findings} == {"downgrade"}
    dgx["firmware"][0]["allow_newer"] = True
    assert bl.evaluate([result("nvidia-dgx-h100")], baseline(dgx))[0].status == bl.COMPLIANT


def test_between_minimum_and_target_is_compliant_with_an_upgrade_advised(result):
    rule = {
        "component": "HGX_FW_GPU_SXM_1",
        "minimum": "96.00.61.00.01",
        "target": "96.00.A5.00.1A",
    }
    (verdict,) = bl.evaluate(
        [result("nvidia-dgx-h100")], baseline(dict(DGX, bios={}, firmware=[rule]))
    )
    assert verdict.status == bl.COMPLIANT
    assert verdict.findings[0].action == "upgrade"


def test_a_staged_target_is_pending(result):
    host = result("supermicro-hgx-h100")
    _set_version(host, "BMC", "01.00.26")  # the captured Golden_BMC version, as if running
    smc = {
        "name": "smc-hgx",
        "match": {"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"},
        "firmware": [{"component": "BMC", "target": "11.01.01"}],  # Staging_BMC holds 11.01.01
    }
    (verdict,) = bl.evaluate([host], baseline(smc))
    assert verdict.status == bl.PENDING and not verdict.quarantined
    (finding,) = verdict.findings
    assert (finding.pending, finding.activation) == ("11.01.01", "bmc-reset")


def test_fleet_rule_names_the_host_off_the_fleet_version(result):
    hosts = [result("nvidia-dgx-h100") for _ in range(3)]
    for i, host in enumerate(hosts):
        host["service_tag"] = f"DGX-{i}"
    _set_version(hosts[2], "HGX_FW_PCIeRetimer_0", "2.7.9")  # Supermicro's captured retimer
    dgx = dict(DGX, firmware=[], bios={})  # no rule for the retimer: only the fleet rule
    verdicts = bl.evaluate(hosts, baseline(dgx))
    assert [v.status for v in verdicts] == [bl.COMPLIANT, bl.COMPLIANT, bl.DRIFT]
    (finding,) = verdicts[2].findings
    assert (finding.what, finding.name, finding.current, finding.wanted, finding.action) == (
        "fleet",
        "HGX_FW_PCIeRetimer_0",
        "2.7.9",
        "2.7.20",
        "upgrade",
    )
    assert "2 at 2.7.20, 1 at 2.7.9" in finding.reason
    off = bl.evaluate(hosts, baseline(dict(dgx, fleet_same_hgx=False)))
    assert {v.status for v in off} == {bl.COMPLIANT}


def test_unreadable_inventory_is_unknown_never_compliant(result):
    intel = result("intel-s2600bpb")  # no UpdateService/FirmwareInventory in the capture
    assert "unreadable" in intel["firmware_error"]
    rule = {"component": "BIOS", "target": "x"}
    node = {"name": "intel", "match": {"model": "S2600BPB"}, "firmware": [rule]}
    (verdict,) = bl.evaluate([intel], baseline(node))
    assert verdict.status == bl.UNKNOWN and "firmware inventory unreadable" in verdict.reasons[0]
    host = result("nvidia-dgx-h100")
    del host["firmware"]
    assert bl.evaluate([host], baseline(DGX))[0].status == bl.UNKNOWN
    other = bl.evaluate([result("lenovo-sr670v2")], baseline(DGX))[0]
    assert other.status == bl.UNKNOWN and other.host_type is None
    missing = dict(DGX, firmware=[{"component": "NoSuchThing_*", "target": "1"}], bios={})
    assert bl.evaluate([result("nvidia-dgx-h100")], baseline(missing))[0].status == bl.UNKNOWN


def test_bios_current_and_pending_values(result):
    dell = result("dell-idrac9")
    assert dell["bios"]["settings_uri"].endswith("/Bios/Settings") and dell["bios"]["pending"] == {}
    assert dell["bios"]["current"]["SysProfile"] == "PerfOptimized"
    r750 = {"name": "r750", "match": {"vendor": "dell"}, "bios": {"SysProfile": "PerfOptimized"}}
    assert bl.evaluate([dell], baseline(r750))[0].status == bl.COMPLIANT
    pending = copy.deepcopy(dell)
    pending["bios"]["pending"] = {"SysProfile": "Custom"}  # a stale pending value
    (verdict,) = bl.evaluate([pending], baseline(r750))
    assert (
        verdict.status == bl.DRIFT and "pending value would replace" in verdict.findings[0].reason
    )
    wanted = {"name": "r750", "match": {"vendor": "dell"}, "bios": {"SysProfile": "Custom"}}
    assert bl.evaluate([pending], baseline(wanted))[0].status == bl.PENDING
    pending["bios"]["pending_known"] = False
    assert bl.evaluate([pending], baseline(wanted))[0].status == bl.UNKNOWN
    del pending["bios"]
    assert bl.evaluate([pending], baseline(wanted))[0].status == bl.UNKNOWN


def test_pending_values_are_only_those_that_differ():
    bios = {"@odata.id": "/b", "Attributes": {"A": 1, "B": "x"}}
    assert parse.parse_bios(bios, {"Attributes": {"A": 1, "B": "y"}}).pending == {"B": "y"}


def test_dell_registry_is_read_and_checks_the_baseline(result):
    """The real iDRAC registry (682 attributes): its file entry is BiosAttributeRegistry.v1_0_0,
    the registry it locates is the v1_0_3 the Bios resource names."""
    dell = result("dell-idrac9")
    registry = dell["bios"]["registry"]
    assert dell["bios"]["registry_id"] == "BiosAttributeRegistry.v1_0_3" and len(registry) == 682
    problems = bl.registry_problems(
        {"SysProfile": "Turbo", "LogicalProc": "Disabled", "NoSuchAttr": 1}, registry
    )
    assert set(problems) == {"SysProfile", "NoSuchAttr"}
    assert "PerfOptimized" in problems["SysProfile"]
    bad = {"name": "r750", "match": {"vendor": "dell"}, "bios": {"SysProfile": "Turbo"}}
    (verdict,) = bl.evaluate([dell], baseline(bad))
    assert verdict.status == bl.UNKNOWN
    assert verdict.reasons[0].startswith("baseline BIOS attribute SysProfile: 'Turbo' is not")
    good = {"name": "r750", "match": {"vendor": "dell"}, "bios": {"LogicalProc": "Enabled"}}
    assert bl.evaluate([dell], baseline(good))[0].status == bl.COMPLIANT


def test_registry_bounds_and_read_only():
    """sushy-tools' emulator registry (its bios_registry.json), for the types iDRAC's lacks."""
    path = Path(sushy_tools.__file__).parent / "emulator" / "templates" / "bios_registry.json"
    registry = parse.registry_entries(json.loads(path.read_text()))
    assert "ProcTurboMode" in registry
    problems = bl.registry_problems(
        {
            "ProcTurboMode": "Enabled",
            "BootMode": "Sideways",
            "NumCores": 12,  # read-only (bounds 10..20)
            "QuietBoot": "yes",
            "SecureBootStatus": "Enabled",  # read-only
        },
        registry,
    )
    assert problems == {
        "BootMode": "'Sideways' is not one of ['Bios', 'Uefi']",
        "NumCores": "read-only in the attribute registry",
        "QuietBoot": "'yes' is not true or false",
        "SecureBootStatus": "read-only in the attribute registry",
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "host_types list"),
        ({"host_types": [{"name": "a", "match": {}}]}, "match must name"),
        ({"host_types": [{"name": "a", "match": {"colour": "x"}}]}, "match takes"),
        (
            {
                "host_types": [
                    {"name": "a", "match": {"model": "m"}, "firmware": [{"component": "X"}]}
                ]
            },
            "X.*give a minimum, a target or both",
        ),
        (
            {
                "host_types": [
                    {
                        "name": "a",
                        "match": {"model": "m"},
                        "firmware": [{"component": "X", "minimum": "2", "target": "1"}],
                    }
                ]
            },
            "minimum 2 is newer than target 1",
        ),
        ({"on_drift": "ignore", "host_types": []}, "on_drift"),
    ],
)
def test_baseline_mistakes_name_the_entry(doc, message):
    with pytest.raises(bl.BaselineError, match=message):
        bl.parse_baseline(doc, "site.yml")


def test_load_baseline_file_and_report(tmp_path, result):
    path = tmp_path / "baseline.yml"
    path.write_text(
        "host_types:\n"
        "  - name: dgx-h100\n"
        "    match: {vendor: nvidia-dgx}\n"
        "    firmware:\n"
        "      - {component: 'HGX_FW_GPU_SXM_*', target: '96.00.89.00.01'}\n"
    )
    hosts = [result("nvidia-dgx-h100"), result("supermicro-hgx-h100")]
    report = bl.report(hosts, bl.load_baseline(path))
    assert report["summary"] == {bl.COMPLIANT: 1, bl.UNKNOWN: 1}
    rows = {(r["component"], r["version"]): r["hosts"] for r in report["matrix"]}
    assert rows[("HGX_FW_GPU_SXM_1", "96.00.89.00.01")] == 1
    assert rows[("HGX_FW_GPU_SXM_1", "96.00.61.00.01")] == 1
    json.dumps(report)  # plain JSON
    with pytest.raises(bl.BaselineError, match=r"nope\.yml"):
        bl.load_baseline(tmp_path / "nope.yml")


def test_quarantine_reasons_from_inventory_host_variables(result):
    """What the discover phase gets: the inventory's redfish_* host variables in, one reason per
    quarantined host out, naming each drifted component, versions, action and activation."""
    hostvars = {}
    for name in ("gpu01", "gpu02"):
        host = result("nvidia-dgx-h100")
        hostvars[name] = {f"redfish_{k}": v for k, v in host.items()} | {"ansible_host": "x"}
    hostvars["gpu02"]["redfish_service_tag"] = "OTHER"
    (gpu3,) = [
        f for f in hostvars["gpu02"]["redfish_firmware"] if f["component"] == "HGX_FW_GPU_SXM_3"
    ]
    gpu3["version"] = "96.00.61.00.01"
    results = bl.results_from_hostvars(hostvars)
    assert [r["inventory_host"] for r in results] == ["gpu01", "gpu02"]
    dgx = dict(DGX, firmware=[DGX["firmware"][0]], bios={})
    assert bl.quarantine_reasons(results, baseline(dgx)) == {
        "gpu02": "firmware/BIOS drift from baseline: "
        "HGX_FW_GPU_SXM_3 96.00.61.00.01 -> 96.00.89.00.01 (upgrade, ac-cycle)"
    }


def test_phase_verdicts_warn_on_unknown_and_on_warned_drift(result):
    ok, unread = result("nvidia-dgx-h100"), result("nvidia-dgx-h100")
    unread["service_tag"], unread["inventory_host"] = "OTHER", "gpu09"
    del unread["firmware"]
    dgx = dict(DGX, firmware=[DGX["firmware"][0]], bios={})
    verdicts = bl.phase_verdicts([ok, unread], baseline(dgx))
    assert verdicts["quarantine"] == {}
    assert verdicts["warn"] == {
        "gpu09": "firmware/BIOS compliance UNKNOWN: "
        "firmware inventory not read (discovery extra 'firmware')"
    }
    drifted = result("nvidia-dgx-h100")
    _set_version(drifted, "HGX_FW_GPU_SXM_1", "96.00.61.00.01")
    warned = bl.phase_verdicts([drifted], baseline(dict(dgx, on_drift="warn")))
    assert warned["quarantine"] == {} and "HGX_FW_GPU_SXM_1" in warned["warn"]["1662923610124"]


def test_a_bmc_that_gave_no_facts_is_unknown_for_that_reason():
    """Not "no host type matches vendor None": the lab's gpu07 (credentials rejected)."""
    failed = {"bmc": "127.0.0.1:8449", "error": "login: HTTP 401 (credentials rejected)"}
    (verdict,) = bl.evaluate([failed], baseline(DGX))
    assert verdict.status == bl.UNKNOWN
    assert verdict.reasons == ("the BMC could not be read: login: HTTP 401 (credentials rejected)",)


def test_a_baseline_is_a_file_or_the_document_itself(tmp_path):
    doc = {"host_types": [DGX]}
    assert bl.load(doc).types[0].name == DGX["name"]
    assert bl.load(doc).source == "racksmith_firmware_baseline (inline)"
    with pytest.raises(bl.BaselineError, match="a file or a mapping"):
        bl.load(["not", "a", "baseline"])
    with pytest.raises(bl.BaselineError, match=r"nope\.yml"):
        bl.load(str(tmp_path / "nope.yml"))
