"""Issue 9, case 4: secrets never leak, in any form we put on the wire.

Before: a BMC error echoing a password with ``"``, ``\\`` or non-ASCII leaked its JSON-escaped
form into ``discover --json``, ``ansible-inventory --list`` and the inventory cache, because
redaction matched the raw string only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sec_support import NASTY, assert_no_secret, leaked_forms, redfish_inventory, redfish_options

from racksmith import secrets
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasAuthError
from racksmith.redfish.credentials import Credentials as BmcCredentials
from racksmith.redfish.discover import discover_one
from racksmith.redfish.targets import Target

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("password", NASTY)
def test_redact_masks_every_form(password):
    secrets.remember(password)
    secrets.remember_basic_auth("root", password)
    for name, form in leaked_forms(password, "root").items():
        assert form not in secrets.redact(f"before {form} after"), name


@pytest.mark.parametrize("password", NASTY)
@pytest.mark.parametrize("auth", ["session", "basic"])
def test_bmc_echo_of_the_request_leaks_nothing(password, auth, hostile):
    """A BMC answers 400 with our whole request (headers and JSON body) in its message."""
    server = hostile("echo", status=400)
    creds = BmcCredentials("root", password)
    result = discover_one(Target("127.0.0.1", server.port), creds, redfish_options(auth=auth))
    assert result.error is not None
    seen = server.seen[0]
    wire = json.dumps(seen.headers) + seen.body.decode()
    if auth == "basic":  # the echo really carried the secret: the test can fail
        assert leaked_forms(password, "root")["basic"] in wire
    else:
        assert leaked_forms(password)["json"] in seen.body.decode()
    assert_no_secret(json.dumps(result.as_dict()), password, "root")
    assert_no_secret(json.dumps(result.as_dict(), ensure_ascii=False), password, "root")


def test_maas_key_never_leaks_from_an_echoing_401(hostile):
    secret = 'tok"en%2F-s€cret'
    server = hostile("echo", status=401)
    key = ApiKey("consumer-key-1", "token-key-22", secret)
    with (
        pytest.raises(MaasAuthError) as err,
        MaasClient(Credentials(f"{server.url}/MAAS/", key), retries=0) as client,
    ):
        client.get("machines/")
    assert leaked_forms(secret)["oauth-header"] in server.seen[0].headers["authorization"]
    for text in (str(err.value), err.value.body):
        assert_no_secret(text, secret)
        assert "token-key-22" not in text


def test_inventory_list_and_cache_hold_no_form_of_the_password(hostile, tmp_path):
    password = NASTY[-1]
    server = hostile("echo", status=400)
    env_file = tmp_path / "bmc.env"
    env_file.write_text(f"RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD='{password}'\n")
    env_file.chmod(0o600)
    cache = tmp_path / "cache"
    done = redfish_inventory(
        tmp_path,
        {
            "targets": [server.address],
            "scheme": "http",
            "credentials_file": str(env_file),
            "retries": 0,
            "deadline": 2,
            "cache": True,
            "cache_plugin": "ansible.builtin.jsonfile",
            "cache_connection": str(cache),
        },
    )
    assert done.returncode == 0, done.stderr
    assert "redfish_error" in done.stdout  # the echo came back as an error reason
    cached = "".join(p.read_text() for p in cache.iterdir())
    assert cached
    for text in (done.stdout, done.stderr, cached):
        assert_no_secret(text, password, "root")
