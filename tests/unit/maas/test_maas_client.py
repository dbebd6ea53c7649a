"""The client signs every attempt, corrects skew, retries only where safe, and raises typed
errors that carry status and body but never the key (against the simulator, not mocks)."""

from __future__ import annotations

import time

import pytest

from racksmith.maas.auth import ApiKey, Credentials, resolve_credentials
from racksmith.maas.client import MaasClient, api_root
from racksmith.maas.errors import (
    MaasAuthError,
    MaasBadRequest,
    MaasConfigError,
    MaasConflict,
    MaasNotFound,
    MaasServerError,
    MaasTransportError,
)

KEY = "AbCdEfGhIjKlMnOpQr:StUvWxYzAbCdEfGhIj:0123456789abcdefghijklmnopqrstuv"


def stats(sim, method="GET"):
    return sum(v for k, v in sim.store.stats.items() if k.startswith(method + " "))


def test_header_matches_oauthlib_plaintext():
    """Byte-for-byte what oauthlib 4 produces (maas-api.md §1), realm as python-libmaas adds."""
    oauth1 = pytest.importorskip("oauthlib.oauth1")
    key = ApiKey.parse(KEY)
    ours = key.authorization(timestamp=1796008866, nonce="48304822812860684451796008866")
    client = oauth1.Client(
        key.consumer_key,
        "",
        key.token_key,
        key.token_secret,
        signature_method=oauth1.SIGNATURE_PLAINTEXT,
        realm="OAuth",
        nonce="48304822812860684451796008866",
        timestamp="1796008866",
    )
    _, headers, _ = client.sign("http://maas/MAAS/api/2.0/machines/")
    assert ours == headers["Authorization"]


def test_key_parsing_names_the_source_not_the_value():
    with pytest.raises(MaasConfigError) as exc:
        ApiKey.parse("onlyone-secretvalue", source="MAAS_API_KEY")
    assert "MAAS_API_KEY" in str(exc.value)
    assert "secretvalue" not in str(exc.value)
    key = ApiKey.parse(KEY)
    assert "0123456789" not in repr(key) and "0123456789" not in str(key)
    assert "0123456789" not in repr(Credentials("http://m/", key))


def test_credentials_precedence(tmp_path):
    env_file = tmp_path / "maas.env"
    env_file.write_text(f"# lab\nexport MAAS_URL='http://file:5240/MAAS/'\nMAAS_API_KEY={KEY}\n")
    env_file.chmod(0o600)
    from_file = resolve_credentials(credentials_file=env_file, environ={})
    assert from_file.url == "http://file:5240/MAAS/"
    from_env = resolve_credentials(
        credentials_file=env_file, environ={"MAAS_URL": "http://env:5240/MAAS/"}
    )
    assert from_env.url == "http://env:5240/MAAS/" and from_env.key == from_file.key
    with pytest.raises(MaasConfigError, match="no MAAS API key"):
        resolve_credentials(url="http://x/", environ={})
    with pytest.raises(MaasConfigError, match="cannot read"):
        resolve_credentials(credentials_file=tmp_path / "missing", environ={})


def test_api_root():
    assert api_root("http://m:5240/MAAS") == "http://m:5240/MAAS/api/2.0/"
    assert api_root("http://m:5240/MAAS/api/2.0/") == "http://m:5240/MAAS/api/2.0/"


def test_form_and_multipart_bodies_with_op_in_query(sim, client):
    sent = []
    original = client._session.request

    def spy(method, url, **kwargs):
        sent.append((method, url, kwargs))
        return original(method, url, **kwargs)

    client._session.request = spy
    for multipart, mac in ((False, "02:5a:00:00:10:00"), (True, "02:5a:00:00:11:00")):
        made = client.post(
            "machines/",
            {
                "architecture": "amd64/generic",
                "mac_addresses": [mac],
                "power_type": "manual",
                "commission": False,
            },
            multipart=multipart,
        )
        assert made["interface_set"][0]["mac_address"] == mac
    client.post(f"machines/{made['system_id']}/", op="commission")
    assert sent[0][2]["data"] and "files" not in sent[0][2]
    assert sent[1][2]["files"]
    assert sent[2][1].endswith("?op=commission")


def test_retry_after_is_honoured_and_each_attempt_resigned(sim, client):
    """Two 503s with Retry-After then success: three attempts, three distinct nonces (the
    simulator refuses a reused nonce, so a replayed header would fail)."""
    sim.store.add_http_fault(status=503, retry_after="10", path="/users/", count=2)
    assert client.whoami()["username"] == "admin"
    assert client.requests_sent == 3


def test_409_without_retry_after_is_not_retried(sim, client):
    made = client.post(
        "machines/",
        {
            "architecture": "amd64",
            "mac_addresses": "02:5a:00:00:12:00",
            "power_type": "manual",
            "commission": "false",
        },
    )
    with pytest.raises(MaasConflict) as exc:
        client.post(f"machines/{made['system_id']}/", op="release")
    assert exc.value.status == 409 and exc.value.retry_after is None
    assert exc.value.body == "Machine cannot be released in its current state ('New')."
    assert stats(sim, "POST") == 2


def test_clock_skew_is_corrected_from_date(sim, client):
    sim.store.clock.skew = 3600.0  # the region's clock is an hour ahead of ours
    assert client.whoami()["username"] == "admin"
    assert client.requests_sent == 2  # one 401 "Expired timestamp", one corrected retry
    assert client.whoami()["username"] == "admin"
    assert client.requests_sent == 3  # the correction sticks


def test_504_retried_for_reads_not_for_writes(sim, client):
    sim.store.add_http_fault(status=504, path="/users/", method="GET")
    assert client.whoami()["username"] == "admin"
    sim.store.add_http_fault(status=504, path="/tags/", method="POST")
    with pytest.raises(MaasServerError) as exc:
        client.post("tags/", {"name": "t1"})
    assert exc.value.status == 504
    assert stats(sim, "POST") == 1


def test_read_timeout_on_a_write_is_not_repeated(sim):
    """The simulator stalls past the read timeout, then does the work anyway: repeating the
    POST would create a second tag (here: a 400 duplicate)."""
    with sim.client(timeout=(2, 0.3), retries=3) as client:
        sim.store.add_http_fault(stall=0.6, path="/tags/", method="POST")
        with pytest.raises(MaasTransportError) as exc:
            client.post("tags/", {"name": "slow"})
        assert exc.value.timed_out
        assert client.requests_sent == 1
        deadline = time.monotonic() + 30  # the region finishes the stalled request
        while not client.get("tags/") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [t["name"] for t in client.get("tags/")] == ["slow"]


def test_connection_refused_is_a_transport_error(sim):
    port = sim.server.server_address[1]
    with MaasClient(Credentials(f"http://127.0.0.1:{port + 1}/MAAS/", sim.key), retries=0) as c:
        with pytest.raises(MaasTransportError):
            c.whoami()


def test_typed_errors_carry_status_body_and_fields(sim, client):
    with pytest.raises(MaasNotFound) as nf:
        client.get("machines/nosuch/")
    assert nf.value.body == "No Machine matches the given query."
    with pytest.raises(MaasBadRequest) as bad:
        client.get("machines/", {"mac_address": "zz"})
    assert bad.value.field_errors == {
        "mac_address": ["Invalid parameter: invalid MAC address format"]
    }
    assert "mac_address: Invalid parameter" in str(bad.value)


def test_auth_errors_never_echo_the_key(sim):
    """MAAS puts the token key in 'Invalid access token' bodies; ours must not survive."""
    key = sim.key
    wrong = ApiKey(key.consumer_key, "WrongTokenKey123456", key.token_secret)
    with MaasClient(Credentials(sim.url, wrong)) as client, pytest.raises(MaasAuthError) as exc:
        client.whoami()
    text = f"{exc.value} {exc.value.body} {exc.value!r}"
    assert exc.value.status == 401
    assert "Invalid access token" in text
    for secret in wrong.secrets():
        assert secret not in text
