"""BIOS attributes applied through the emulated iDRAC's settings object (real iDRAC9 capture,
the lab's behaviour layer: pending values apply on reset through a job, a second job refused)."""

from __future__ import annotations

import dataclasses

import pytest

from racksmith.lab.bmc.behaviour import Settings
from racksmith.redfish import bios_apply
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError

# Attributes of the captured R750 BIOS (Bios/index.json): SysProfile is PerfOptimized,
# ProcVirtualization Enabled, MemTest Disabled.


@pytest.fixture
def idrac(rack, server, creds, client_options):
    lab = rack([server(1, model="r750-h100pcie")], settings=Settings(power_delay=0.2))
    bmc = lab.bmc("gpu01")

    def connect() -> RedfishClient:
        # the iDRAC's attribute registry is a large document: a loaded CI machine needs time
        options = dataclasses.replace(client_options, connect_timeout=10, read_timeout=30)
        return RedfishClient(lab.target("gpu01"), creds, options)

    return bmc, connect


def test_plan_diffs_against_current_and_pending():
    bios = {
        "current": {"A": "x", "B": "y", "C": "z", "D": 1},
        "pending": {"B": "wrong", "C": "new"},
    }
    steps = bios_apply.plan({"A": "x", "B": "y", "C": "new", "D": 2, "E": 0}, bios)
    assert steps.ok == ("A",)
    assert steps.stale == {"B": "wrong"} and steps.to_set == {"B": "y", "D": 2}
    assert steps.pending == {"C": "new"} and steps.unknown == ("E",)
    assert steps.needs_reset


def test_check_mode_says_what_it_would_do_and_changes_nothing(idrac):
    bmc, connect = idrac
    with connect() as c:
        dry = bios_apply.apply(
            c, {"SysProfile": "PerfPerWattOptimizedDapc", "ProcVirtualization": "Enabled"}
        )
    assert dry.changed and dry.message.startswith("would PATCH /redfish/v1/Systems/")
    assert "SysProfile=PerfPerWattOptimizedDapc (apply OnReset)" in dry.message
    assert dry.details["plan"]["ok"] == ["ProcVirtualization"]
    assert bmc.updates.pending == {} and bmc.stats["bios_patch"] == 0


def test_apply_without_reboot_leaves_values_pending_and_refuses_a_second_job(idrac):
    bmc, connect = idrac
    with connect() as c:
        result = bios_apply.apply(c, {"SysProfile": "PerfPerWattOptimizedDapc"}, check_mode=False)
        assert result.details["verified"] == "pending" and "job" in result.details
        assert bmc.updates.pending == {"SysProfile": "PerfPerWattOptimizedDapc"}
        # the same value again: already pending, nothing sent (a PATCH would be refused)
        again = bios_apply.apply(c, {"SysProfile": "PerfPerWattOptimizedDapc"}, check_mode=False)
        assert again.details["plan"]["pending"] == {"SysProfile": "PerfPerWattOptimizedDapc"}
        assert bmc.stats["bios_patch"] == 1
        # another value while the job is scheduled: the job queue refuses it; said, not retried
        with pytest.raises(RedfishError) as refused:
            bios_apply.apply(c, {"MemTest": "Enabled"}, check_mode=False)
    assert "SYS011" in refused.value.reason and "already has a BIOS configuration job" in (
        refused.value.reason
    )
    assert bmc.stats["bios_job_refused"] == 1 and bmc.stats["bios_patch"] == 1


def test_apply_with_reboot_verifies_every_attribute(idrac):
    bmc, connect = idrac
    with connect() as c:
        result = bios_apply.apply(
            c,
            {"SysProfile": "PerfPerWattOptimizedDapc", "ProcVirtualization": "Enabled"},
            check_mode=False,
            reboot=True,
            wait=10,
            poll=0.1,
        )
    assert result.details["verified"] == "current" and result.details["rebooted"] == "on"
    assert result.after == {
        "SysProfile": "PerfPerWattOptimizedDapc",
        "ProcVirtualization": "Enabled",
    }
    assert (
        bmc.updates.current["SysProfile"] == "PerfPerWattOptimizedDapc" and not bmc.updates.pending
    )
    assert bmc.stats["reset_On"] == 1  # the host was off: powered on, not restarted


def test_values_pending_without_a_job_are_reported_as_not_applied(idrac):
    bmc, connect = idrac
    # someone left a pending value without a job: a reset does not apply it on iDRAC
    bmc.updates.pending["SysProfile"] = "PerfPerWattOptimizedDapc"
    with connect() as c, pytest.raises(RedfishError) as failed:
        bios_apply.apply(
            c,
            {"SysProfile": "PerfPerWattOptimizedDapc"},
            check_mode=False,
            reboot=True,
            wait=1,
            poll=0.1,
        )
    assert failed.value.kind is ErrorKind.INCOMPLETE
    assert "SysProfile reads 'PerfOptimized', wanted 'PerfPerWattOptimizedDapc'" in (
        failed.value.reason
    )


def test_registry_and_unknown_attributes_are_refused_before_anything_is_sent(idrac):
    bmc, connect = idrac
    with connect() as c:
        with pytest.raises(RedfishError) as bad_value:
            bios_apply.apply(c, {"SysProfile": "Turbo"}, check_mode=False)
        with pytest.raises(RedfishError) as unknown:
            bios_apply.apply(c, {"NoSuchAttribute": 1}, check_mode=False)
    assert "attribute registry" in bad_value.value.reason and "SysProfile" in bad_value.value.reason
    assert "NoSuchAttribute" in unknown.value.reason
    assert bmc.stats["bios_patch"] == 0 and bmc.stats["PATCH"] == 0
