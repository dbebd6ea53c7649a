"""The discover and preflight decisions (racksmith.phases) and their filter plugins."""

from __future__ import annotations

import pytest

from racksmith.macs import normalize_mac, require_mac
from racksmith.phases.discover import clock_problem, hardware_problems
from racksmith.phases.preflight import duplicate_identities, mac_mismatches
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
