"""Fixtures for the Redfish tests: the real iDRAC capture on disk, and emulated iDRACs in-process.

The emulation is the real thing the lab runs (sushy-static serving the capture, racksmith's
behaviour layer on top, real sockets, real TLS signed by a per-session lab CA); tests only pick
free ports and inject faults per BMC.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from racksmith.lab import creds as lab_creds
from racksmith.lab.bmc.behaviour import Faults, Settings
from racksmith.lab.bmc.server import BmcFarm, create_farm, lab_tls_context
from racksmith.lab.bmc.tree import CAPTURE, DATA_DIR, SushyStaticUpstream
from racksmith.lab.paths import LabPaths
from racksmith.lab.spec import Server
from racksmith.redfish.client import ClientOptions, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.discover import DiscoveryOptions, HostOutcome, collect_all
from racksmith.redfish.targets import Target
from racksmith.secrets import read_env_file

#: Distinctive, so a grep for it in logs and caches cannot match anything by accident.
PASSWORD = "Pw-racksmith-9f3Kq7-unit"


class Capture:
    """The real iDRAC9 capture, read straight from the files (no server involved)."""

    @staticmethod
    def load(uri: str) -> dict:
        rel = uri.removeprefix("/redfish/v1").strip("/")
        return json.loads((CAPTURE / rel / "index.json").read_text())

    def members(self, uri: str) -> list[dict]:
        """A collection's member documents, fetched one by one (as without $expand)."""
        return [self.load(m["@odata.id"]) for m in self.load(uri)["Members"]]


@pytest.fixture(scope="session")
def capture() -> Capture:
    return Capture()


@pytest.fixture(scope="session")
def lab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lab")
    lab_creds.ensure_ca(LabPaths(root))
    env = root / "secrets" / "bmc.env"
    env.parent.mkdir(mode=0o700)
    env.write_text(f"RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD={PASSWORD}\n")
    env.chmod(0o600)
    return root


@pytest.fixture(scope="session")
def creds(lab_dir: Path) -> Credentials:
    values = read_env_file(lab_dir / "secrets" / "bmc.env")
    return Credentials(values["RACKSMITH_BMC_USERNAME"], values["RACKSMITH_BMC_PASSWORD"])


@pytest.fixture(scope="session")
def tls_context(lab_dir: Path):
    return lab_tls_context(lab_dir, "127.0.0.1")


@pytest.fixture(scope="session")
def ca_bundle(lab_dir: Path) -> str:
    return str(lab_dir / "ca" / "ca.pem")


@pytest.fixture
def client_options(ca_bundle: str) -> ClientOptions:
    """Short timeouts and backoffs: loopback BMCs answer in milliseconds."""
    return ClientOptions(
        ca_bundle=ca_bundle, connect_timeout=2, read_timeout=3, backoff=0.05, busy_backoff=0.2
    )


def make_server(
    index: int, model: str = "hgx-h200-8gpu", faults: tuple[str, ...] = (), name: str | None = None
) -> Server:
    return Server(
        index=index,
        name=name or f"gpu{index:02d}",
        model=model,
        ip="127.0.0.1",
        bmc_port=0,
        faults=frozenset(faults),
    )


@pytest.fixture(scope="session")
def server() -> Callable[..., Server]:
    """``server(index, model=..., faults=(...), name=...)``: a lab Server on an ephemeral port."""
    return make_server


@dataclass
class Rack:
    farm: BmcFarm

    def target(self, name: str) -> Target:
        bmc = self.bmc(name)
        return Target("127.0.0.1", int(bmc.port or 0))

    def bmc(self, name: str):
        return next(b for b in self.farm.bmcs if b.server.name == name)

    def targets(self) -> list[Target]:
        return [Target("127.0.0.1", int(b.port or 0)) for b in self.farm.bmcs]


@pytest.fixture
def rack(lab_dir: Path, tls_context) -> Iterator[Callable[..., Rack]]:
    """``rack(servers, faults={name: Faults}, settings=Settings(), scheme="https")`` -> a
    started Rack."""
    started: list[BmcFarm] = []

    def make(
        servers: list[Server],
        *,
        faults: dict[str, Faults] | None = None,
        settings: Settings | None = None,
        scheme: str = "https",
    ) -> Rack:
        values = read_env_file(lab_dir / "secrets" / "bmc.env")
        farm = create_farm(
            servers,
            username=values["RACKSMITH_BMC_USERNAME"],
            password=values["RACKSMITH_BMC_PASSWORD"],
            ports=[0] * len(servers),
            tls=tls_context if scheme == "https" else None,
            settings=settings or Settings(power_delay=0.2),
            faults=faults,
        )
        farm.start()
        started.append(farm)
        return Rack(farm)

    yield make
    for farm in started:
        farm.stop()


@cache
def _discover_capture(
    capture: str, extras: frozenset[str] = frozenset()
) -> tuple[tuple[HostOutcome, ...], int]:
    """Every host of one vendor capture (``racksmith/lab/data/redfish/<capture>``), served
    unchanged by sushy-static and read by the real client with default settings (plus
    ``extras``); also the number of requests it took. Cached: the captures never change."""
    upstream = SushyStaticUpstream(DATA_DIR / capture / "redfish" / "v1")
    try:
        options = ClientOptions(scheme="http", read_timeout=10)
        target = Target("127.0.0.1", upstream.port)
        with RedfishClient(target, Credentials("root", "unused-by-sushy-static"), options) as c:
            outcomes = collect_all(c, DiscoveryOptions(client=options, extras=extras))
            return tuple(outcomes), c.stats.requests
    finally:
        upstream.close()


@pytest.fixture(scope="session")
def discover_capture() -> Callable[..., tuple[tuple[HostOutcome, ...], int]]:
    """``discover_capture(name, extras=frozenset())`` -> (outcomes, requests)."""
    return _discover_capture


@pytest.fixture(autouse=True)
def _private_power_pacing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Power actions here are unpaced and use a private pacing file: tests of the fleet-wide
    pace (test_redfish_pacing.py) set their own rate; others must not queue behind each other
    or behind another process on the machine."""
    monkeypatch.setenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE", "0")
    monkeypatch.setenv("RACKSMITH_POWER_PACING_FILE", str(tmp_path / "power-pacing"))
