"""Real paths: follow the switches' forwarding tables from one HCA to another.

A packet from HCA ``a`` to HCA ``b`` leaves ``a`` on its cable, and every switch it reaches
sends it out of the port its table holds for ``b``'s LID. The walk is the path the fabric
uses (adaptive routing aside), hop by hop; it fails, naming the switch and the LID, when a
table has no entry (a hole), points at a port with no cable, delivers to the wrong HCA or
comes back to a switch it already passed (a loop).

A path is a tuple of *directed* links: ``2 * link_index`` when the packet goes from the
link's ``a`` end to its ``b`` end, ``2 * link_index + 1`` the other way. ``ib_write_bw -b``
loads both ``path(a, b)`` and ``path(b, a)``, which need not be the same links reversed.
"""

from __future__ import annotations

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.lft import Tables
from racksmith.fabric.model import HCA, SWITCH, PortRef, Topology

#: longest path followed before calling it a loop (IB's direct-route limit is 64 hops)
MAX_HOPS = 64


class RouteError(FabricInputError):
    """A pair the tables cannot carry: a hole, a dead port, a loop, a wrong delivery."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(source, 0, message)


class Router:
    """Traces HCA-to-HCA paths through ``tables`` over ``topo``; remembers each switch's
    next hop per destination LID, so tracing many pairs costs little more than their hops."""

    def __init__(self, topo: Topology, tables: Tables) -> None:
        self.topo = topo
        self.tables = tables
        self.index = {id(link): i for i, link in enumerate(topo.links)}
        self.lid: dict[str, int] = {}
        for node in topo.nodes.values():
            if node.kind == HCA and node.lid is not None:
                self.lid[node.guid] = node.lid
        self._next: dict[tuple[str, int], tuple[int, str]] = {}

    def hop(self, guid: str, port: int) -> tuple[int, str] | None:
        """The directed link out of ``guid``/``port`` and the node at its far end."""
        link = self.topo.at(PortRef(guid, port))
        if link is None:
            return None
        i = self.index[id(link)]
        if link.a == PortRef(guid, port):
            return 2 * i, link.b.guid
        return 2 * i + 1, link.a.guid

    def uplink(self, hca: str) -> tuple[int, str]:
        """An HCA's own cable (directed away from it) and its switch."""
        node = self.topo.nodes[hca]
        for port in range(1, max(node.ports, 1) + 1):
            out = self.hop(hca, port)
            if out is not None:
                return out
        raise RouteError(self.tables.source, f"HCA {node.name} (0x{hca}) has no cable")

    def path(self, src: str, dst: str) -> tuple[int, ...]:
        """Directed links from HCA ``src`` to HCA ``dst`` (RouteError if the tables fail)."""
        lid = self.lid.get(dst)
        if lid is None:
            raise RouteError(self.tables.source, f"{self._name(dst)} has no LID in the topology")
        first, cur = self.uplink(src)
        out = [first]
        seen = set()
        while cur != dst:
            node = self.topo.nodes[cur]
            if node.kind != SWITCH:
                raise RouteError(
                    self.tables.source,
                    f"{self._name(src)} -> {self._name(dst)} (LID {lid}) delivered to "
                    f"{node.name} instead",
                )
            if cur in seen or len(out) > MAX_HOPS:
                raise RouteError(
                    self.tables.source,
                    f"{self._name(src)} -> {self._name(dst)} (LID {lid}): loop at {node.name}",
                )
            seen.add(cur)
            step = self._next.get((cur, lid))
            if step is None:
                step = self._step(cur, lid, src, dst)
                self._next[(cur, lid)] = step
            out.append(step[0])
            cur = step[1]
        return tuple(out)

    def _step(self, switch: str, lid: int, src: str, dst: str) -> tuple[int, str]:
        name = self.topo.nodes[switch].name
        if switch not in self.tables.lfts:
            raise RouteError(self.tables.source, f"no forwarding table for switch {name}")
        port = self.tables.port(switch, lid)
        what = f"{self._name(src)} -> {self._name(dst)}"
        if port is None:
            raise RouteError(
                self.tables.source, f"{what}: switch {name} has no route to LID {lid} (a hole)"
            )
        if port == 0:
            raise RouteError(
                self.tables.source, f"{what}: switch {name} sends LID {lid} to itself (port 0)"
            )
        step = self.hop(switch, port)
        if step is None:
            raise RouteError(
                self.tables.source,
                f"{what}: switch {name} sends LID {lid} out of port {port}, which has no link",
            )
        return step

    def _name(self, guid: str) -> str:
        node = self.topo.nodes.get(guid)
        return node.name if node else f"0x{guid}"

    def describe(self, directed: int) -> str:
        link = self.topo.links[directed // 2]
        a, b = (link.a, link.b) if directed % 2 == 0 else (link.b, link.a)
        return f"{self.topo.describe(a)} -> {self.topo.describe(b)}"
