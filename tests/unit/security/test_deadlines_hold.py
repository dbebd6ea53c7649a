"""Issue 9, case 2: whole-request deadlines for Redfish and MAAS, whatever the server trickles.

Before: a server sending one byte a second kept a "5 s deadline" discovery busy for 44 s
(kind ``http_error``); slow headers held it 28 s; a MAAS that never answered took 7.8 minutes
to fail (5 attempts x 90 s) and no option shortened it.
"""

from __future__ import annotations

import time

import pytest
from sec_support import DEADLINE, MARGIN, redfish_options

from racksmith import cli
from racksmith.maas import options as maas_options
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import DEFAULT_DEADLINE, MaasClient
from racksmith.maas.errors import MaasTransportError
from racksmith.redfish.discover import discover_one
from racksmith.redfish.errors import ErrorKind
from racksmith.redfish.targets import Target

SLOW_MODES = ("silent", "trickle_headers", "trickle_body")


@pytest.mark.parametrize("mode", SLOW_MODES)
def test_redfish_deadline_holds_whatever_trickles(mode, hostile, bmc_creds):
    server = hostile(mode)
    started = time.monotonic()
    result = discover_one(Target("127.0.0.1", server.port), bmc_creds, redfish_options())
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE + MARGIN
    assert result.error is not None and result.error.kind is ErrorKind.TIMEOUT
    assert "per-BMC deadline of 1s ran out" in result.error.reason


def test_redfish_request_timeout_is_named_when_it_is_the_smaller(hostile, bmc_creds):
    server = hostile("trickle_body")
    options = redfish_options(deadline=30.0, connect_timeout=0.5, read_timeout=0.5)
    started = time.monotonic()
    result = discover_one(Target("127.0.0.1", server.port), bmc_creds, options)
    assert time.monotonic() - started < 1.0 + MARGIN
    assert "request timeout of 1s (connect 0.5s + read 0.5s) ran out" in result.error.reason


def _maas(server, **kwargs) -> MaasClient:
    key = ApiKey.parse("consumer-k:token-key-1:token-secret-1")
    return MaasClient(Credentials(f"{server.url}/MAAS/", key), **kwargs)


@pytest.mark.parametrize("mode", SLOW_MODES)
def test_maas_call_deadline_holds(mode, hostile):
    server = hostile(mode)
    started = time.monotonic()
    with pytest.raises(MaasTransportError) as err, _maas(server, deadline=DEADLINE) as client:
        client.get("machines/")
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert err.value.timed_out
    assert "deadline of 1s" in str(err.value)


def test_maas_default_deadline_is_under_a_minute():
    assert DEFAULT_DEADLINE < 60
    assert maas_options.DEADLINE.default == DEFAULT_DEADLINE
    client = maas_options.client_for(
        Credentials("http://maas/MAAS/", ApiKey.parse("a-a:b-b:c-c")), True, {}
    )
    assert client.deadline < 60 and sum(client.timeout) <= 60


def test_maas_cli_takes_timeout_and_deadline(hostile, monkeypatch, capsys):
    server = hostile("silent")
    monkeypatch.setenv("MAAS_URL", f"{server.url}/MAAS/")
    monkeypatch.setenv("MAAS_API_KEY", "consumer-k:token-key-1:token-secret-1")
    started = time.monotonic()
    code = cli.main(["maas", "machines", "--timeout", "0.5", "--deadline", "1"])
    assert code == 1 and time.monotonic() - started < 1 + MARGIN
    assert "ran out" in capsys.readouterr().err


def test_trickling_tls_handshake_is_bounded(hostile, bmc_creds):
    """An https BMC that trickles its handshake: the connect timeout bounds the whole handshake."""
    server = hostile("trickle_tls")
    options = redfish_options(connect_timeout=DEADLINE)
    options = type(options)(
        client=type(options.client)(**{**options.client.__dict__, "scheme": "https"}),
        deadline=30.0,
    )
    started = time.monotonic()
    result = discover_one(Target("127.0.0.1", server.port), bmc_creds, options)
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert result.error.kind is ErrorKind.TIMEOUT
