"""BMC actions against the emulation: read-back, idempotence, check mode, iDRAC quirks."""

from __future__ import annotations

import dataclasses

import pytest

from racksmith.lab.bmc.behaviour import Settings
from racksmith.redfish import actions
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError


@pytest.fixture
def bmc1(rack, server, creds, client_options):
    lab = rack([server(1)], settings=Settings(power_delay=0.3))

    def connect() -> RedfishClient:
        return RedfishClient(lab.target("gpu01"), creds, client_options)

    return lab.bmc("gpu01"), connect


def test_power_on_reads_back_and_is_idempotent(bmc1):
    bmc, connect = bmc1
    with connect() as c:
        dry = actions.power(c, "on", check_mode=True)
        assert dry.changed and bmc.power_state() == "Off"  # check mode changed nothing
        done = actions.power(c, "on", wait=5, poll=0.1)
        assert (done.changed, done.before, done.after, done.details["reset_type"]) == (
            True,
            "Off",
            "On",
            "On",
        )
        again = actions.power(c, "on", wait=5, poll=0.1)
        assert not again.changed and bmc.stats["psu501"] == 0  # checked first, nothing posted


def test_power_on_tolerates_psu501_when_the_read_was_stale(bmc1, monkeypatch):
    bmc, connect = bmc1
    with connect() as c:
        actions.power(c, "on", wait=5, poll=0.1)
        real = actions.system(c)
        stale = dataclasses.replace(real, power_state="Off")  # iDRAC PowerState can lag behind
        calls = iter([stale])
        monkeypatch.setattr(actions, "system", lambda client, **_: next(calls))
        result = actions.power(c, "on", wait=5, poll=0.1)
    assert bmc.stats["psu501"] == 1  # the real emulated iDRAC answered 409 PSU501
    assert not result.changed and result.after == "On" and "PSU501" in result.warnings[0]


def test_power_off_cycle_and_unsupported(bmc1):
    bmc, connect = bmc1
    with connect() as c:
        cycled = actions.power(c, "cycle", wait=5, poll=0.1)  # off -> cycle means on
        assert cycled.after == "On" and cycled.details["reset_type"] == "On"
        cycled = actions.power(c, "cycle", wait=5, poll=0.1)
        assert cycled.details["reset_type"] == "PowerCycle" and bmc.stats["reset_PowerCycle"] == 1
        off = actions.power(c, "off", wait=5, poll=0.1)
        assert (off.before, off.after) == ("On", "Off")
    with pytest.raises(RedfishError) as err:
        actions._reset_type(("On",), "off", c)
    assert err.value.kind is ErrorKind.UNSUPPORTED


def test_one_time_pxe_is_read_back_and_consumed_at_boot(bmc1):
    bmc, connect = bmc1
    with connect() as c:
        assert (
            actions.boot_once(c, check_mode=True).changed
            and bmc.boot_override()["BootSourceOverrideEnabled"] == "Disabled"
        )
        result = actions.boot_once(c)
        assert result.changed and result.after == {
            "enabled": "Once",
            "target": "Pxe",
            "mode": "UEFI",
        }
        assert not actions.boot_once(c).changed
        actions.power(c, "on", wait=5, poll=0.1)
    assert bmc.boots[-1][1] == "Pxe"  # the host booted from the network once
    assert bmc.boot_override()["BootSourceOverrideEnabled"] == "Disabled"


def test_boot_target_outside_allowable_values(bmc1):
    _, connect = bmc1
    with connect() as c, pytest.raises(RedfishError) as err:
        actions.boot_once(c, "Usb")
    assert err.value.kind is ErrorKind.UNSUPPORTED and "Pxe" in err.value.reason


def test_boot_quirk_400_but_applied_succeeds_with_warning(rack, server, creds, client_options):
    lab = rack([server(1, faults=("bmc_boot_quirk",))])
    with RedfishClient(lab.target("gpu01"), creds, client_options) as c:
        result = actions.boot_once(c)
    assert result.changed and result.after["target"] == "Pxe"
    assert "400" in result.warnings[0] and "depends on other attribute" in result.warnings[0]


def test_clock_skew_detected_and_corrected(rack, server, creds, client_options):
    lab = rack([server(1, faults=("bmc_clock_skew",))])
    with RedfishClient(lab.target("gpu01"), creds, client_options) as c:
        report = actions.clock(c, max_skew=5)
        assert (
            not report.changed
            and report.details["skewed"]
            and report.before["skew_seconds"] > 3 * 3600
        )
        assert actions.clock(c, correct=True, check_mode=True).changed
        assert lab.bmc("gpu01").stats["clock_set"] == 0
        fixed = actions.clock(c, correct=True)
        assert fixed.changed and abs(fixed.after["skew_seconds"]) <= 5
        assert not actions.clock(c, correct=True).changed
