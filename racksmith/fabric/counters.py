"""Port error counters before and after a burn-in: parse ``perfquery LID PORT`` output, diff
it, and turn what grew into events for the triage (same cap, same both-ends plan).

The burn-in writes ``counters.sh`` (one ``perfquery`` per switch port); run it before and
after and give both outputs here. A port missing from either, a ``perfquery failed`` marker
or a counter that went backwards (reset, switch reboot) is reported as unreadable: the diff
fails closed instead of calling an unread port clean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.events import Event
from racksmith.fabric.model import SWITCH, Topology, port_label

_HEADER = re.compile(r"^# Port (?:extended )?counters: Lid (\d+) port (\d+)")
_FAILED = re.compile(r"^# perfquery failed: Lid (\d+) port (\d+)")
_FIELD = re.compile(r"^(\w+):\.*\s*(\S+)$")

#: counter -> (event code it maps to, reason)
WATCHED = {
    "SymbolErrorCounter": 110,
    "LinkDownedCounter": 112,
    "PortRcvErrors": 113,
}
#: Symbol errors allowed: the PDR plugin's BER-based limit, rate x seconds x 1e-14.
NDR_BPS = 400e9
SYMBOL_BER = 1e-14


@dataclass
class Snapshot:
    counters: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)
    failed: set[tuple[int, int]] = field(default_factory=set)


def parse(text: str, source: str = "counters") -> Snapshot:
    snap = Snapshot()
    current: dict[str, int] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _HEADER.match(line)
        if m:
            current = snap.counters.setdefault((int(m[1]), int(m[2])), {})
            continue
        m = _FAILED.match(line)
        if m:
            snap.failed.add((int(m[1]), int(m[2])))
            current = None
            continue
        m = _FIELD.match(line)
        if m is None or current is None:
            raise FabricInputError(source, number, f"not perfquery output: {line[:80]!r}")
        value = m[2]
        try:
            current[m[1]] = int(value, 16) if value.startswith("0x") else int(value)
        except ValueError:
            raise FabricInputError(
                source, number, f"{m[1]} value {value!r} is not a number"
            ) from None
    if not snap.counters and not snap.failed:
        raise FabricInputError(source, 0, "no '# Port counters' blocks: is this perfquery output?")
    return snap


@dataclass
class CounterDiff:
    events: list[Event]
    unreadable: list[str]
    ports: int


def diff(before: Snapshot, after: Snapshot, topo: Topology, seconds: float) -> CounterDiff:
    """Counters that grew past their limit -> synthetic events (110/112/113) on that port."""
    by_lid = {n.lid: n for n in topo.nodes.values() if n.kind == SWITCH and n.lid is not None}
    allowed = {"SymbolErrorCounter": NDR_BPS * seconds * SYMBOL_BER}
    events: list[Event] = []
    unreadable: list[str] = []
    keys = sorted(set(before.counters) | set(after.counters) | before.failed | after.failed)
    for lid, port in keys:
        node = by_lid.get(lid)
        where = f"{node.name}/{port}" if node else f"Lid {lid} port {port}"
        b, a = before.counters.get((lid, port)), after.counters.get((lid, port))
        if b is None or a is None or (lid, port) in before.failed | after.failed:
            unreadable.append(f"{where}: not read {'before' if b is None else 'after'} the burn")
            continue
        if node is None:
            unreadable.append(f"{where}: LID is no switch in the topology")
            continue
        for name, code in WATCHED.items():
            if name not in a or name not in b:
                unreadable.append(f"{where}: {name} missing")
                continue
            delta = a[name] - b[name]
            if delta < 0:
                unreadable.append(f"{where}: {name} went from {b[name]} to {a[name]} (reset?)")
            elif delta > allowed.get(name, 0):
                events.append(
                    Event(
                        line=len(events) + 1,
                        seconds=0.0,
                        timestamp="burn-in",
                        code=code,
                        level="WARNING",
                        dev_type="IBPort",
                        dev_desc=f"default / Switch: {node.name} / {port_label(port)}",
                        dev_id=node.guid,
                        message=f"{name} grew by {delta} during the burn-in",
                    )
                )
    return CounterDiff(events, unreadable, len(keys))


#: Data counters: ``perfquery`` counts 4-byte words; the plain ones are 32 bits and stop at
#: the top (an NDR link fills them in under a second), ``perfquery -x`` gives 64 bits.
DATA = ("PortXmitData", "PortRcvData")
SATURATED = 0xFFFFFFFF


@dataclass
class Load:
    """Which link directions carried traffic between two snapshots (adaptive routing: what
    the burn-in really loaded). ``measured`` is False when neither snapshot has data counters."""

    measured: bool
    loaded: set[tuple[str, str]]  # (from port, to port) as "name/port"
    idle: list[str]
    unmeasured: list[str]


def load(before: Snapshot, after: Snapshot, topo: Topology, min_bytes: float = 1e9) -> Load:
    """A link direction is loaded when the sending switch port's ``PortXmitData`` (or the
    receiving switch port's ``PortRcvData``) grew by ``min_bytes`` or reached the 32-bit top.
    Only switch ports are read (counters.sh), so an HCA cable is judged from its switch end."""
    measured = any(DATA[0] in c for c in after.counters.values())
    if not measured:
        return Load(False, set(), [], [])

    def grew(node, port: int, name: str) -> bool | None:
        if node is None or node.lid is None:
            return None
        b = before.counters.get((node.lid, port))
        a = after.counters.get((node.lid, port))
        if b is None or a is None or name not in a or name not in b:
            return None
        if a[name] == SATURATED == b[name]:
            return None  # a 32-bit counter pegged before the burn: it cannot tell
        return a[name] - b[name] >= min_bytes / 4 or a[name] == SATURATED

    loaded: set[tuple[str, str]] = set()
    idle: list[str] = []
    unmeasured: list[str] = []
    for link in topo.links:
        for src, dst in ((link.a, link.b), (link.b, link.a)):
            s_node, d_node = topo.nodes[src.guid], topo.nodes[dst.guid]
            sent = grew(s_node if s_node.kind == SWITCH else None, src.port, "PortXmitData")
            got = grew(d_node if d_node.kind == SWITCH else None, dst.port, "PortRcvData")
            what = f"{topo.describe(src)} -> {topo.describe(dst)}"
            if sent is None and got is None:
                unmeasured.append(what)
            elif sent or got:
                loaded.add((topo.describe(src), topo.describe(dst)))
            else:
                idle.append(what)
    return Load(True, loaded, idle, unmeasured)


def render(counters: dict[tuple[int, int], dict[str, int]]) -> str:
    """perfquery-style text (tests and the generator)."""
    out = []
    for (lid, port), values in sorted(counters.items()):
        out.append(f"# Port counters: Lid {lid} port {port} (CapMask: 0x5A00)")
        out.append(f"PortSelect:{'.' * 22}{port}")
        for name, value in values.items():
            out.append(f"{name}:{'.' * max(1, 32 - len(name))}{value}")
    return "\n".join(out) + "\n"
