"""Profiles: every built-in one is valid, a check is configured or skipped with a reason
(never skipped by a forgotten key), and bad profiles are refused naming the file and key."""

from __future__ import annotations

import json

import pytest

from racksmith.health.checks import requirements
from racksmith.health.profile import ProfileError, available, load, merge


@pytest.mark.parametrize("name", available())
def test_builtin_profiles_are_valid(name):
    profile = load(name, requirements())
    assert profile.description
    for check, reason in profile.skips.items():
        assert check in requirements() and reason.strip()


def test_h200_vm_profile_skips_exactly_what_that_host_lacks():
    profile = load("h200-x2-vm", requirements())
    assert profile.get("gpu.count") == 2 and profile.get("gpu.model") == "NVIDIA H200"
    assert set(profile.skips) == {
        "fabric_manager",
        "ib_ports",
        "ib_counters",
        "gdr",
        "zpool",
        "docker_gpu",
        "cpu_governor",
        "clock_sync",
    }
    assert not profile.has("zpools") and not profile.has("hcas")
    assert profile.get("gpu.nvlink.links_per_gpu") == 18  # inherited from hgx-h200-8gpu


def test_site_profile_skips_nothing():
    assert load("hgx-h200-8gpu", requirements()).skips == {}


def write(tmp_path, name, data):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_missing_expectation_without_skip_is_an_error(tmp_path):
    path = write(tmp_path, "p", {"extends": "hgx-h200-8gpu", "zpools": None})
    with pytest.raises(
        ProfileError, match=r"zpool \(needs 'zpools'\).*Add the key, or add a reason"
    ):
        load(path, requirements())


def test_skip_needs_a_reason_and_a_known_check(tmp_path):
    with pytest.raises(ProfileError, match=r"skip\.zpool needs a reason"):
        load(
            write(tmp_path, "a", {"extends": "hgx-h200-8gpu", "skip": {"zpool": " "}}),
            requirements(),
        )
    with pytest.raises(ProfileError, match="unknown check 'zpol'"):
        load(
            write(tmp_path, "b", {"extends": "hgx-h200-8gpu", "skip": {"zpol": "typo"}}),
            requirements(),
        )


def test_unknown_key_bad_types_loops_and_bad_json(tmp_path):
    with pytest.raises(ProfileError, match=r"unknown keys \['gpus'\]"):
        load(write(tmp_path, "c", {"extends": "hgx-h200-8gpu", "gpus": 8}), requirements())
    with pytest.raises(ProfileError, match=r"gpu\.count must be a non-negative integer"):
        load(
            write(tmp_path, "d", {"extends": "hgx-h200-8gpu", "gpu": {"count": "8"}}),
            requirements(),
        )
    write(tmp_path, "x", {"extends": "y"})
    write(tmp_path, "y", {"extends": "x"})
    with pytest.raises(ProfileError, match="loops back"):
        load(str(tmp_path / "x.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ProfileError, match=f"profile {bad}: cannot read it as JSON"):
        load(str(bad))
    with pytest.raises(ProfileError, match="no profile named 'nope'; built-in profiles: "):
        load("nope")


def test_merge_deletes_on_null_and_merges_nested():
    base = {"gpu": {"count": 8, "model": "A"}, "zpools": ["scratch"], "skip": {"a": "x"}}
    out = merge(base, {"gpu": {"count": 2}, "zpools": None, "skip": {"b": "y"}})
    assert out == {"gpu": {"count": 2, "model": "A"}, "skip": {"a": "x", "b": "y"}}
    assert base["gpu"]["count"] == 8  # not mutated


@pytest.mark.parametrize(
    "data, message",
    [
        ({"gpu": {"processes": {"max_used_mib": "1 GiB"}}}, r"gpu\.processes\.max_used_mib"),
        ({"gpu": {"processes": {"allow": "nv-hostengine"}}}, r"gpu\.processes\.allow"),
        ({"hcas": {"gdr": "rdma-core"}}, r"hcas\.gdr must be true, 'peermem' or 'dmabuf'"),
        ({"firmware": {"severity": "error"}}, r"firmware\.severity"),
        ({"firmware": {"gpu": {"vbois": "96.00.A5.00.1A"}}}, r"firmware\.gpu must map"),
        ({"firmware": {"baseboard": ["HGX_FW_BMC_0"]}}, r"firmware\.baseboard"),
    ],
)
def test_issue23_profile_keys_are_typed(tmp_path, data, message):
    with pytest.raises(ProfileError, match=message):
        load(write(tmp_path, "t", {"extends": "hgx-h200-8gpu", **data}), requirements())
