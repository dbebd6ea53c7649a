"""Firmware updates through the emulated iDRAC's UpdateService (real iDRAC9 capture; the lab's
behaviour layer runs the task, resets the BMC, loses the task, fails the flash on request).
The images are LAB STAND-IN packages (racksmith.lab.bmc.updates.lab_package)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from racksmith.lab.bmc.behaviour import Faults, Settings
from racksmith.lab.bmc.updates import UpdateFaults, lab_package
from racksmith.redfish import actions, update
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.transport import Deadline

FAST = Settings(power_delay=0.2, update_seconds=1.0, bmc_reset_seconds=1.0)


@pytest.fixture
def idrac(rack, server, creds, client_options):
    def make(faults: Faults | None = None, settings: Settings = FAST):
        lab = rack(
            [server(1, model="r750-h100pcie")],
            settings=settings,
            faults={"gpu01": faults} if faults else None,
        )
        bmc = lab.bmc("gpu01")

        def connect(deadline: float = 60.0) -> RedfishClient:
            return RedfishClient(
                lab.target("gpu01"), creds, client_options, deadline=Deadline(deadline)
            )

        return bmc, connect

    return make


@pytest.fixture
def image(tmp_path: Path):
    def make(component: str, version: str) -> str:
        path = tmp_path / f"{component}-{version}.pkg"
        path.write_bytes(lab_package(component, version))
        return str(path)

    return make


@pytest.fixture
def site_server(tmp_path: Path):
    """The site's image server: plain http on loopback, serving tmp_path."""
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa: E731
        *a, directory=str(tmp_path), **k
    )
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _step(component, version, **kw):
    return update.UpdateStep(component=component, version=version, **kw)


def test_check_mode_says_how_it_would_flash_and_sends_nothing(idrac, image):
    bmc, connect = idrac()
    with connect() as c:
        dry = update.update(
            c, [_step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0"))]
        )
        same = update.update(c, [_step("BIOS.Setup.1-1", "1.8.2", image_uri="http://x/bios.pkg")])
    assert (
        dry.changed and dry.message == "would flash BIOS.Setup.1-1 1.8.2 -> 1.9.0 by multipart push"
    )
    assert not same.changed and same.details["updates"][0]["status"] == "already"
    assert bmc.stats["update_started"] == 0 and bmc.stats["POST"] == 1  # the login only


def test_multipart_bios_is_staged_then_active_after_power_on(idrac, image):
    _bmc, connect = idrac()
    with connect() as c:
        result = update.update(
            c,
            [_step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0"))],
            check_mode=False,
            poll=0.2,
        )
        out = result.details["updates"][0]
        # no reset allowed: staged is said, and is not a finished update
        assert (out["status"], out["method"], out["verified"]) == ("staged", "multipart", "staged")
        assert result.message == (
            "flashed BIOS.Setup.1-1, NOT active yet; staged, needs a reset: BIOS.Setup.1-1 "
            "(1.9.0 staged, 1.8.2 runs until the next reset)"
        )
        assert result.details["needs_reset"] == ["BIOS.Setup.1-1"]
        assert result.after == {"BIOS.Setup.1-1": "1.8.2"}
        assert _bmc.boots == [] and not any(k.startswith("reset_") for k in _bmc.stats)
        actions.power(c, "on", wait=5, poll=0.1)
        running, _ = update.versions(update.read_inventory(c), "BIOS.Setup.1-1")
        assert running == ["1.9.0"] and c.get(actions.system(c).uri)["BiosVersion"] == "1.9.0"


def test_simple_update_of_the_bmc_waits_out_its_reset(idrac, image, site_server):
    bmc, connect = idrac()
    image("iDRAC.Embedded.1-1", "7.00.00.00")
    with connect() as c:
        result = update.update(
            c,
            [
                _step(
                    "iDRAC.Embedded.1-1",
                    "7.00.00.00",
                    image_uri=f"{site_server}/iDRAC.Embedded.1-1-7.00.00.00.pkg",
                )
            ],
            check_mode=False,
            poll=0.2,
            verify_wait=10,
        )
    out = result.details["updates"][0]
    assert (out["status"], out["method"], out["verified"], out["after"]) == (
        "ok",
        "simple",
        "active",
        "7.00.00.00",
    )
    assert bmc.updates.installed_events == [("iDRAC.Embedded.1-1", "7.00.00.00")]


def test_a_bmc_reset_mid_update_is_waited_for_and_logged_into_again(idrac, image):
    # down for 3 s from halfway: polls come at most Retry-After (1 s) apart, so some land in it
    bmc, connect = idrac(Faults(update=UpdateFaults(bmc_reset_mid_update=3.0)))
    with connect() as c:
        result = update.update(
            c,
            [_step("CPLD.Embedded.1", "1.0.6", image=image("CPLD.Embedded.1", "1.0.6"))],
            check_mode=False,
            poll=0.2,
        )
    out = result.details["updates"][0]
    assert out["status"] == "ok" and out["verified"] == "active"
    assert any("unreachable while flashing" in m for m in out["messages"])
    assert any("logged in again" in m for m in out["messages"])
    assert bmc.stats["sessions_created"] == 2  # the reset BMC forgot the first session


def test_a_task_that_disappears_is_decided_by_the_inventory(idrac, image):
    bmc, connect = idrac(Faults(update=UpdateFaults(task_vanishes=True)))
    with connect() as c:
        result = update.update(
            c,
            [_step("CPLD.Embedded.1", "1.0.6", image=image("CPLD.Embedded.1", "1.0.6"))],
            check_mode=False,
            poll=0.2,
            verify_wait=5,
        )
    out = result.details["updates"][0]
    assert out["status"] == "ok" and any("disappeared (404)" in m for m in out["messages"])
    assert bmc.updates.installed_events == [("CPLD.Embedded.1", "1.0.6")]


def test_a_failed_flash_is_reported_never_retried_and_stops_the_host(idrac, image):
    bmc, connect = idrac(Faults(update=UpdateFaults(update_fails=True)))
    with connect() as c, pytest.raises(update.UpdateFailed) as failed:
        update.update(
            c,
            [
                _step("CPLD.Embedded.1", "1.0.6", image=image("CPLD.Embedded.1", "1.0.6")),
                _step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0")),
            ],
            check_mode=False,
            poll=0.2,
        )
    steps = failed.value.details["updates"]
    assert [s["status"] for s in steps] == ["failed", "not-attempted"]
    assert "RED007" in steps[0]["reason"] and "lab fault" in steps[0]["reason"]
    assert bmc.stats["update_started"] == 1  # one flash, never a second try


def test_the_component_deadline_ends_the_wait_and_names_itself(idrac, image):
    bmc, connect = idrac(settings=Settings(power_delay=0.2, update_seconds=30.0))
    with connect() as c, pytest.raises(update.UpdateFailed) as failed:
        update.update(
            c,
            [_step("CPLD.Embedded.1", "1.0.6", image=image("CPLD.Embedded.1", "1.0.6"), timeout=1)],
            check_mode=False,
            poll=0.2,
        )
    reason = failed.value.details["updates"][0]["reason"]
    assert "the component deadline of 1s ran out" in reason and "not retried" in reason
    assert bmc.stats["update_started"] == 1


def test_a_bmc_without_the_method_asked_for_is_refused(idrac, image):
    service = update.Service(multipart_uri=None, simple_update="/x", protocols=("HTTP",))
    with pytest.raises(ValueError, match="offers SimpleUpdate; give image_uri"):
        service.method_for(_step("BIOS.Setup.1-1", "1.9.0", image="/tmp/x"))
    with pytest.raises(ValueError, match="give image"):
        update.UpdateStep(component="X", version="1")


def test_an_unknown_component_is_an_error_before_anything_is_sent(idrac, image):
    bmc, connect = idrac()
    with connect() as c, pytest.raises(RedfishError) as missing:
        update.update(c, [_step("HGX_FW_GPU_*", "1", image_uri="http://x/y")], check_mode=False)
    assert missing.value.kind is ErrorKind.INCOMPLETE and bmc.stats["update_started"] == 0


@pytest.mark.parametrize("power", ["On", "Off"])
def test_a_staged_image_with_reset_allowed_is_reset_waited_for_and_verified(idrac, image, power):
    """The staged-flash-then-reset path (iDRAC BIOS packages run only after the next reset): one
    reset (a restart when the server is on, a power-on when it is off), then the new version
    must be the running image."""
    bmc, connect = idrac(settings=Settings(**{**FAST.__dict__, "initial_power": power}))
    with connect() as c:
        plan = update.update(
            c,
            [_step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0"))],
            reset=True,
        )
        assert plan.message.endswith("; a staged image is activated by one reset (reset allowed)")
        assert bmc.boots == [] and bmc.stats["update_started"] == 0
        result = update.update(
            c,
            [_step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0"))],
            check_mode=False,
            poll=0.2,
            reset=True,
            reset_wait=30,
        )
        out = result.details["updates"][0]
        goal = "restart" if power == "On" else "on"
        assert (out["status"], out["verified"], out["after"]) == ("ok", "active", "1.9.0")
        assert f"activated by {goal}" in out["messages"]
        assert result.message == (
            "flashed and verified BIOS.Setup.1-1; activated by a reset: BIOS.Setup.1-1"
        )
        assert "needs_reset" not in result.details
        assert len(bmc.boots) == 1  # one reset, not one per poll
        assert c.get(actions.system(c).uri)["BiosVersion"] == "1.9.0"
        assert bmc.updates.installed_events == [("BIOS.Setup.1-1", "1.9.0")]


def test_a_reset_that_does_not_activate_the_image_is_a_failure(idrac, image, monkeypatch):
    """A BMC that keeps running the old BIOS after the reset (the staged job lost): failed,
    naming what runs, never retried."""
    bmc, connect = idrac()
    monkeypatch.setattr(bmc.updates, "on_power_on", lambda: None)  # the reset applies nothing
    with connect() as c, pytest.raises(update.UpdateFailed) as failed:
        update.update(
            c,
            [_step("BIOS.Setup.1-1", "1.9.0", image=image("BIOS.Setup.1-1", "1.9.0"))],
            check_mode=False,
            poll=0.2,
            reset=True,
            reset_wait=3,
        )
    assert "staged, then the server was reset (on), but after 3s the inventory reports " in str(
        failed.value.reason
    )
    assert "BIOS.Setup.1-1 running 1.8.2 (wanted 1.9.0); not retried" in failed.value.reason
    assert bmc.stats["update_started"] == 1 and len(bmc.boots) == 1
