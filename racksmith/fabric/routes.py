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
from racksmith.fabric.model import HCA, SWITCH, Topology

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
        self._out: dict[tuple[str, int], tuple[int, str]] = {}
        for i, link in enumerate(topo.links):
            self._out[(link.a.guid, link.a.port)] = (2 * i, link.b.guid)
            self._out[(link.b.guid, link.b.port)] = (2 * i + 1, link.a.guid)
        self.lid: dict[str, int] = {}
        for node in topo.nodes.values():
            if node.kind == HCA and node.lid is not None:
                self.lid[node.guid] = node.lid
        self._next: dict[tuple[str, int], tuple[int, str]] = {}
        self._uplink: dict[str, tuple[int, str]] = {}
        self.switches = {g for g, n in topo.nodes.items() if n.kind == SWITCH}

    def hop(self, guid: str, port: int) -> tuple[int, str] | None:
        """The directed link out of ``guid``/``port`` and the node at its far end."""
        return self._out.get((guid, port))

    def cable(self, hca: str) -> tuple[int, str] | None:
        """An HCA's own cable (directed away from it) and its far end; None without one."""
        known = self._uplink.get(hca)
        if known is None:
            node = self.topo.nodes[hca]
            for port in range(1, max(node.ports, 1) + 1):
                known = self.hop(hca, port)
                if known is not None:
                    self._uplink[hca] = known
                    break
        return known

    def uplink(self, hca: str) -> tuple[int, str]:
        """:meth:`cable`, or RouteError naming the HCA."""
        known = self.cable(hca)
        if known is None:
            node = self.topo.nodes[hca]
            raise RouteError(self.tables.source, f"HCA {node.name} (0x{hca}) has no cable")
        return known

    def tail(self, switch: str, dst: str) -> tuple[int, ...]:
        """Directed links from ``switch`` to HCA ``dst`` (the part of a path after the first
        switch); the same checks as :meth:`path`."""
        lid = self.lid.get(dst)
        if lid is None:
            raise RouteError(self.tables.source, f"{self._name(dst)} has no LID in the topology")
        out: list[int] = []
        cur = switch
        nxt = self._next
        switches = self.switches
        for _ in range(MAX_HOPS):
            if cur == dst:
                return tuple(out)
            if cur not in switches:
                raise RouteError(
                    self.tables.source,
                    f"{self._name(switch)} -> {self._name(dst)} (LID {lid}) delivered to "
                    f"{self._name(cur)} instead",
                )
            step = nxt.get((cur, lid))
            if step is None:
                step = nxt[(cur, lid)] = self._step(cur, lid, switch, dst)
            out.append(step[0])
            cur = step[1]
        raise RouteError(
            self.tables.source,
            f"{self._name(switch)} -> {self._name(dst)} (LID {lid}): loop ({self._loop(out)})",
        )

    def _loop(self, walked: list[int]) -> str:
        names = [self.topo.nodes[self._far(e)].name for e in walked]
        for k, name in enumerate(names):
            if name in names[:k]:
                return " > ".join(names[names.index(name) : k + 1])
        return " > ".join(names[:8])

    def _far(self, directed: int) -> str:
        link = self.topo.links[directed // 2]
        return link.b.guid if directed % 2 == 0 else link.a.guid

    def path(self, src: str, dst: str) -> tuple[int, ...]:
        """Directed links from HCA ``src`` to HCA ``dst`` (RouteError if the tables fail)."""
        first, switch = self.uplink(src)
        if switch == dst:
            return (first,)
        if switch not in self.switches:
            raise RouteError(
                self.tables.source,
                f"{self._name(src)} -> {self._name(dst)}: cabled to {self._name(switch)}, "
                "not to a switch",
            )
        return (first, *self.tail(switch, dst))

    def _step(self, switch: str, lid: int, src: str, dst: str) -> tuple[int, str]:
        port = self.tables.port(switch, lid)
        step = self.hop(switch, port) if port else None
        if step is not None:
            return step
        name = self.topo.nodes[switch].name
        what = f"{self._name(src)} -> {self._name(dst)}"
        if switch not in self.tables.lfts:
            problem = "has no forwarding table"
        elif port is None:
            problem = f"has no route to LID {lid} (a hole)"
        elif port == 0:
            problem = f"sends LID {lid} to itself (port 0)"
        else:
            problem = f"sends LID {lid} out of port {port}, which has no link"
        raise RouteError(self.tables.source, f"{what}: switch {name} {problem}")

    def _name(self, guid: str) -> str:
        node = self.topo.nodes.get(guid)
        return node.name if node else f"0x{guid}"

    def describe(self, directed: int) -> str:
        link = self.topo.links[directed // 2]
        a, b = (link.a, link.b) if directed % 2 == 0 else (link.b, link.a)
        return f"{self.topo.describe(a)} -> {self.topo.describe(b)}"
