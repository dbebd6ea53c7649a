"""Power and boot-once on every vendor capture, through the lab's emulated BMCs.

What each BMC allows and where it takes the override comes from its capture: Supermicro and the
DGX list reset types only in ``@Redfish.ActionInfo``; the DGX takes the boot override only at
its ``@Redfish.Settings`` object ``Systems/DGX/SD``, with the ETag in ``If-Match``, and shows it
there as pending until the next boot. Dell's path and request count must stay as they were.
"""

from __future__ import annotations

import pytest

from racksmith.lab.bmc.behaviour import Settings
from racksmith.redfish import actions
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target

DGX = "/redfish/v1/Systems/DGX"
SD = f"{DGX}/SD"


@pytest.fixture
def one(rack, server, creds, client_options):
    """``one(model)`` -> (emulated BMC, connect()) for a single server of that model."""

    def make(model: str, **settings):
        lab = rack([server(1, model=model)], settings=Settings(power_delay=0.2, **settings))

        def connect() -> RedfishClient:
            return RedfishClient(lab.target("gpu01"), creds, client_options)

        return lab.bmc("gpu01"), connect

    return make


# -- power -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "restart", "cycle"),
    [
        # Systems/DGX/ResetActionInfo: On, ForceOff, ForceRestart, GracefulShutdown
        ("dgx-h100", "ForceRestart", "ForceRestart"),
        # Systems/1/ResetActionInfo: ... GracefulRestart, ForceRestart, ... PowerCycle
        ("supermicro-hgx-h100", "GracefulRestart", "PowerCycle"),
        # inline ResetType@Redfish.AllowableValues (no PowerCycle)
        ("hpe-dl385g10p", "GracefulRestart", "ForceRestart"),
    ],
)
def test_power_follows_the_allowed_reset_types(one, model, restart, cycle):
    bmc, connect = one(model)
    with connect() as c:
        dry = actions.power(c, "on", check_mode=True)
        assert dry.changed and dry.details["reset_type"] == "On" and bmc.power_state() == "Off"
        on = actions.power(c, "on", wait=5, poll=0.05)
        assert (on.changed, on.before, on.after) == (True, "Off", "On")
        assert actions.power(c, "restart", wait=5, poll=0.05).details["reset_type"] == restart
        assert actions.power(c, "cycle", wait=5, poll=0.05).details["reset_type"] == cycle
        off = actions.power(c, "off", wait=5, poll=0.05)
        assert (off.after, off.details["reset_type"]) == ("Off", "ForceOff")
    assert bmc.stats[f"reset_{restart}"] >= 1 and bmc.stats["status_400"] == 0


def test_dgx_refuses_what_its_action_info_does_not_list(one):
    """No GracefulRestart/PowerCycle on the DGX: a graceful restart falls to ForceRestart, and a
    type outside the list is refused before anything is posted."""
    bmc, connect = one("dgx-h100")
    with connect() as c:
        info = actions.system(c)
        assert info.reset_types == () and info.reset_info_uri == f"{DGX}/ResetActionInfo"
        allowed = actions.allowed_reset_types(c, info)
        assert set(allowed) == {"On", "ForceOff", "ForceRestart", "GracefulShutdown"}
        with pytest.raises(RedfishError) as err:
            actions._reset_type(("On", "ForceOff"), "restart", c)
    assert err.value.kind is ErrorKind.UNSUPPORTED and bmc.stats["POST"] == 1  # the login only


def test_already_on_costs_no_action_info_read(one):
    bmc, connect = one("supermicro-hgx-h100", initial_power="On")
    with connect() as c:
        result = actions.power(c, "on")
        assert not result.changed and c.stats.by_method == {"POST": 1, "GET": 1}
    assert not any(key.startswith("reset_") for key in bmc.stats)


# -- boot once ---------------------------------------------------------------------------------


def test_dgx_boot_once_goes_to_the_settings_object_with_if_match(one):
    bmc, connect = one("dgx-h100")
    with connect() as c:
        dry = actions.boot_once(c, check_mode=True)
        assert dry.changed and SD in dry.message
        assert dry.details["payload"]["Boot"]["BootSourceOverrideMode"] == "UEFI"
        assert bmc.stats["boot_patch"] == 0
        result = actions.boot_once(c)
        assert result.changed and result.before["enabled"] == "Disabled"
        assert result.after == {"enabled": "Once", "target": "Pxe", "mode": "UEFI"}
        assert "pending" in result.message and not result.warnings
        # the system itself still shows the active (not yet applied) override
        active = actions.system(c).boot
        assert (active.enabled, active.target) == ("Disabled", "None")
        assert not actions.boot_once(c).changed  # the pending override is what counts
        actions.power(c, "on", wait=5, poll=0.05)
    assert bmc.stats["boot_patch"] == 1 and bmc.stats["precondition_required"] == 0
    assert bmc.boots[-1][1] == "Pxe"  # the host booted from the network once
    assert bmc.boot_override()["BootSourceOverrideEnabled"] == "Disabled"  # consumed


def test_dgx_emulation_answers_as_the_vendor_documents(one):
    """The emulated DGX is not lenient: no If-Match, a stale ETag or the wrong path all fail."""
    bmc, connect = one("dgx-h100")
    body = {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Pxe"}}
    with connect() as c:
        captured = c.get(SD)["@odata.etag"]
        assert c.patch(SD, body).status == 428
        assert c.patch(DGX, body).status == 405
        assert c.patch(SD, body, headers={"If-Match": '"stale"'}).status == 412
        mode = {"Boot": {**body["Boot"], "BootSourceOverrideMode": "Legacy"}}
        assert c.patch(SD, mode, headers={"If-Match": captured}).status == 400  # UEFI only
        assert c.patch(SD, body, headers={"If-Match": captured}).status == 200
        assert c.get(SD)["@odata.etag"] != captured  # a write changes the ETag
        assert c.patch(SD, body, headers={"If-Match": captured}).status == 412
    assert bmc.stats["boot_patch"] == 1


def test_dgx_stale_etag_is_read_again_once(one):
    bmc, connect = one("dgx-h100")
    with connect() as c:
        stale = c.get(SD)
        first = {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Hdd"}}
        assert c.patch(SD, first, headers={"If-Match": stale["@odata.etag"]}).status == 200
        # someone else changed it after our read: the first PATCH gets 412, the second succeeds
        quirks = actions.vendors.PROFILES["nvidia-dgx"].boot
        warnings: list[str] = []
        response = actions._patch_boot(c, SD, quirks.payload("Pxe"), quirks, stale, warnings)
        assert response.status == 200 and not warnings
        assert c.get(SD)["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert bmc.stats["precondition_failed"] == 1 and bmc.stats["boot_patch"] == 2


def test_supermicro_sends_the_mode_with_the_target(one):
    bmc, connect = one("supermicro-hgx-h100")
    with connect() as c:
        dry = actions.boot_once(c, check_mode=True)
        assert dry.details["payload"] == {
            "Boot": {
                "BootSourceOverrideEnabled": "Once",
                "BootSourceOverrideTarget": "Pxe",
                "BootSourceOverrideMode": "UEFI",
            }
        }
        result = actions.boot_once(c)
        assert result.after == {"enabled": "Once", "target": "Pxe", "mode": "UEFI"}
    assert bmc.stats["boot_patch"] == 1


def test_vendor_override_is_obeyed(one):
    """Naming a profile replaces the detection: as "dell" the DGX is PATCHed at the system,
    which the DGX refuses; the error names the path and the answer."""
    _, connect = one("dgx-h100")
    with connect() as c, pytest.raises(RedfishError) as err:
        actions.boot_once(c, vendor="dell")
    assert err.value.kind is ErrorKind.HTTP
    assert "405" in err.value.reason and f"PATCH {DGX}:" in err.value.reason


def test_dell_boot_once_request_count_unchanged(one):
    _, connect = one("hgx-h200-8gpu")
    with connect() as c:
        before = dict(c.stats.by_method)
        actions.boot_once(c)
        used = {k: n for k, v in c.stats.by_method.items() if (n := v - before.get(k, 0))}
    assert used == {"GET": 2, "PATCH": 1}  # the systems (expanded), the PATCH, the read-back


# -- which system ------------------------------------------------------------------------------


def _host(uri: str) -> dict:
    return {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], "Boot": {"BootOrder": []}}


def test_a_multi_node_bmc_needs_the_system_named(creds):
    client = RedfishClient(Target("127.0.0.1", 9), creds)  # never connected: _pick is pure
    nodes = [_host("/redfish/v1/Systems/Node1"), _host("/redfish/v1/Systems/Node2")]
    with pytest.raises(RedfishError) as err:
        actions._pick(client, nodes, None)
    assert err.value.kind is ErrorKind.UNSUPPORTED and "Node1" in err.value.reason
    assert actions._pick(client, nodes, "Node2") is nodes[1]
    assert actions._pick(client, nodes, "/redfish/v1/Systems/Node1") is nodes[0]
    with pytest.raises(RedfishError) as err:
        actions._pick(client, nodes, "Node3")
    assert "Node3" in err.value.reason
    board = {"@odata.id": "/redfish/v1/Systems/HGX_Baseboard_0"}
    assert actions._pick(client, [board, nodes[0]], None) is nodes[0]  # a baseboard is no host
    client.close()
