"""The fabric as a graph: switches and HCAs (nodes, by GUID), links between their ports.

Both ``ibnetdiscover`` and ``iblinkinfo`` parse into this one model, so the cabling check and
the burn-in planner never care which tool produced the topology.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

SWITCH = "switch"
HCA = "hca"

#: InfiniBand lane speeds, slowest first, as ibnetdiscover names them; iblinkinfo prints the
#: per-lane rate in Gb/s (``4X 106.25 Gbps`` is a 400 Gb/s NDR link, not 106 Gb/s).
SPEEDS: dict[str, float] = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.3125,
    "FDR": 14.0625,
    "EDR": 25.78125,
    "HDR": 53.125,
    "NDR": 106.25,
    "XDR": 212.5,
}
_RATE_TO_SPEED = {rate: name for name, rate in SPEEDS.items()}


def speed_from_rate(gbps: float) -> str | None:
    """``106.25`` -> ``"NDR"`` (None for a rate that is no IB lane speed)."""
    for rate, name in _RATE_TO_SPEED.items():
        if abs(rate - gbps) < 0.01:
            return name
    return None


def speed_rank(speed: str | None) -> int:
    """Order of a speed name (unknown or missing sorts lowest)."""
    names = list(SPEEDS)
    return names.index(speed) if speed in SPEEDS else -1


def normalise_guid(text: str) -> str:
    """``0x0002C9...``, ``2c9...`` or sysfs's ``e09d:7303:0000:1001`` -> 16 lower-case hex
    digits (ValueError if not hex)."""
    value = text.strip().lower().replace(":", "")
    if value.startswith("0x"):
        value = value[2:]
    if not value or len(value) > 16:
        raise ValueError(f"not a GUID: {text!r}")
    int(value, 16)
    return value.rjust(16, "0")


def switch_name(description: str) -> str:
    """The switch's host name from its node description: ``MF0;leaf-01:MQM9790/U1`` -> ``leaf-01``.

    Switches that were never named keep their whole description.
    """
    desc = description.strip()
    if desc.startswith("MF0;"):
        desc = desc[4:]
        return desc.split(":", 1)[0]
    return desc


def port_label(port: int) -> str:
    """UFM's label of an NDR switch port: two ports per OSFP cage, ``33`` -> ``1/17/1``."""
    return f"1/{(port + 1) // 2}/{2 - port % 2}"


def port_from_label(label: str) -> int:
    """Inverse of :func:`port_label`; also accepts ``17/1`` and a plain number."""
    parts = label.strip().split("/")
    if len(parts) == 1:
        return int(parts[0])
    if len(parts) == 3:
        parts = parts[1:]
    if len(parts) != 2:
        raise ValueError(f"not a port label: {label!r}")
    cage, split = int(parts[0]), int(parts[1])
    if cage < 1 or split not in (1, 2):
        raise ValueError(f"not a port label: {label!r}")
    return (cage - 1) * 2 + split


@dataclass
class Node:
    """A switch or an HCA (channel adapter). ``name`` is what people call it: the switch host
    name or the HCA's ``host mlx5_N`` description."""

    guid: str
    kind: str
    description: str
    ports: int = 0
    lid: int | None = None

    @property
    def name(self) -> str:
        return switch_name(self.description) if self.kind == SWITCH else self.description.strip()

    @property
    def host(self) -> str | None:
        """An HCA's host from ``host mlx5_0``; None for switches and unnamed adapters."""
        if self.kind != HCA:
            return None
        words = self.description.split()
        if len(words) == 2 and words[1].startswith(("mlx", "HCA")):
            return words[0]
        return None

    @property
    def device(self) -> str | None:
        """An HCA's device (``mlx5_0``) from its description, if it has the usual form."""
        words = self.description.split()
        return words[1] if self.kind == HCA and len(words) == 2 and self.host else None


@dataclass(frozen=True, order=True)
class PortRef:
    """One port of one node."""

    guid: str
    port: int

    def __str__(self) -> str:
        return f"{self.guid}:{self.port}"


@dataclass
class Link:
    """A cable between two ports, with what the link trained to (None when not reported)."""

    a: PortRef
    b: PortRef
    width: int | None = None
    speed: str | None = None
    state: str = "Active"
    line: int = 0

    @property
    def key(self) -> tuple[PortRef, PortRef]:
        return (self.a, self.b) if self.a <= self.b else (self.b, self.a)

    def other(self, end: PortRef) -> PortRef:
        return self.b if end == self.a else self.a


@dataclass
class Topology:
    """Nodes by GUID and links; ``at(port)`` finds the link plugged into a port."""

    nodes: dict[str, Node] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    source: str = ""
    #: ports reported without a peer (iblinkinfo ``Down/ Polling``): cable absent or dead
    down_ports: list[PortRef] = field(default_factory=list)
    _by_port: dict[PortRef, Link] = field(default_factory=dict, repr=False)

    def add_node(self, node: Node) -> Node:
        known = self.nodes.get(node.guid)
        if known is None:
            self.nodes[node.guid] = node
            return node
        if not known.description and node.description:
            known.description = node.description
        known.ports = max(known.ports, node.ports)
        known.lid = known.lid if known.lid is not None else node.lid
        return known

    def add_link(self, link: Link) -> Link | None:
        """Add a link; returns the link already plugged into either port, if any (the caller
        decides whether that is a duplicate report or a contradiction)."""
        for end in (link.a, link.b):
            known = self._by_port.get(end)
            if known is not None:
                return known
        self.links.append(link)
        self._by_port[link.a] = link
        self._by_port[link.b] = link
        return None

    def at(self, port: PortRef) -> Link | None:
        return self._by_port.get(port)

    def node(self, guid: str) -> Node:
        return self.nodes[guid]

    def switches(self) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.kind == SWITCH), key=lambda n: n.guid)

    def hcas(self) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.kind == HCA), key=lambda n: n.guid)

    def neighbours(self) -> dict[str, list[tuple[Link, str]]]:
        """guid -> [(link, peer guid)] for every node (links in input order)."""
        out: dict[str, list[tuple[Link, str]]] = defaultdict(list)
        for link in self.links:
            out[link.a.guid].append((link, link.b.guid))
            out[link.b.guid].append((link, link.a.guid))
        return out

    def components(self) -> list[set[str]]:
        """Connected components (sets of GUIDs), largest first; isolated nodes count too."""
        parent = {guid: guid for guid in self.nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for link in self.links:
            ra, rb = find(link.a.guid), find(link.b.guid)
            if ra != rb:
                parent[ra] = rb
        groups: dict[str, set[str]] = defaultdict(set)
        for guid in self.nodes:
            groups[find(guid)].add(guid)
        return sorted(groups.values(), key=lambda g: (-len(g), min(g)))

    def describe(self, port: PortRef) -> str:
        """``leaf-01/33`` or ``gpu0001 mlx5_0/1`` for messages."""
        node = self.nodes.get(port.guid)
        return f"{node.name if node else port.guid}/{port.port}"

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes.values()}


def link_ends(links: Iterable[Link]) -> Iterator[PortRef]:
    for link in links:
        yield link.a
        yield link.b
