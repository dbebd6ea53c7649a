"""The simulator answers like MAAS 3.5 (maas-api.md §1-§4, §9.2): auth, dispatch, bodies,
state machine with its 409s, error shapes, events, disk order, persistence."""

from __future__ import annotations

import json
import time

import pytest

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.state import Store
from racksmith.maas.model import NodeStatus

API = "api/2.0/"
SPEED = 3000.0

REDFISH = {
    "power_type": "redfish",
    "power_parameters_power_address": "127.0.0.1:8443",
    "power_parameters_power_user": "root",
    "power_parameters_power_pass": "calvin",
}


def create(sim, mac="02:5a:00:01:01:00", **extra):
    data = {"architecture": "amd64", "mac_addresses": mac, **REDFISH, **extra}
    reply = sim.raw("POST", API + "machines/", data=data)
    assert reply.status_code == 200, reply.text
    return reply.json()


def wait_status(sim, system_id, status, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = sim.raw("GET", f"{API}machines/{system_id}/").json()
        if data["status"] == status:
            return data
        time.sleep(0.02)
    raise AssertionError(f"{system_id} never reached {status}: {data['status_name']}")


# -- auth ------------------------------------------------------------


def test_version_and_describe_need_no_auth(sim):
    version = sim.raw("GET", API + "version/", sign=False)
    assert version.status_code == 200
    assert version.json()["version"].startswith("3.5")
    describe = sim.raw("GET", API + "describe/", sign=False).json()
    names = {r["name"] for r in describe["resources"]}
    assert {"MachinesHandler", "MachineHandler", "BlockDeviceHandler", "EventsHandler"} <= names
    machine = next(r for r in describe["resources"] if r["name"] == "MachineHandler")
    ops = {a["op"] for a in machine["auth"]["actions"]}
    assert {"deploy", "commission", "release", "set_storage_layout"} <= ops
    assert machine["auth"]["uri"].startswith(f"http://127.0.0.1:{sim.server.server_address[1]}/")


def test_unsigned_get_is_401_with_challenge(sim):
    reply = sim.raw("GET", API + "machines/", sign=False)
    assert reply.status_code == 401
    assert reply.headers["WWW-Authenticate"] == 'OAuth realm="OAuth"'
    assert reply.headers["Content-Type"].startswith("text/plain")


def test_expired_timestamp_is_refused_with_maas_text(sim):
    old = time.time() - 301
    reply = sim.raw("GET", API + "users/?op=whoami", timestamp=old)
    assert reply.status_code == 401
    assert reply.text.startswith(
        f"Authorization Error: 'Expired timestamp: given {int(old)} and now "
    )
    assert reply.text.endswith("has a greater difference than threshold 300'")
    # One-sided check (piston 0.3rc2): a client clock ahead of the server passes.
    assert sim.raw("GET", API + "users/?op=whoami", timestamp=time.time() + 3600).status_code == 200


def test_nonce_reuse_is_refused(sim):
    first = sim.raw("GET", API + "users/?op=whoami", nonce="12345")
    again = sim.raw("GET", API + "users/?op=whoami", nonce="12345")
    assert first.status_code == 200
    assert again.status_code == 401
    assert "Nonce already used" in again.text


def test_bad_keys_get_maas_bodies(sim):
    key = sim.key
    from racksmith.maas.auth import ApiKey

    bad_consumer = ApiKey("nope", key.token_key, key.token_secret)
    assert sim.raw("GET", API + "machines/", key=bad_consumer).text == (
        "Authorization Error: Invalid API key."
    )
    bad_token = ApiKey(key.consumer_key, "tok", key.token_secret)
    assert sim.raw("GET", API + "machines/", key=bad_token).text == (
        "Authorization Error: 'Invalid access token: tok'"
    )
    bad_secret = ApiKey(key.consumer_key, key.token_key, "wrong")
    assert sim.raw("GET", API + "machines/", key=bad_secret).status_code == 401


# -- dispatch and bodies ------------------------------------------------------------


def test_wrong_verb_or_unknown_op_is_unrecognised_signature(sim):
    machine = create(sim)
    reply = sim.raw("GET", f"{API}machines/{machine['system_id']}/?op=deploy")
    assert reply.status_code == 400
    assert reply.text == "Unrecognised signature: method=GET op=deploy"
    assert (
        sim.raw("POST", f"{API}machines/{machine['system_id']}/?op=frobnicate").status_code == 400
    )


def test_op_is_read_from_the_body_too(sim):
    machine = create(sim, commission="false")
    reply = sim.raw("POST", f"{API}machines/{machine['system_id']}/", data={"op": "commission"})
    assert reply.status_code == 200
    assert reply.json()["status_name"] == "Commissioning"


def test_multipart_with_base64_parts_is_parsed(sim):
    """python-libmaas sends every field as a base64 MIME part; lists repeat the name."""
    from email.mime.application import MIMEApplication
    from email.mime.multipart import MIMEMultipart

    message = MIMEMultipart("form-data")
    fields = [
        ("architecture", b"amd64/generic"),
        ("mac_addresses", b"02:5a:00:00:09:00"),
        ("mac_addresses", b"02:5a:00:00:09:01"),
        ("power_type", b"manual"),
        ("hostname", b"multi"),
    ]
    for name, value in fields:
        part = MIMEApplication(value)
        part.add_header("Content-Disposition", "form-data", name=name)
        message.attach(part)
    body = message.as_bytes().split(b"\n\n", 1)[1].replace(b"\n", b"\r\n")
    reply = sim.raw(
        "POST", API + "machines/", data=body, headers={"Content-Type": message["Content-Type"]}
    )
    assert reply.status_code == 200, reply.text
    assert [i["mac_address"] for i in reply.json()["interface_set"]] == [
        "02:5a:00:00:09:00",
        "02:5a:00:00:09:01",
    ]


def test_404_body(sim):
    reply = sim.raw("GET", f"{API}machines/nosuch/")
    assert reply.status_code == 404
    assert reply.text == "No Machine matches the given query."


# -- create and field errors ------------------------------------------------------------


def test_admin_create_commissions_and_owns(sim):
    data = {"architecture": "amd64", "mac_addresses": "02:5A:00:01:02:00", **REDFISH}
    machine = sim.raw("POST", API + "machines/", data=data).json()
    assert machine["status"] == NodeStatus.COMMISSIONING
    assert machine["owner"] == "admin"
    assert machine["architecture"] == "amd64/generic"  # bare amd64 fixed up
    assert machine["interface_set"][0]["mac_address"] == "02:5a:00:01:02:00"  # normalised


def test_non_admin_create_is_new_and_anonymous_is_enlistment(sim):
    op_machine = sim.raw(
        "POST",
        API + "machines/",
        key=sim.user_key("operator"),
        data={"architecture": "amd64", "mac_addresses": "02:5a:00:00:07:00", **REDFISH},
    ).json()
    assert op_machine["status"] == NodeStatus.NEW
    anon = sim.raw(
        "POST",
        API + "machines/",
        sign=False,
        data={"architecture": "amd64", "mac_addresses": "02:5a:00:00:08:00"},
    )
    assert anon.status_code == 200
    assert anon.json()["status"] == NodeStatus.NEW


def test_create_field_errors(sim):
    create(sim, mac="02:5a:00:01:03:00", hostname="gpu03")
    dup = sim.raw(
        "POST",
        API + "machines/",
        data={"architecture": "amd64", "mac_addresses": "02:5a:00:01:03:00", **REDFISH},
    )
    assert dup.status_code == 400
    assert dup.json() == {
        "mac_addresses": ["MAC address 02:5a:00:01:03:00 already in use on gpu03."]
    }
    no_user = {k: v for k, v in REDFISH.items() if k != "power_parameters_power_user"}
    reply = sim.raw(
        "POST",
        API + "machines/",
        data={"architecture": "amd64", "mac_addresses": "02:5a:00:01:04:00", **no_user},
    )
    assert reply.json() == {"power_parameters": ["Redfish user: This field is required."]}


def test_mac_filter_is_exact_and_validated(sim):
    create(sim, mac="02:5a:00:01:05:00")
    lower = sim.raw("GET", API + "machines/", params={"mac_address": "02:5a:00:01:05:00"}).json()
    upper = sim.raw("GET", API + "machines/", params={"mac_address": "02:5A:00:01:05:00"}).json()
    assert len(lower) == 1 and upper == []  # the trap of §2.2: always send lowercase
    bad = sim.raw("GET", API + "machines/", params={"mac_address": "zz"})
    assert bad.status_code == 400
    assert bad.json() == {"mac_address": ["Invalid parameter: invalid MAC address format"]}


# -- state machine ------------------------------------------------------------


def test_transition_errors_are_409_with_maas_text(sim):
    machine = create(sim, commission="false")
    sid = machine["system_id"]
    deploy = sim.raw("POST", f"{API}machines/{sid}/?op=deploy")
    assert deploy.status_code == 409
    assert deploy.text == "Can't deploy a machine that is in the 'New' state"
    assert "Retry-After" not in deploy.headers
    release = sim.raw("POST", f"{API}machines/{sid}/?op=release")
    assert release.text == "Machine cannot be released in its current state ('New')."
    sim.raw("POST", f"{API}machines/{sid}/?op=commission")
    wait_status(sim, sid, NodeStatus.READY)
    sim.raw("POST", f"{API}machines/{sid}/?op=deploy")
    wait_status(sim, sid, NodeStatus.DEPLOYED)
    again = sim.raw("POST", f"{API}machines/{sid}/?op=commission")
    assert again.status_code == 409
    assert again.text == "Invalid transition: Deployed -> Commissioning."


def test_deploy_passes_through_allocated_and_validates_series(sim):
    sim.store.enlist_ready(1)
    sid = next(iter(sim.store.machines))
    bad = sim.raw("POST", f"{API}machines/{sid}/?op=deploy", data={"distro_series": "trusty"})
    assert bad.status_code == 400
    assert bad.json()["distro_series"][0].startswith("'trusty' is not a valid distro_series.")
    kernel = sim.raw("POST", f"{API}machines/{sid}/?op=deploy", data={"hwe_kernel": "hwe-24.04"})
    assert kernel.text == "hwe-24.04 is not available for ubuntu/jammy on amd64/generic."
    reply = sim.raw(
        "POST",
        f"{API}machines/{sid}/?op=deploy",
        data={"distro_series": "jammy", "hwe_kernel": "hwe-22.04"},
    ).json()
    assert reply["status"] == NodeStatus.DEPLOYING
    events = sim.raw("GET", API + "events/", params={"op": "query", "id": sid}).json()["events"]
    texts = [e["description"] for e in events]
    assert "From 'Ready' to 'Allocated'" in texts and "From 'Allocated' to 'Deploying'" in texts


def test_abort_is_asynchronous(sim):
    sid = create(sim)["system_id"]
    reply = sim.raw("POST", f"{API}machines/{sid}/?op=abort").json()
    assert reply["status"] == NodeStatus.COMMISSIONING  # not yet: power-off first
    wait_status(sim, sid, NodeStatus.NEW)
    ready = sim.raw("POST", f"{API}machines/{sid}/?op=abort")
    assert ready.status_code == 409
    assert ready.text.startswith("Cannot abort in current state: node ")


def test_mark_broken_needs_ownership_even_for_admin(sim):
    sim.store.enlist_ready(1)
    sid = next(iter(sim.store.machines))
    operator = sim.user_key("operator")
    sim.raw("POST", f"{API}machines/{sid}/?op=deploy", key=operator)
    refused = sim.raw("POST", f"{API}machines/{sid}/?op=mark_broken", data={"comment": "x"})
    assert refused.status_code == 403
    ok = sim.raw(
        "POST",
        f"{API}machines/{sid}/?op=mark_broken",
        key=operator,
        data={"comment": "GPU 3 missing"},
    ).json()
    assert (ok["status"], ok["error_description"], ok["owner"]) == (8, "GPU 3 missing", None)
    fixed = sim.raw("POST", f"{API}machines/{sid}/?op=mark_fixed").json()
    assert fixed["status_name"] == "Ready"


def test_release_with_erase_goes_through_disk_erasing(sim):
    sim.store.enlist_ready(1)
    sid = next(iter(sim.store.machines))
    sim.raw("POST", f"{API}machines/{sid}/?op=deploy")
    wait_status(sim, sid, NodeStatus.DEPLOYED)
    reply = sim.raw(
        "POST", f"{API}machines/{sid}/?op=release", data={"erase": "true", "quick_erase": "true"}
    ).json()
    assert reply["status"] == NodeStatus.DISK_ERASING
    done = wait_status(sim, sid, NodeStatus.READY)
    assert done["owner"] is None and done["ip_addresses"] == []
    noop = sim.raw("POST", f"{API}machines/{sid}/?op=release")
    assert noop.status_code == 200  # Ready: a no-op


# -- storage ------------------------------------------------------------


def test_disk_order_is_random_per_commissioning_and_identities_stable(sim):
    sid = create(sim)["system_id"]
    orders = []
    for _ in range(4):
        wait_status(sim, sid, NodeStatus.READY)
        disks = sim.raw("GET", f"{API}nodes/{sid}/blockdevices/").json()
        orders.append([d["serial"] for d in sorted(disks, key=lambda d: d["id"])])
        sim.raw("POST", f"{API}machines/{sid}/?op=commission")
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert len({tuple(o) for o in orders}) > 1, "enumeration order never changed"


def test_set_boot_disk_moves_only_the_pointer(sim):
    sim.store.enlist_ready(1)
    sid = next(iter(sim.store.machines))
    machine = sim.raw("GET", f"{API}machines/{sid}/").json()
    other = next(d for d in machine["blockdevice_set"] if d["id"] != machine["boot_disk"]["id"])
    reply = sim.raw("POST", f"{API}nodes/{sid}/blockdevices/{other['id']}/?op=set_boot_disk")
    assert (reply.status_code, reply.text) == (200, "OK")
    after = sim.raw("GET", f"{API}machines/{sid}/").json()
    assert after["boot_disk"]["id"] == other["id"]
    assert after["boot_disk"]["partitions"] == []  # layout not re-applied (§6)
    layout = sim.raw(
        "POST",
        f"{API}machines/{sid}/?op=set_storage_layout",
        data={"storage_layout": "flat", "root_device": other["id"]},
    ).json()
    assert [p["filesystem"]["mount_point"] for p in layout["boot_disk"]["partitions"]] == [
        "/boot/efi",
        "/",
    ]


def test_storage_calls_need_ready(sim):
    sid = create(sim)["system_id"]  # Commissioning
    disks = sim.raw("GET", f"{API}nodes/{sid}/blockdevices/").json()
    assert disks == []
    wait_status(sim, sid, NodeStatus.READY)
    disk = sim.raw("GET", f"{API}nodes/{sid}/blockdevices/").json()[0]
    sim.raw("POST", f"{API}machines/{sid}/?op=deploy")
    reply = sim.raw("POST", f"{API}nodes/{sid}/blockdevices/{disk['id']}/?op=set_boot_disk")
    assert (reply.status_code, reply.text) == (
        409,
        "Cannot set as boot disk because the machine is not Ready.",
    )
    layout = sim.raw("POST", f"{API}machines/{sid}/?op=set_storage_layout")
    assert layout.status_code == 409


# -- events ------------------------------------------------------------


def test_events_query_filters_levels_and_limits(sim):
    sid = create(sim)["system_id"]
    wait_status(sim, sid, NodeStatus.READY)
    info = sim.raw("GET", API + "events/", params={"op": "query", "id": sid}).json()
    debug = sim.raw(
        "GET", API + "events/", params={"op": "query", "id": sid, "level": "AUDIT"}
    ).json()
    assert info["count"] < debug["count"]
    ids = [e["id"] for e in debug["events"]]
    assert ids == sorted(ids, reverse=True)  # newest first
    after = sim.raw(
        "GET", API + "events/", params={"op": "query", "id": sid, "level": "AUDIT", "after": ids[2]}
    ).json()
    assert [e["id"] for e in after["events"]] == ids[:2]
    too_many = sim.raw("GET", API + "events/", params={"op": "query", "limit": 1001})
    assert too_many.status_code == 400
    assert set(debug["events"][0]) == {
        "username",
        "node",
        "hostname",
        "id",
        "level",
        "created",
        "type",
        "description",
    }


def test_power_failure_reverts_to_new_with_bmc_event(sim):
    sid = create(sim, commission="false")["system_id"]
    sim.raw("POST", "sim/faults/", data={"machine": sid, "add": "power_fails"})
    sim.raw("POST", f"{API}machines/{sid}/?op=commission")
    machine = wait_status(sim, sid, NodeStatus.NEW)
    events = sim.raw("GET", API + "events/", params={"op": "query", "id": sid}).json()["events"]
    bmc = next(e for e in events if e["type"] == "Failed to query node's BMC")
    assert "Aborting COMMISSIONING and reverting to NEW" in bmc["description"]
    assert machine["status_message"].startswith("Node changed status - From 'Commissioning'")


# -- persistence ------------------------------------------------------------


def test_state_survives_a_restart(tmp_path):
    path = tmp_path / "maas" / "state.json"
    first = Store(clock=SimClock(SPEED), path=path, seed=1)
    first.enlist_ready(2)
    key = first.admin_key()
    first.close()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    second = Store(clock=SimClock(SPEED), path=path)
    assert second.admin_key() == key
    assert sorted(m.hostname for m in second.machines.values()) == ["sim-0001", "sim-0002"]
    second.enlist_ready(2)  # idempotent
    assert len(second.machines) == 2
    assert json.loads(path.read_text())["version"] == 1


@pytest.mark.parametrize("fault,status", [(503, "10"), (409, "5")])
def test_injected_retry_after_faults(sim, fault, status):
    sim.raw(
        "POST", "sim/http-faults/", data={"status": fault, "retry_after": status, "path": "/users/"}
    )
    reply = sim.raw("GET", API + "users/?op=whoami")
    assert reply.status_code == fault and reply.headers["Retry-After"] == status
    assert sim.raw("GET", API + "users/?op=whoami").status_code == 200


def test_lab_issued_key_is_adopted(tmp_path):
    """`racksmith lab up` writes secrets/maas.env first; the simulator serves that key."""
    import argparse

    from racksmith.lab.maassim import build_store, configure

    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "maas.env").write_text(
        "MAAS_URL=http://127.0.0.1:5240/MAAS/\nMAAS_API_KEY=aaa:bbb:ccc\n"
    )
    parser = argparse.ArgumentParser()
    configure(parser, "maas")
    store = build_store(parser.parse_args(["--lab-dir", str(tmp_path)]))
    assert store.admin_key() == "aaa:bbb:ccc"
    assert store.path == tmp_path / "maas" / "state.json"


def test_every_simulator_fault_can_be_named_in_the_rack_spec():
    from racksmith.lab.maassim.state import MAAS_FAULTS
    from racksmith.lab.spec import KNOWN_FAULTS

    assert MAAS_FAULTS <= KNOWN_FAULTS


def test_update_is_all_or_nothing(sim):
    sid = create(sim)["system_id"]
    reply = sim.raw(
        "PUT",
        f"{API}machines/{sid}/",
        data={"power_parameters_power_pass": "new", "pool": "nosuchpool"},
    )
    assert reply.status_code == 400 and "pool" in reply.json()
    params = sim.raw("GET", f"{API}machines/{sid}/?op=power_parameters").json()
    assert params["power_pass"] == "calvin"
