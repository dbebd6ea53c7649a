"""Fixtures: an in-process MAAS simulator on a free loopback port, and clients for it.

The simulator's clock runs SPEED times faster and the client's waits use a ScaledClock with
the same factor, so a 5-minute commissioning takes 0.1 s while every poll, budget and
Retry-After keeps its MAAS-time meaning.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
import requests

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import SimHTTPServer, running
from racksmith.lab.maassim.state import Store
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import ScaledClock
from racksmith.maas.fleet import FleetHost
from racksmith.maas.lifecycle import WaitPolicy
from racksmith.testing.fleet import batch_host

SPEED = 3000.0
API = "api/2.0/"


@dataclass
class Sim:
    server: SimHTTPServer
    store: Store

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def key(self) -> ApiKey:
        return ApiKey.parse(self.store.admin_key())

    def user_key(self, username: str) -> ApiKey:
        return ApiKey.parse(self.store.users[username].api_key)

    def raw(
        self,
        method: str,
        path: str,
        *,
        key: ApiKey | None = None,
        sign: bool = True,
        timestamp: float | None = None,
        nonce: str | None = None,
        **kwargs,
    ) -> requests.Response:
        """One request exactly as given (no retries), signed as admin unless told otherwise."""
        headers = kwargs.pop("headers", {})
        if sign:
            key = key or self.key
            headers["Authorization"] = key.authorization(
                timestamp=int(timestamp if timestamp is not None else time.time()), nonce=nonce
            )
        return requests.request(method, self.url + path, headers=headers, timeout=10, **kwargs)

    def client(self, key: ApiKey | None = None, **kwargs) -> MaasClient:
        kwargs.setdefault("clock", ScaledClock(SPEED))
        return MaasClient(Credentials(self.url, key or self.key), **kwargs)


@pytest.fixture(autouse=True)
def _no_power_pacing(monkeypatch, tmp_path):
    """Commission, deploy and release take a slot of the fleet's power pacing (default 20 a
    minute, in real seconds): off for the tests that are not about it, and never the user's
    shared state file. test_maas_pacing.py gives its policies a pace of their own."""
    monkeypatch.setenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE", "0")
    monkeypatch.setenv("RACKSMITH_POWER_PACING_FILE", str(tmp_path / "power-pacing"))


@pytest.fixture
def sim():
    store = Store(clock=SimClock(SPEED), seed=7)
    with running(store) as server:
        yield Sim(server, store)


@pytest.fixture
def client(sim):
    with sim.client() as c:
        yield c


#: At x3000 a one-second stall of this (shared, loaded) machine is 50 MAAS minutes, so tests
#: that are not about budgets get a week per state; the budget test sets its own.
ROOMY = {
    name: 7 * 24 * 60
    for name in ("commissioning", "testing", "allocated", "deploying", "releasing", "disk_erasing")
}


@pytest.fixture
def policy():
    return WaitPolicy.build(clock=ScaledClock(SPEED), budget_minutes=ROOMY)


def _fleet_host(n: int) -> FleetHost:
    """Batch host number ``n``: ``gpuNN``, a MAC and a BMC address of its own (nothing listens
    there: the simulator only records the power parameters)."""
    return batch_host(f"gpu{n:02d}", f"02:5B:00:{n:02X}:01:00", f"127.0.0.1:{9000 + n}")


@pytest.fixture
def fleet_host():
    """The builder of batch hosts (``fleet_host(n)``) that the fleet and pacing tests share."""
    return _fleet_host
