"""Hosts for a MAAS batch (``racksmith.maas.fleet``) in tests and benches.

Why: the fleet and pacing tests and the fleet bench each build many batch hosts that differ
only in name, PXE MAC and BMC address; one builder keeps them in one shape (the lab's iDRAC
login, which the simulator records and never uses).
"""

from __future__ import annotations

from racksmith.maas.fleet import FleetHost
from racksmith.maas.machines import MachineSpec


def batch_host(name: str, pxe_mac: str, power_address: str) -> FleetHost:
    """A batch host ``name`` enlisted with ``pxe_mac`` and IPMI at ``power_address``."""
    spec = MachineSpec(
        hostname=name,
        pxe_mac=pxe_mac,
        power_parameters={
            "power_address": power_address,
            "power_user": "root",
            "power_pass": "calvin",
        },
    )
    return FleetHost(name=name, pxe_mac=pxe_mac, spec=spec)
