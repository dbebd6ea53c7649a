"""Issue 22: the MAAS key goes to MAAS_URL's origin and nowhere else.

The MAAS client follows no link from an answer, but a redirect (MAAS behind a proxy, a
captive portal) names another origin in ``Location``, and an API path is glued onto the root:
both are held to the one-origin rule of :func:`racksmith.transport.link_url`. A *collector*
server listens where the links point; it must see nothing.
"""

from __future__ import annotations

import pytest

from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasConfigError, MaasError
from racksmith.testing.hostile import Route

SECRET = "origin-maas-secret-77"


@pytest.fixture
def collector(hostile):
    return hostile("echo", status=200)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_origin_is_not_followed(status, hostile, collector):
    target = f"http://127.0.0.1:{collector.port}/MAAS/api/2.0/machines/"
    maas = hostile("routes", routes={"/MAAS/": Route(status, b"", {"Location": target})})
    key = ApiKey("origin-consumer", "origin-token", SECRET)
    with (
        pytest.raises(MaasError) as err,
        MaasClient(Credentials(f"{maas.url}/MAAS/", key), retries=0, deadline=5) as client,
    ):
        client.get("machines/")
    assert collector.seen == []
    assert len(maas.seen) == 1 and SECRET not in str(err.value)


@pytest.mark.parametrize(
    "path",
    [
        "http://127.0.0.1:{c}/x/",
        "https://127.0.0.1:{c}/x/",
        "machines/../../x/",
        "machines/\\\\127.0.0.1:{c}/",
        "machines/ x/",
    ],
)
def test_a_path_that_would_leave_the_root_is_refused_before_signing(path, hostile, collector):
    maas = hostile("wrong_shape", body=b"[]")
    key = ApiKey("origin-consumer", "origin-token", SECRET)
    with (
        pytest.raises(MaasConfigError),
        MaasClient(Credentials(f"{maas.url}/MAAS/", key), retries=0, deadline=5) as client,
    ):
        client.get(path.format(c=collector.port))
    assert collector.seen == [] and maas.seen == []


@pytest.mark.parametrize("path", ["//127.0.0.1:{c}/x/", "@127.0.0.1:{c}/x/"])
def test_scheme_relative_and_at_host_paths_stay_under_the_root(path, hostile, collector):
    """A path is always below MAAS_URL's root: ``//host`` and ``@host`` cannot reach a host."""
    maas = hostile("wrong_shape", body=b"[]")
    key = ApiKey("origin-consumer", "origin-token", SECRET)
    with MaasClient(Credentials(f"{maas.url}/MAAS/", key), retries=0, deadline=5) as client:
        assert client.get(path.format(c=collector.port)) == []
    assert collector.seen == []
    assert maas.seen and maas.seen[0].path.startswith("/MAAS/api/2.0/")
