"""The client against emulated iDRACs: sessions, TLS, timeouts, retries, RAC0218 backoff."""

from __future__ import annotations

import logging
import time

import pytest

from racksmith.lab.bmc.behaviour import Faults, Latency, Settings
from racksmith.lab.bmc.tree import SushyStaticUpstream
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target

SYSTEMS = "/redfish/v1/Systems"


def test_session_login_and_logout(rack, server, creds, client_options):
    lab = rack([server(1)])
    bmc = lab.bmc("gpu01")
    with RedfishClient(lab.target("gpu01"), creds, client_options) as client:
        assert client.stats.auth == "session"
        assert bmc.live_sessions() == 1
        assert client.get(SYSTEMS)["Members@odata.count"] == 1
    assert bmc.live_sessions() == 0
    assert bmc.stats["sessions_created"] == bmc.stats["sessions_deleted"] == 1


def test_session_deleted_when_the_caller_fails(rack, server, creds, client_options):
    lab = rack([server(1)])
    bmc = lab.bmc("gpu01")
    with (
        pytest.raises(RuntimeError),
        RedfishClient(lab.target("gpu01"), creds, client_options) as client,
    ):
        client.get(SYSTEMS)
        raise RuntimeError("caller bug")
    assert bmc.live_sessions() == 0 and bmc.stats["sessions_deleted"] == 1


def test_session_deleted_when_the_deadline_expires(rack, server, creds, client_options):
    lab = rack([server(1)], settings=Settings(latency=Latency(0.3, 0.3)))
    bmc = lab.bmc("gpu01")
    with (
        pytest.raises(RedfishError) as err,
        RedfishClient(lab.target("gpu01"), creds, client_options, deadline=Deadline(1.0)) as client,
    ):
        for _ in range(10):
            client.get(SYSTEMS)
    assert err.value.kind is ErrorKind.TIMEOUT and "deadline" in err.value.reason
    # logout has its own budget, so the session is gone even though the deadline was spent
    assert bmc.live_sessions() == 0 and bmc.stats["sessions_deleted"] == 1


def test_sessions_deleted_on_server_errors(rack, server, creds, client_options):
    lab = rack([server(1, faults=("bmc_malformed",))])
    bmc = lab.bmc("gpu01")
    with (
        pytest.raises(RedfishError) as err,
        RedfishClient(lab.target("gpu01"), creds, client_options) as client,
    ):
        client.get(SYSTEMS)
    assert err.value.kind is ErrorKind.MALFORMED
    assert bmc.stats["sessions_created"] == bmc.stats["sessions_deleted"] == 1


def test_bad_credentials_are_auth_failed(rack, server, client_options):
    from racksmith.redfish.credentials import Credentials

    lab = rack([server(1)])
    with pytest.raises(RedfishError) as err:
        RedfishClient(
            lab.target("gpu01"), Credentials("root", "wrong-password"), client_options
        ).__enter__()
    assert err.value.kind is ErrorKind.AUTH and err.value.status == 401
    assert lab.bmc("gpu01").live_sessions() == 0


def test_tls_is_verified_by_default(rack, server, creds):
    lab = rack([server(1)])
    strict = ClientOptions(connect_timeout=2, read_timeout=3)  # system CA store: lab CA unknown
    with pytest.raises(RedfishError) as err:
        RedfishClient(lab.target("gpu01"), creds, strict).__enter__()
    assert err.value.kind is ErrorKind.TLS and "certificate verify failed" in err.value.reason


def test_insecure_opt_out_works_and_is_logged(rack, server, creds, caplog):
    lab = rack([server(1)])
    caplog.set_level(logging.WARNING, logger="racksmith.redfish")
    with RedfishClient(lab.target("gpu01"), creds, ClientOptions(verify=False)) as client:
        client.get(SYSTEMS)
    assert any("TLS verification is DISABLED" in r.getMessage() for r in caplog.records)


def test_plain_http_where_a_test_needs_it(rack, server, creds):
    lab = rack([server(1)], scheme="http")
    with RedfishClient(lab.target("gpu01"), creds, ClientOptions(scheme="http")) as client:
        assert client.get(SYSTEMS)["Members"]


def test_session_limit_backs_off_instead_of_hammering(rack, server, creds, client_options):
    lab = rack(
        [server(1)], faults={"gpu01": Faults(busy_cycle=3)}
    )  # 503 RAC0218 twice, then a slot
    bmc = lab.bmc("gpu01")
    started = time.monotonic()
    with RedfishClient(lab.target("gpu01"), creds, client_options) as client:
        client.get(SYSTEMS)
    elapsed = time.monotonic() - started
    assert bmc.stats["busy"] == 2 and client.stats.retries == 2
    # backoff 0.2 s then 0.4 s (+-20 % jitter): waited, did not retry in a tight loop
    assert elapsed >= 0.45
    assert bmc.live_sessions() == 0


def test_session_limit_that_never_clears_is_busy(rack, server, creds, client_options):
    lab = rack([server(1)], settings=Settings(session_limit=2))
    bmc = lab.bmc("gpu01")
    leaked = [RedfishClient(lab.target("gpu01"), creds, client_options) for _ in range(2)]
    for client in leaked:
        client.login()  # two sessions nobody logs out of: the table is full
    try:
        with pytest.raises(RedfishError) as err:
            RedfishClient(lab.target("gpu01"), creds, client_options).__enter__()
        assert err.value.kind is ErrorKind.BUSY and "RAC0218" in err.value.reason
        assert bmc.stats["busy"] == 1 + client_options.busy_retries  # bounded: first try + retries
    finally:
        for client in leaked:
            client.close()
    assert bmc.live_sessions() == 0


def test_transient_resets_are_retried_for_gets(rack, server, creds, client_options):
    lab = rack([server(1)], faults={"gpu01": Faults(reset_every=2)})
    with RedfishClient(lab.target("gpu01"), creds, client_options) as client:
        for _ in range(3):
            client.get(SYSTEMS)
    assert client.stats.retries >= 1


def test_persistent_resets_fail_as_reset(rack, server, creds, client_options):
    lab = rack([server(1, faults=("bmc_reset",))])
    with (
        pytest.raises(RedfishError) as err,
        RedfishClient(lab.target("gpu01"), creds, client_options) as client,
    ):
        client.get(SYSTEMS)
    assert err.value.kind is ErrorKind.RESET
    assert client.stats.by_method["GET"] == 1 + client_options.retries
    assert lab.bmc("gpu01").live_sessions() == 0  # logout still works on that BMC


def test_hang_times_out_per_request(rack, server, creds):
    options = ClientOptions(scheme="http", read_timeout=0.5, retries=0)
    lab = rack([server(1, faults=("bmc_hang",))], scheme="http")
    started = time.monotonic()
    with pytest.raises(RedfishError) as err:
        RedfishClient(lab.target("gpu01"), creds, options).__enter__()
    assert err.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 2


def test_refused_port_is_unreachable_after_bounded_retries(creds, client_options):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    started = time.monotonic()
    with pytest.raises(RedfishError) as err:
        RedfishClient(Target("127.0.0.1", port), creds, client_options).__enter__()
    assert err.value.kind is ErrorKind.UNREACHABLE
    assert time.monotonic() - started < 2  # never the redfish library's 10 retries


def test_expand_and_per_member_fetch_give_the_same_documents(rack, server, creds, client_options):
    lab = rack([server(1)])
    with RedfishClient(lab.target("gpu01"), creds, client_options) as expanded:
        a = expanded.get_collection("/redfish/v1/Systems/System.Embedded.1/EthernetInterfaces")
    without = ClientOptions(**{**client_options.__dict__, "expand": "never"})
    with RedfishClient(lab.target("gpu01"), creds, without) as plain:
        b = plain.get_collection("/redfish/v1/Systems/System.Embedded.1/EthernetInterfaces")
    assert expanded.stats.expand is True and expanded.stats.requests < plain.stats.requests
    assert a == b and len(a) == 5


def test_sushy_static_basic_fallback_and_no_expand(creds):
    """The third-party emulator as is: no session token, 404 on $expand; the client copes."""
    upstream = SushyStaticUpstream()
    try:
        options = ClientOptions(scheme="http", read_timeout=3)
        with RedfishClient(Target("127.0.0.1", upstream.port), creds, options) as client:
            systems = client.get_collection(SYSTEMS)
        assert client.stats.auth == "basic"  # POST answered 204 without a token
        assert client.stats.expand is False  # sushy-static answers 404 to any query string
        assert systems[0]["SKU"] == "F54P1G3"
    finally:
        upstream.close()
