"""Fixtures for the security suite: hostile endpoints (racksmith.testing.hostile) and nasty
passwords. Deadlines are short (about a second) so the whole suite stays fast; every wall-time
assertion is a bound (deadline + a margin for a loaded 2-core machine), never an exact figure."""

from __future__ import annotations

import socket

import pytest

from racksmith.redfish.credentials import Credentials
from racksmith.testing.hostile import HostileServer


@pytest.fixture
def hostile():
    servers: list[HostileServer] = []

    def start(mode: str, **kwargs) -> HostileServer:
        kwargs.setdefault("interval", 0.1)
        server = HostileServer(mode, **kwargs).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def bmc_creds() -> Credentials:
    return Credentials("root", "Hostile-suite-pw-7Qz")


@pytest.fixture
def no_resolver(monkeypatch):
    """Fail the test if anything asks the system resolver (the names it was asked for)."""
    asked: list[str] = []

    def refuse(host, *args, **kwargs):
        asked.append(host)
        raise AssertionError(f"the resolver was asked for {host!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return asked
