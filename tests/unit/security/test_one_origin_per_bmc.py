"""Issue 22: one origin per BMC; credentials never follow a link off the BMC.

Before: an absolute ``@odata.id``, a ``Members@odata.nextLink`` or a session ``Location``
naming another host was requested as given, with ``Authorization: Basic`` (after a 405 on the
session POST) or the ``X-Auth-Token``; a link ``@127.0.0.1:PORT/...`` was glued onto the base
URL, so the BMC address became userinfo and the request went to the other port; an https BMC's
``http:`` link took the password to plain HTTP; and all of it worked through
``ansible-inventory``. A compromised BMC could collect the fleet's password.

Each link form is served by a scripted BMC (``routes`` mode of racksmith.testing.hostile); a
second server, the *collector*, listens where the link points. The proof is that the collector
sees nothing (not merely that an error came back), through the library, the CLI, the modules'
path (``client_from_params``) and the inventory plugin, and that the error names the BMC and
the link. A BMC that trickles its answers and its logout holds a run no longer than the
deadline (before: 8.3 s with ``--deadline 5``).
"""

from __future__ import annotations

import json
import logging
import ssl
import time

import pytest
from sec_support import MARGIN, assert_no_secret, module_params, redfish_inventory, redfish_options

from racksmith import cli
from racksmith.lab.creds import ensure_ca, issue_server_cert
from racksmith.lab.paths import LabPaths
from racksmith.redfish import actions
from racksmith.redfish.ansible_support import client_from_params
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.discover import discover_one
from racksmith.redfish.targets import Target
from racksmith.secrets import redact
from racksmith.testing.hostile import (
    LINK_FORMS,
    LINK_PLACES,
    SESSIONS,
    SYSTEMS,
    HostileServer,
    Route,
    link_routes,
    session_route,
)

PASSWORD = "origin-pw-Zq81"
TOKEN = "origin-token-5521"


def scripted_bmc(hostile, place: str, link: str, *, basic_fallback: bool = False, **kw):
    """A BMC that hands out ``link`` at ``place`` (racksmith.testing.hostile.link_routes)."""
    routes = link_routes(place, link, basic_fallback=basic_fallback)
    if SESSIONS in routes and routes[SESSIONS].status == 201:
        routes[SESSIONS].headers["X-Auth-Token"] = TOKEN
    return hostile("routes", routes=routes, **kw)


@pytest.fixture
def collector(hostile) -> HostileServer:
    """Where a hostile link points: whatever reaches it was stolen."""
    return hostile("echo", status=200)


def _link(form: str, bmc: HostileServer, collector: HostileServer) -> str:
    return LINK_FORMS[form].format(c=collector.port, b=bmc.port)


def _bmc_with(hostile, collector, place, form, **kw):
    # The link needs the BMC's port (other_scheme_same_port): patch it in after start.
    server = scripted_bmc(hostile, place, "PENDING", **kw)
    link = _link(form, server, collector)
    for route in server.routes.values():
        if route.body and "PENDING" in json.dumps(route.body):
            route.body = json.loads(json.dumps(route.body).replace("PENDING", link))
        route.headers = {k: v.replace("PENDING", link) for k, v in route.headers.items()}
    return server, link


def _names(text: str, link: str) -> bool:
    """The error quotes the link (userinfo in it masked, as every credential-shaped text)."""
    shown = redact(link)
    return shown in text or repr(shown)[1:-1] in text


def _nothing_reached(collector: HostileServer, bmc: HostileServer) -> None:
    assert collector.seen == [], [(s.method, s.path, s.headers) for s in collector.seen]
    for seen in bmc.seen:  # and nothing odd reached the BMC's own port either
        assert "@" not in seen.path and not seen.path.startswith("//"), seen.path


@pytest.mark.parametrize("form", LINK_FORMS)
@pytest.mark.parametrize("place", LINK_PLACES)
def test_discovery_refuses_a_link_off_the_bmc(form, place, hostile, collector):
    bmc, link = _bmc_with(hostile, collector, place, form)
    result = discover_one(
        Target("127.0.0.1", bmc.port), Credentials("root", PASSWORD), redfish_options(deadline=5)
    )
    _nothing_reached(collector, bmc)
    assert result.error is not None
    text = str(result.error)
    assert _names(text, link), text
    assert f"127.0.0.1:{bmc.port}" in text
    assert_no_secret(json.dumps(result.as_dict()), PASSWORD, "root")


@pytest.mark.parametrize("form", ["absolute", "at_host", "scheme_relative", "userinfo"])
def test_basic_auth_after_a_405_goes_nowhere_else(form, hostile, collector):
    """The session POST answers 405, so Basic auth is used: every request carries the password."""
    bmc, link = _bmc_with(hostile, collector, "member", form, basic_fallback=True)
    result = discover_one(
        Target("127.0.0.1", bmc.port), Credentials("root", PASSWORD), redfish_options(deadline=5)
    )
    _nothing_reached(collector, bmc)
    assert result.error is not None and _names(str(result.error), link)


@pytest.mark.parametrize("place", LINK_PLACES)
@pytest.mark.parametrize("form", LINK_FORMS)
def test_cli_discover_refuses_the_link(form, place, hostile, collector, monkeypatch, capsys):
    bmc, link = _bmc_with(hostile, collector, place, form)
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", PASSWORD)
    argv = ["redfish", "discover", "--scheme", "http", "--json", "--retries", "0"]
    assert cli.main([*argv, "--bmc", bmc.address, "--deadline", "5"]) == 1
    out = capsys.readouterr().out
    _nothing_reached(collector, bmc)
    record = json.loads(out.splitlines()[0])
    assert _names(record["error"], link) and record["error_kind"] == "malformed"


@pytest.mark.parametrize("place", LINK_PLACES)
@pytest.mark.parametrize("form", LINK_FORMS)
def test_module_action_refuses_the_link(form, place, hostile, collector, monkeypatch):
    """The modules build their client with client_from_params; an action reads the systems
    collection first."""
    from racksmith.redfish.errors import RedfishError

    bmc, link = _bmc_with(hostile, collector, place, form)
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", PASSWORD)
    params = module_params(bmc.address, auth="session", deadline=5.0)
    with pytest.raises(RedfishError) as err, client_from_params(params) as client:
        actions.power(client, "on", check_mode=True)
    _nothing_reached(collector, bmc)
    assert _names(str(err.value), link) and f"127.0.0.1:{bmc.port}" in str(err.value)


@pytest.fixture
def tls_bmc_context(tmp_path):
    """A server context with a certificate for 127.0.0.1 signed by a fresh lab CA (the same
    code that signs the lab's emulated iDRACs), and the CA file the client verifies with."""
    lab = LabPaths(tmp_path / "lab")
    ca = ensure_ca(lab)
    cert, key = tmp_path / "bmc.crt", tmp_path / "bmc.key"
    issue_server_cert(lab, names=[], ips=["127.0.0.1"], cert_out=cert, key_out=key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, str(ca)


@pytest.mark.parametrize("place", LINK_PLACES)
def test_http_link_on_an_https_bmc_is_refused(place, hostile, collector, tls_bmc_context):
    """A certificate-checked https BMC hands out an ``http:`` link: the token or the password
    would travel in clear to whoever listens there."""
    context, cert = tls_bmc_context
    bmc, link = _bmc_with(hostile, collector, place, "absolute", tls=context)
    options = redfish_options(deadline=5)
    options = type(options)(
        client=type(options.client)(
            scheme="https", ca_bundle=cert, connect_timeout=1.0, read_timeout=5.0, retries=0
        ),
        deadline=5,
    )
    result = discover_one(Target("127.0.0.1", bmc.port), Credentials("root", PASSWORD), options)
    _nothing_reached(collector, bmc)
    assert result.error is not None and _names(str(result.error), link), result.error
    assert f"https://127.0.0.1:{bmc.port}" in str(result.error)
    assert [s.method for s in bmc.seen][:1] == ["POST"]  # the TLS BMC itself was reached


@pytest.mark.parametrize(
    ("place", "form"),
    [
        ("member", "absolute"),
        ("member", "scheme_relative"),
        ("member", "at_host"),
        ("next_link", "absolute"),
        ("location", "absolute"),
    ],
)
def test_inventory_plugin_refuses_the_link(place, form, hostile, collector, tmp_path):
    bmc, link = _bmc_with(hostile, collector, place, form)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    env_file = private / "bmc.env"
    env_file.write_text(f"RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD={PASSWORD}\n")
    env_file.chmod(0o600)
    done = redfish_inventory(
        tmp_path,
        {
            "targets": [bmc.address],
            "scheme": "http",
            "credentials_file": str(env_file),
            "retries": 0,
            "deadline": 5,
        },
    )
    _nothing_reached(collector, bmc)
    assert done.returncode == 0, done.stderr
    assert "bmc_malformed" in done.stdout and _names(done.stdout, link)
    assert_no_secret(done.stdout + done.stderr, PASSWORD, "root")


def test_a_same_origin_absolute_link_is_followed_on_the_bmc(hostile, collector):
    """The rule refuses other origins, not absolute links: a BMC that writes its own origin
    out in full (some do, in Location) is still served, and only by itself."""
    bmc = scripted_bmc(hostile, "member", "PENDING")
    own = f"http://127.0.0.1:{bmc.port}{SYSTEMS}/1"
    bmc.routes[SYSTEMS] = Route(body={"Members": [{"@odata.id": own}]})
    bmc.routes[SESSIONS] = session_route(location=f"http://127.0.0.1:{bmc.port}{SESSIONS}/1")
    from racksmith.redfish.client import RedfishClient

    creds = Credentials("root", PASSWORD)
    with RedfishClient(Target("127.0.0.1", bmc.port), creds, redfish_options().client) as client:
        members = client.get_collection(SYSTEMS)
    assert members == [{"@odata.id": SYSTEMS + "/1", "Id": "1"}]
    assert ("DELETE", SESSIONS + "/1") in [(s.method, s.path) for s in bmc.seen]
    assert collector.seen == []


def test_logout_ends_within_the_deadline(hostile, caplog):
    """A BMC that trickles its answers and its DELETE: the run ends at the deadline, and the log
    says the logout was cut or abandoned (before: a 5 s deadline held the run 8.3 s)."""
    routes = {
        SESSIONS: session_route(),
        SESSIONS + "/1": Route(200, b'{"Deleted": "' + b"x" * 200 + b'"}', trickle=True),
        SYSTEMS: Route(body=b'{"Members": []' + b" " * 400 + b"}", trickle=True),
    }
    bmc = hostile("routes", routes=routes, interval=0.05)
    deadline = 2.0
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="racksmith"):
        result = discover_one(
            Target("127.0.0.1", bmc.port),
            Credentials("root", PASSWORD),
            redfish_options(deadline=deadline),
        )
    took = time.monotonic() - started
    assert result.error is not None and result.error.kind.value == "timeout"
    assert took < deadline + MARGIN, took
    assert any("logout" in r.getMessage() and "deadline" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("place", LINK_PLACES)
def test_cli_http_link_on_an_https_bmc_is_refused(
    place, hostile, collector, tls_bmc_context, monkeypatch, capsys
):
    context, ca = tls_bmc_context
    bmc, link = _bmc_with(hostile, collector, place, "absolute", tls=context)
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", PASSWORD)
    argv = ["redfish", "discover", "--ca-bundle", ca, "--json", "--retries", "0"]
    assert cli.main([*argv, "--bmc", bmc.address, "--deadline", "5"]) == 1
    record = json.loads(capsys.readouterr().out.splitlines()[0])
    _nothing_reached(collector, bmc)
    assert _names(record["error"], link) and record["error_kind"] == "malformed"
