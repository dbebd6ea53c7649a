"""The discover and preflight decisions (racksmith.phases) and their filter plugins."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.macs import normalize_mac, require_mac
from racksmith.phases.discover import clock_problem, clock_problems, hardware_problems, verdicts
from racksmith.phases.preflight import duplicate_identities, mac_mismatches
from racksmith.redfish import bmc_health
from racksmith.testing.plugins import plugin_filters

H200 = {"gpus": 8, "gpu_model": "NVIDIA H200"}


def _facts(n=8, model="NVIDIA H200", **extra):
    gpus = [{"id": f"Video.Slot.{i}-1", "model": model} for i in range(1, n + 1)]
    return {"redfish_model": "PowerEdge XE9680", "redfish_gpus": gpus, **extra}


def test_hardware_as_expected_has_no_problem():
    assert hardware_problems(_facts(), {"PowerEdge XE9680": H200}) == []


def test_missing_gpu_is_named_with_the_ids_seen():
    problems = hardware_problems(_facts(7), {"PowerEdge XE9680": H200})
    assert problems == [
        "expected 8 GPUs, BMC reports 7 ("
        + ", ".join(f"Video.Slot.{i}-1" for i in range(1, 8))
        + ")"
    ]


def test_foreign_gpu_model_and_critical_health_are_both_reported():
    facts = _facts()
    facts["redfish_gpus"][3]["model"] = "NVIDIA H100"
    facts["redfish_health"] = "Critical"
    assert hardware_problems(facts, {"PowerEdge XE9680": H200}) == [
        "unexpected GPU model(s) NVIDIA H100, expected NVIDIA H200",
        "BMC health rollup is Critical",
    ]


def test_unknown_model_fails_closed():
    facts = _facts()
    facts["redfish_model"] = "PowerEdge XE8640"
    assert hardware_problems(facts, {"PowerEdge XE9680": H200}) == [
        "no hardware expectation for model PowerEdge XE8640 (set racksmith_expected_hardware)"
    ]


def test_default_table_is_used_when_site_sets_none():
    assert hardware_problems(_facts()) == []


@pytest.mark.parametrize("gpus", [None, "8", 8])
def test_unusable_gpu_list_is_a_problem(gpus):
    assert hardware_problems({"redfish_model": "PowerEdge XE9680", "redfish_gpus": gpus}) != []


def test_bad_expectation_is_reported_not_raised():
    problems = hardware_problems(_facts(), {"PowerEdge XE9680": {"gpus": "eight"}})
    assert problems == ["expectation for PowerEdge XE9680 has a non-integer gpus: 'eight'"]


def test_clock_within_skew_is_fine():
    assert clock_problem({"changed": False, "skew_seconds": 1.0, "skewed": False}, 5) == ""


def test_clock_refused_is_a_problem_even_though_the_task_did_not_fail():
    # What the module returns for a BMC that refuses the PATCH, registered with
    # failed_when: false: Ansible's `failed` is False, so the old playbook let it through.
    result = {"failed": False, "msg": "BMC 127.0.0.1:8452: PATCH DateTime: HTTP 400 (NTP is on)"}
    assert clock_problem(result, 5) == (
        "BMC clock could not be checked or set: BMC 127.0.0.1:8452: PATCH DateTime: "
        "HTTP 400 (NTP is on)"
    )


def test_clock_failed_or_missing_reading_fails_closed():
    assert clock_problem({"failed": True, "msg": "timeout"}, 5).startswith("BMC clock could not")
    assert clock_problem({}, 5) == "BMC clock could not be checked or set: no reading returned"
    assert clock_problem({"skew_seconds": "3"}, 5).startswith("BMC clock could not")
    assert clock_problem({"skew_seconds": True}, 5).startswith("BMC clock could not")


def test_clock_left_skewed_is_a_problem():
    result = {"skew_seconds": 11820.0, "skewed": True, "msg": "skew +11820s exceeds 5s"}
    assert (
        clock_problem(result, 5)
        == "BMC clock off by +11820 s and not corrected (skew +11820s exceeds 5s)"
    )
    assert clock_problem({"skew_seconds": -9.0}, 5).startswith("BMC clock off by -9 s")


# -- the phase's judgements, once for the play (verdicts, clock_problems) ------------------------

BASELINE = {
    "host_types": [
        {
            "name": "xe9680",
            "match": {"vendor": "dell"},
            "firmware": [{"component": "BIOS.Setup.1-1", "minimum": "1.9.0", "target": "1.9.0"}],
        }
    ]
}
EXPECTED = {"PowerEdge XE9680": H200}
BIOS_DRIFT = "firmware/BIOS drift from baseline: BIOS.Setup.1-1 1.8.2 -> 1.9.0 (upgrade, reboot)"
HEALTH_UNREAD = "BMC health (bmc_error): UNKNOWN: not read (discovery needs the extra bmc_health)"


def _server(tag, gpus=8, bios="1.9.0", health=True):
    """One server's redfish_* host variables: its GPUs, its BIOS version, its BMC's health view
    (a clean report, or none read)."""
    firmware = [{"id": "BIOS.Setup.1-1", "component": "BIOS.Setup.1-1", "version": bios}]
    facts = _facts(gpus, redfish_vendor="dell", redfish_service_tag=tag)
    facts["redfish_firmware"] = [dict(f, role="active", name="BIOS") for f in firmware]
    if health:
        facts["redfish_bmc_health"] = bmc_health.report([])
    return facts


def _rack():
    return {
        "ok": _server("A"),
        "gpu7": _server("B", gpus=7, bios="1.8.2", health=False),  # fails all three
        "old": _server("C", bios="1.8.2", health=False),  # fails firmware and health
        "mute": _server("D", health=False),  # fails health only
        "tagged": _server("E", bios="1.8.2", health=False),  # the inventory's quarantine
    }


def test_a_healthy_fleet_has_no_verdict():
    rack = {"a": _server("A"), "b": _server("B")}
    everything = {"firmware_baseline": BASELINE, "bmc_health_check": True}
    assert verdicts(rack, list(rack), expected=EXPECTED, **everything) == {
        "quarantine": {},
        "warn": {},
    }


def test_verdicts_judge_in_the_phase_order_each_server_once():
    """Hardware first; firmware and BMC health judge only the servers not quarantined yet (by
    the inventory, or by the judgement before): each server gets the first reason it fails."""
    rack = _rack()
    out = verdicts(
        rack,
        list(rack),
        expected=EXPECTED,
        quarantined=["tagged"],
        firmware_baseline=BASELINE,
        bmc_health_check=True,
    )
    assert list(out["quarantine"].items()) == [
        ("gpu7", hardware_problems(rack["gpu7"], EXPECTED)[0]),
        ("old", BIOS_DRIFT),
        ("mute", HEALTH_UNREAD),
    ]
    assert out["warn"] == {}


def test_hardware_reasons_are_one_line():
    rack = {"x": _facts(7, model="NVIDIA H100")}
    (reason,) = verdicts(rack, ["x"], expected=EXPECTED)["quarantine"].values()
    assert reason == "; ".join(hardware_problems(rack["x"], EXPECTED))
    assert "; unexpected GPU model(s) NVIDIA H100" in reason


@pytest.mark.parametrize(
    ("settings", "quarantined"),
    [
        ({}, ["gpu7"]),  # no baseline, no BMC health check: hardware only
        ({"firmware_baseline": BASELINE}, ["gpu7", "old", "tagged"]),
        ({"firmware_baseline": BASELINE, "slices": "4"}, ["gpu7"]),  # a slice: no fleet
        ({"bmc_health_check": True}, ["gpu7", "old", "mute", "tagged"]),
    ],
)
def test_each_judgement_runs_only_when_the_site_asks(settings, quarantined):
    rack = _rack()
    assert list(verdicts(rack, list(rack), expected=EXPECTED, **settings)["quarantine"]) == (
        quarantined
    )


def test_firmware_warnings_go_on_and_are_still_judged_for_health():
    warn = {"host_types": [dict(BASELINE["host_types"][0], on_drift="warn")]}
    rack = {"old": _server("C", bios="1.8.2", health=False)}
    out = verdicts(rack, ["old"], expected=EXPECTED, firmware_baseline=warn, bmc_health_check=True)
    assert out["warn"] == {"old": BIOS_DRIFT}
    assert out["quarantine"] == {"old": HEALTH_UNREAD}


def test_unusable_settings_stop_the_run_rather_than_judge():
    rack = _rack()
    with pytest.raises(ValueError, match="a file or a mapping"):
        verdicts(rack, list(rack), expected=EXPECTED, firmware_baseline=["x"])
    with pytest.raises(ValueError, match="give a UTC offset"):
        verdicts(
            rack,
            list(rack),
            expected=EXPECTED,
            bmc_health_check=True,
            bmc_health_since="2024-08-08T00:00:00",
        )


def test_clock_problems_name_only_the_unusable_clocks():
    batch = {
        "hosts": {
            "fine": {"msg": "in sync", "skew_seconds": 1.0, "skewed": False},
            "fixed": {"msg": "set", "skew_seconds": 0.0, "skewed": False, "changed": True},
            "locked": {"msg": "HTTP 400", "skew_seconds": 600.0, "skewed": True},
            "down": {"failed": True, "msg": "unreachable"},
        }
    }
    hosts = ["fine", "fixed", "locked", "down", "absent"]
    assert clock_problems(batch, hosts, 5) == {
        "locked": clock_problem(batch["hosts"]["locked"], 5),
        "down": "BMC clock could not be checked or set: unreachable",
        # no result of its own: judged on the batch's, which holds no reading
        "absent": "BMC clock could not be checked or set: no reading returned",
    }


def test_a_batch_that_failed_as_a_whole_quarantines_every_server_with_its_message():
    batch = {"failed": True, "msg": "bmcs: gpu02 has no redfish_bmc"}
    assert clock_problems(batch, ["gpu01", "gpu02"], 5) == {
        h: "BMC clock could not be checked or set: bmcs: gpu02 has no redfish_bmc"
        for h in ("gpu01", "gpu02")
    }


def test_duplicates_compare_macs_normalised_and_sort_hosts():
    hosts = [
        {
            "inventory_hostname": "b",
            "redfish_pxe_mac": "E4:3D:1A:13:27:F0",
            "ansible_host": "10.0.0.2",
        },
        {"inventory_hostname": "a", "maas_pxe_mac": "x", "redfish_pxe_mac": "e4-3d-1a-13-27-f0"},
        {"inventory_hostname": "c", "ansible_host": "10.0.0.2", "redfish_service_tag": "ABC"},
        {"inventory_hostname": "d", "redfish_service_tag": "abc"},
    ]
    assert duplicate_identities(hosts) == [
        "ansible_host 10.0.0.2 on b, c",
        "redfish_pxe_mac e4:3d:1a:13:27:f0 on a, b",
        "redfish_service_tag abc on c, d",
    ]


def test_no_duplicates_and_empty_values_ignored():
    hosts = [
        {"inventory_hostname": "a", "ansible_host": ""},
        {"inventory_hostname": "b", "ansible_host": ""},
    ]
    assert duplicate_identities(hosts) == []


def test_mac_mismatch_ignores_spelling():
    hosts = [
        {
            "inventory_hostname": "same",
            "redfish_pxe_mac": "AA:BB:CC:00:11:22",
            "maas_pxe_mac": "aabbcc001122",
        },
        {
            "inventory_hostname": "diff",
            "redfish_pxe_mac": "aa:bb:cc:00:11:22",
            "maas_pxe_mac": "aa:bb:cc:00:11:23",
        },
        {"inventory_hostname": "half", "redfish_pxe_mac": "aa:bb:cc:00:11:22"},
    ]
    assert mac_mismatches(hosts) == ["diff (Redfish aa:bb:cc:00:11:22, MAAS aa:bb:cc:00:11:23)"]


@pytest.mark.parametrize(
    ("text", "mac"),
    [
        ("E4:3D:1A:13:27:F0", "e4:3d:1a:13:27:f0"),
        ("e4-3d-1a-13-27-f0", "e4:3d:1a:13:27:f0"),
        ("e43d1a1327f0", "e4:3d:1a:13:27:f0"),
        (" e4:3d:1a:13:27:f0\n", "e4:3d:1a:13:27:f0"),
        ("00:00:00:00:00:00", None),
        ("e4:3d-1a:13:27:f0", None),
        ("e4:3d:1a:13:27", None),
        (None, None),
        (42, None),
    ],
)
def test_one_mac_normaliser(text, mac):
    assert normalize_mac(text) == mac


def test_require_mac_names_the_input():
    with pytest.raises(ValueError, match="pxe_mac 'nope' is not a usable MAC"):
        require_mac("nope", "pxe_mac")


def _filters():
    return plugin_filters("plugins/filter/phases.py")


def test_filter_plugin_exposes_the_library_functions():
    f = _filters()
    assert f["hardware_problems"](_facts(7), {"PowerEdge XE9680": H200})[0].startswith("expected 8")
    assert (
        f["clock_problem"]({"msg": "refused"}, "5")
        == "BMC clock could not be checked or set: refused"
    )
    assert f["duplicate_identities"](
        [
            {"inventory_hostname": "a", "ansible_host": "x"},
            {"inventory_hostname": "b", "ansible_host": "x"},
        ]
    ) == ["ansible_host x on a, b"]
    assert f["mac_mismatches"]([]) == []
    rack = _rack()
    assert f["discover_verdicts"](
        list(rack), rack, EXPECTED, ["tagged"], BASELINE, "1", True, "", None
    ) == verdicts(
        rack,
        list(rack),
        expected=EXPECTED,
        quarantined=["tagged"],
        firmware_baseline=BASELINE,
        bmc_health_check=True,
    )
    assert f["clock_problems"]({"failed": True, "msg": "x"}, ["a"], "5") == {
        "a": "BMC clock could not be checked or set: x"
    }


def test_filter_plugin_turns_a_bad_setting_into_a_filter_error():
    f = _filters()
    with pytest.raises(AnsibleFilterError, match=r"discover_verdicts: .*a file or a mapping"):
        f["discover_verdicts"](["a"], {"a": _facts()}, EXPECTED, None, ["x"])
    with pytest.raises(AnsibleFilterError, match="clock_problems: expected the fleet's result"):
        f["clock_problems"]("nope", ["a"])


def test_golden_inputs_take_the_health_entry_else_the_first_reason():
    from racksmith.phases.validate import NO_RESULT, golden_inputs

    hosts = {
        "b": {"health_golden_entry": {"quick": {"verdict": "FIT"}}},
        "a": {
            "racksmith_failure_reason": " deploy: curtin failed ",
            "racksmith_quarantine_reason": "x",
        },
        "c": {"racksmith_quarantine_reason": "BMC clock: refused"},
        "d": {"health_golden_entry": {}},
    }
    assert golden_inputs(hosts) == {
        "a": {"failure": "deploy: curtin failed"},
        "b": {"quick": {"verdict": "FIT"}},
        "c": {"failure": "BMC clock: refused"},
        "d": {"failure": NO_RESULT},
    }


def test_hca_ports_name_hosts_with_hcas_only():
    from racksmith.phases.validate import hca_ports

    hosts = {
        "l2": {
            "racksmith_hca_guids": {
                "mlx5_1": "e09d:7303:0000:1002",
                "mlx5_0": "e09d:7303:0000:1001",
            }
        },
        "l1": {"racksmith_hca_guids": {}},
        "l3": {},
    }
    assert hca_ports(hosts) == {
        "l2": {"mlx5_0": "e09d:7303:0000:1001", "mlx5_1": "e09d:7303:0000:1002"}
    }
