"""A small UFM REST simulator for tests: the ports of a fabric and their state, isolation
through ``app/unhealthy_ports``, port ``disable``/``enable`` through ``actions`` (with jobs),
and the event feed. Built from UFM's documented API (health-checks.md §7); basic auth.

    with running(UfmState.from_topology(topo, "admin", "secret")) as server:
        server.url  # http://127.0.0.1:PORT
"""

from racksmith.lab.ufmsim.server import running
from racksmith.lab.ufmsim.state import UfmState

__all__ = ["UfmState", "running"]
