"""Every client against every hostile mode: each ends within its bound with a typed error that
names what happened, and never with another exception or a leaked secret.

Clients: Redfish discovery of one BMC, a Redfish module action (through ansible_support, as the
modules run it), the MAAS client listing machines, and the MAAS inventory's listing path.
"""

from __future__ import annotations

import time

import pytest
from sec_support import DEADLINE, MARGIN, assert_no_secret, module_params, redfish_options

from racksmith.maas import options as maas_options
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.errors import MaasError
from racksmith.maas.model import parse_machines
from racksmith.redfish import actions
from racksmith.redfish.ansible_support import client_from_params
from racksmith.redfish.discover import discover_one
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target
from racksmith.testing.hostile import MODES

PASSWORD = 'matrix"pw\\ü%1'
MAAS_SECRET = "matrix-token-secret-9"

#: The error kind each mode must give a BMC (the reason is checked to be non-empty).
REDFISH_KIND = {
    "silent": ErrorKind.TIMEOUT,
    "trickle_headers": ErrorKind.TIMEOUT,
    "trickle_body": ErrorKind.TIMEOUT,
    "trickle_tls": ErrorKind.TIMEOUT,  # over http: a status line that never ends
    "reset": ErrorKind.RESET,
    "huge": ErrorKind.MALFORMED,
    "wrong_shape": ErrorKind.MALFORMED,
    "html": ErrorKind.MALFORMED,
    "error500": ErrorKind.HTTP,
    "echo": ErrorKind.AUTH,
}


def _start(hostile, mode):
    return hostile(mode, huge_bytes=40 << 20)


@pytest.mark.parametrize("mode", MODES)
def test_redfish_discovery(mode, hostile):
    from racksmith.redfish.credentials import Credentials as BmcCredentials

    server = _start(hostile, mode)
    started = time.monotonic()
    result = discover_one(
        Target("127.0.0.1", server.port),
        BmcCredentials("root", PASSWORD),
        redfish_options(max_answer_bytes=4 << 20),
    )
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert result.error is not None and result.error.kind is REDFISH_KIND[mode], result.error
    assert result.error.reason
    assert_no_secret(str(result.as_dict()), PASSWORD, "root")


@pytest.mark.parametrize("mode", MODES)
def test_redfish_module_action(mode, hostile, monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", PASSWORD)
    server = _start(hostile, mode)
    params = module_params(server.address)
    started = time.monotonic()
    with pytest.raises(RedfishError) as err, client_from_params(params) as client:
        actions.power(client, "on", check_mode=True)
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert err.value.reason
    assert_no_secret(str(err.value), PASSWORD, "root")


@pytest.mark.parametrize("mode", MODES)
def test_maas_listing(mode, hostile):
    server = _start(hostile, mode)
    creds = Credentials(
        f"{server.url}/MAAS/", ApiKey("matrix-consumer", "matrix-token", MAAS_SECRET)
    )
    settings = {"timeout": 5.0, "deadline": DEADLINE, "max_answer_bytes": 4 << 20}
    started = time.monotonic()
    with pytest.raises(MaasError) as err, maas_options.client_for(creds, True, settings) as c:
        parse_machines(c.get("machines/"))
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert str(err.value)
    assert_no_secret(str(err.value), MAAS_SECRET)
