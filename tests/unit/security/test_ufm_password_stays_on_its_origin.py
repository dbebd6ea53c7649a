"""Issue 22: the UFM client keeps the rules of the other clients.

Before: ``UFM_URL`` was held to no address rule (``https://127.1:PORT`` reached 127.0.0.1),
and the client, a plain ``requests.Session``, followed redirects (with its Basic auth to the
same host on another scheme or port) and picked up proxies and ``.netrc`` from the
environment. A *collector* server listens where a redirect points; it must see nothing.
"""

from __future__ import annotations

import pytest

from racksmith.errors import UsageError
from racksmith.fabric import ufm
from racksmith.fabric.errors import UfmError
from racksmith.testing.hostile import Route

PASSWORD = "ufm-origin-pw-31"
ENV = {"UFM_USERNAME": "admin", "UFM_PASSWORD": PASSWORD}


REFUSED_HOSTS = ["127.1", "0x7f000001.", "2130706433", "0177.0.0.1", "[::]", "u:p@127.0.0.1"]


@pytest.mark.parametrize("host", [*REFUSED_HOSTS, "0.0.0.0"])  # noqa: S104
def test_numeric_or_unspecified_ufm_url_is_refused_before_anything_is_sent(host, hostile):
    server = hostile("echo", status=200)
    with pytest.raises(UsageError, match="UFM URL"):
        ufm.resolve(environ={**ENV, "UFM_URL": f"http://{host}:{server.port}"})
    assert server.seen == []


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_with_the_password(status, hostile):
    collector = hostile("echo", status=200)
    target = f"http://127.0.0.1:{collector.port}/ufmRest/resources/ports"
    server = hostile("routes", routes={"/ufmRest/": Route(status, b"", {"Location": target})})
    client = ufm.UfmClient(ufm.resolve(environ={**ENV, "UFM_URL": server.url}))
    with pytest.raises(UfmError, match=f"HTTP {status}") as err:
        client.ports()
    assert collector.seen == [] and len(server.seen) == 1
    assert PASSWORD not in str(err.value)


def test_proxy_settings_from_the_environment_are_ignored(hostile, monkeypatch):
    """A proxy variable would send every request (and the Basic auth) through the proxy."""
    proxy = hostile("echo", status=200)
    server = hostile("wrong_shape", body=b"[]")
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("http_proxy", proxy.url)
    client = ufm.UfmClient(ufm.resolve(environ={**ENV, "UFM_URL": server.url}))
    assert client.ports() == []
    assert proxy.seen == [] and len(server.seen) == 1
