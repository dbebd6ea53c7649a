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

_HEADER = re.compile(r"^# Port counters: Lid (\d+) port (\d+)")
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


def render(counters: dict[tuple[int, int], dict[str, int]]) -> str:
    """perfquery-style text (tests and the generator)."""
    out = []
    for (lid, port), values in sorted(counters.items()):
        out.append(f"# Port counters: Lid {lid} port {port} (CapMask: 0x5A00)")
        out.append(f"PortSelect:{'.' * 22}{port}")
        for name, value in values.items():
            out.append(f"{name}:{'.' * max(1, 32 - len(name))}{value}")
    return "\n".join(out) + "\n"
