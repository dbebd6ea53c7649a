"""Rollout decisions: canary first, waves per host type, the stop rule, half-updated types."""

from __future__ import annotations

import pytest

from racksmith.redfish import baseline as bl
from racksmith.redfish import rollout

BASELINE = bl.parse_baseline(
    {
        "host_types": [
            {
                "name": "r750",
                "match": {"vendor": "dell"},
                "firmware": [{"component": "BIOS.Setup.1-1", "target": "1.9.0"}],
                "bios": {"SysProfile": "PerfOptimized"},
            },
            {
                "name": "dgx",
                "match": {"vendor": "nvidia-dgx"},
                "firmware": [{"component": "HGX_FW_GPU_*", "target": "96.00.A5.00.1A"}],
            },
        ]
    }
)
IMAGES = {
    "BIOS.Setup.1-1": {"image_uri": "http://images/bios-1.9.0.pkg"},
    "HGX_FW_GPU_*": {"image": "/srv/fw/hgx.fwpkg"},
}


def dell(name: str, bios_version: str = "1.8.2", profile: str = "PerfOptimized") -> dict:
    return {
        "inventory_host": name,
        "service_tag": name.upper(),
        "vendor": "dell",
        "firmware": [
            {"component": "BIOS.Setup.1-1", "role": "active", "version": bios_version, "hgx": False}
        ],
        "bios": {"current": {"SysProfile": profile}, "pending": {}, "pending_known": True},
    }


def dgx(name: str, vbios: str = "96.00.89.00.01") -> dict:
    return {
        "inventory_host": name,
        "service_tag": name.upper(),
        "vendor": "nvidia-dgx",
        "firmware": [
            {"component": f"HGX_FW_GPU_SXM_{n}", "role": "active", "version": vbios, "hgx": True}
            for n in (1, 2)
        ],
    }


def test_canary_first_then_waves_that_never_straddle_a_host_type():
    results = [dell(f"r{n}") for n in range(1, 6)] + [dgx(f"d{n}") for n in range(1, 4)]
    plan = rollout.plan(
        results,
        BASELINE,
        selected=[r["inventory_host"] for r in results],
        images=IMAGES,
        wave_size=2,
        canary="d2",
    )
    assert plan["canary"] == "d2"
    assert plan["waves"] == [["d2"], ["r1", "r2"], ["r3", "r4"], ["r5"], ["d1", "d3"]]
    assert plan["batches"] == [1, 2, 2, 1, 2]
    assert plan["work"]["r1"]["firmware"] == [
        {
            "component": "BIOS.Setup.1-1",
            "version": "1.9.0",
            "image_uri": "http://images/bios-1.9.0.pkg",
        }
    ]
    assert plan["work"]["d1"]["firmware"][0]["image"] == "/srv/fw/hgx.fwpkg"


def test_only_selected_hosts_and_only_those_that_can_be_planned():
    results = [
        dell("ok", bios_version="1.9.0"),  # compliant
        dell("bios-only", bios_version="1.9.0", profile="PerfPerWattOptimizedDapc"),
        dell("newer", bios_version="2.0.0"),  # a downgrade
        {**dell("unread"), "firmware_error": "404"},  # UNKNOWN
        dell("not-selected"),
    ]
    plan = rollout.plan(
        results,
        BASELINE,
        selected=["ok", "bios-only", "newer", "unread"],
        images=IMAGES,
    )
    assert plan["order"] == ["bios-only"] and plan["compliant"] == ["ok"]
    assert plan["work"]["bios-only"] == {
        "firmware": [],
        "bios": {"SysProfile": "PerfOptimized"},
        "host_type": "r750",
        "status": "DRIFT",
    }
    assert "downgrade" in plan["skipped"]["newer"] and "UNKNOWN" in plan["skipped"]["unread"]
    assert "not-selected" not in {*plan["work"], *plan["skipped"], *plan["compliant"]}
    no_image = rollout.plan([dell("r1")], BASELINE, selected=["r1"], images={})
    assert no_image["skipped"] == {
        "r1": "no image for BIOS.Setup.1-1 1.9.0 in the rollout's images"
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"selected": []}, "no hosts selected"),
        ({"selected": ["ghost"]}, "not in the inventory: ghost"),
        ({"selected": ["r1"], "canary": "r2"}, "canary 'r2' is not among"),
        ({"selected": ["r1"], "wave_size": 0}, "wave_size"),
        ({"selected": ["r1"], "max_failure_rate": 1.5}, "max_failure_rate"),
    ],
)
def test_settings_are_checked_with_clear_errors(kwargs, message):
    with pytest.raises(rollout.RolloutError, match=message):
        rollout.plan([dell("r1"), dell("r2")], BASELINE, images=IMAGES, **kwargs)


def test_the_stop_rule_and_the_half_updated_warning():
    results = [dell(f"r{n}") for n in range(1, 8)]
    plan = rollout.plan(
        results,
        BASELINE,
        selected=[f"r{n}" for n in range(1, 8)],
        images=IMAGES,
        wave_size=3,
        max_failure_rate=0.34,
    )
    assert plan["waves"] == [["r1"], ["r2", "r3", "r4"], ["r5", "r6", "r7"]]
    outcomes = {"r1": "ok"}
    canary = rollout.wave_verdict(plan, ["r1"], outcomes)
    assert not canary["stop"] and canary["name"] == "canary"
    outcomes.update({"r2": "ok", "r3": "failed", "r4": "ok"})  # 1/3 = 33% <= 34%
    wave1 = rollout.wave_verdict(plan, ["r2", "r3", "r4"], outcomes)
    assert not wave1["stop"] and wave1["reason"].endswith("going on")
    outcomes.update({"r5": "failed", "r6": "failed", "r7": "ok"})
    wave2 = rollout.wave_verdict(plan, ["r5", "r6", "r7"], outcomes)
    assert wave2["stop"] and wave2["last"] and wave2["failed"] == ["r5", "r6"]
    assert wave2["half_updated"] == {
        "r750": {"updated": ["r1", "r2", "r4", "r7"], "not_updated": ["r3", "r5", "r6"]}
    }
    assert "host type r750 is HALF-UPDATED" in wave2["reason"]


def test_a_failed_canary_always_stops_and_says_what_was_not_started():
    plan = rollout.plan(
        [dell("r1"), dell("r2")],
        BASELINE,
        selected=["r1", "r2"],
        images=IMAGES,
        max_failure_rate=0.9,
    )
    verdict = rollout.wave_verdict(plan, ["r1"], {"r1": "failed"})
    assert verdict["stop"] and "not started: r2" in verdict["reason"]
    assert verdict["half_updated"] == {}  # nothing updated: the type is whole, on the old version
    missing = rollout.wave_verdict(plan, ["r2"], {"r1": "ok"})  # no outcome counts as failed
    assert missing["failed"] == ["r2"] and missing["stop"]


def test_a_host_left_staged_without_a_reset_is_staged_never_ok():
    """racksmith_firmware_reboot false: the flash module reset nothing (its step says staged),
    no activation or verify ran: the host is ``staged``, and the stop rule counts it as not
    updated; with the activation reset and a verify that sees the new version run, it is ok."""
    msg = (
        "flashed BIOS.Setup.1-1, NOT active yet; staged, needs a reset: BIOS.Setup.1-1 "
        "(1.9.0 staged, 1.8.2 runs until the next reset)"
    )
    flash = {
        "changed": True,
        "msg": msg,
        "updates": [{"component": "BIOS.Setup.1-1", "status": "staged", "verified": "staged"}],
        "needs_reset": ["BIOS.Setup.1-1"],
    }
    skipped = {"skipped": True}
    assert rollout.needs_activation(flash)
    assert rollout.host_outcome(flash, skipped, skipped, skipped) == {
        "status": rollout.STAGED,
        "reason": f"firmware: {msg}",
    }
    verify = {
        "msg": "every component already at its version (running or staged)",
        "updates": [{"component": "BIOS.Setup.1-1", "status": "already", "verified": "active"}],
    }
    done = rollout.host_outcome(flash, skipped, {"changed": True, "msg": "On -> restart"}, verify)
    assert done["status"] == rollout.OK
    plan = rollout.plan([dell("r1"), dell("r2")], BASELINE, selected=["r1", "r2"], images=IMAGES)
    hostvars = {"r1": {"racksmith_firmware_outcome": {"status": rollout.STAGED}}}
    assert rollout.outcomes_from_hostvars(plan, hostvars) == {"r1": rollout.STAGED}
    verdict = rollout.wave_verdict(plan, ["r1"], rollout.outcomes_from_hostvars(plan, hostvars))
    assert verdict["stop"] and verdict["failed"] == ["r1"]
