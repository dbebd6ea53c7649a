"""The lab bridge keeps its MAC while ports come and go (real kernel bridge, needs root).

A bridge without an address of its own takes its ports' lowest MAC; when a host joined with a
lower one, every other host's ARP entry for the controller went stale and apt through the
controller's cache timed out. ``net.ensure_bridge`` gives the bridge a fixed MAC.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from racksmith.lab import net

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="creates a bridge and links: needs root"),
]

BRIDGE = "rsmactest0"


def _mac(link: str) -> str:
    return open(f"/sys/class/net/{link}/address").read().strip()


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture
def bridge():
    net.ensure_bridge(BRIDGE, "192.168.199.1")
    yield BRIDGE
    for port in ("rsmact-a", "rsmact-b"):
        subprocess.run(["ip", "link", "del", port], capture_output=True)
    net.delete_bridge(BRIDGE)


def test_ports_joining_and_leaving_do_not_change_the_bridge_mac(bridge):
    assert _mac(bridge) == net.bridge_mac(bridge)
    # a port whose MAC is lower than anything else: without the fixed MAC the bridge takes it
    _ip(
        "link",
        "add",
        "rsmact-a",
        "address",
        "02:00:00:00:00:01",
        "type",
        "veth",
        "peer",
        "name",
        "rsmact-b",
    )
    _ip("link", "set", "rsmact-a", "master", bridge, "up")
    assert _mac(bridge) == net.bridge_mac(bridge)
    _ip("link", "del", "rsmact-a")
    assert _mac(bridge) == net.bridge_mac(bridge)
    # lab up on the existing bridge keeps (or puts back) the same MAC
    net.ensure_bridge(bridge, "192.168.199.1")
    assert _mac(bridge) == net.bridge_mac(bridge)
