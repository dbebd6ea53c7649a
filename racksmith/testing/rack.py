"""A private rack file for a test lab: the demo rack (``inventory/lab/rack.yml``) with its own
network and ports, and only the servers a test needs.

Why each lab needs its own bridge, prefix and ports: labs are machine-wide. A bridge name, a
/24 on it, the BMC emulators' TCP ports and the MAAS simulator's listen address belong to the
whole host, not to a process. The demo lab (``rslab0``, ``192.168.250``, BMCs from 8443, MAAS
on 5240), molecule, the integration lanes and the benches may all be up at once, or left
behind by a crashed run that the next ``down`` must find by the same names; two labs sharing
any of them would tear down, answer for or route to each other's hosts. So every caller passes
values no other lab uses, and keeps them (a crashed run's leftovers are found by them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from racksmith.lab import spec


def hgx_servers(count: int) -> list[dict[str, object]]:
    """``count`` plain HGX H200 servers: ``gpu01``, ``gpu02``, ... (indexes from 1)."""
    return [
        {"index": index, "name": f"gpu{index:02d}", "model": "hgx-h200-8gpu"}
        for index in range(1, count + 1)
    ]


def write_rack(
    directory: Path,
    *,
    bridge: str,
    prefix: str,
    maas_listen: str,
    bmc_base_port: int | None = None,
    servers: Sequence[Mapping[str, object]] | None = None,
) -> spec.RackSpec:
    """Write ``directory/rack.yml`` (the demo rack with these values) and load it.

    ``servers`` default to one HGX H200 (``gpu01``); ``bmc_base_port`` None keeps the demo
    rack's. The file goes through :func:`racksmith.lab.spec.load`, so a bad value fails here
    with the loader's message, not later in ``lab up``.
    """
    source = yaml.safe_load(spec.DEFAULT_SPEC.read_text())
    source["network"].update({"bridge": bridge, "prefix": prefix})
    if bmc_base_port is not None:
        source["bmc"]["base_port"] = bmc_base_port
    source["maas"]["listen"] = maas_listen
    source["servers"] = [dict(s) for s in servers] if servers is not None else hgx_servers(1)
    rack_file = directory / "rack.yml"
    rack_file.write_text(yaml.safe_dump(source))
    return spec.load(rack_file)
