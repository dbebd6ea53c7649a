"""UFM event triage: from events to the links to isolate, both ends, under a cap.

Steps (health-checks.md §7, with the published parser's defects fixed):

1. Drop bursts: any event inside a window of ``burst_window`` seconds that holds at least
   ``burst_count`` events is part of a reboot storm and carries no per-link signal. Windows
   slide, so a storm at the very end of the log is dropped too (the published version kept
   the last group).
2. Act on link-down, symbol-error, BER, counter and unhealthy-port codes; ignore the normal
   churn; count codes that need a person (switch down, cable temperature) and codes we do
   not know, and say so.
3. Group events by link. The peer of a port comes from the event itself (``Link went down``
   names both ends, ``Peer Port ...`` the other), from the topology if given, or from any
   ``Link went down`` line in the log. Three or more link-down events, or SM's ``FLAPPING``,
   make a link flapping.
4. Rank links (flapping and unhealthy first, then link down, BER, symbol errors, counters)
   and plan to isolate the switch ports at both ends, until the cap on ports per run is
   reached; the rest are listed as deferred, never dropped. HCA ends are named (host) but
   not isolated: the switch port takes the link down.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from racksmith.fabric.events import ACT, ATTENTION, IGNORE, End, Event
from racksmith.fabric.hosts import HcaOwner
from racksmith.fabric.model import SWITCH, Topology, link_ends, port_label

BURST_COUNT = 50
BURST_WINDOW = 1.0
FLAP_DOWNS = 3
#: The PDR plugin's default: max(10, 0.5 % of the fabric's ports).
MIN_CAP = 10

_RANK = {702: 6, 329: 5, 112: 4, 917: 3, 918: 3, 110: 2, 113: 1, 115: 1, 116: 1}


@dataclass
class LinkIssue:
    ends: tuple[End, ...]
    codes: Counter = field(default_factory=Counter)
    first_seen: str = ""
    last_seen: str = ""
    first_line: int = 0
    conditions: set[str] = field(default_factory=set)

    @property
    def flapping(self) -> bool:
        return "FLAPPING" in self.conditions or self.codes[329] >= FLAP_DOWNS

    @property
    def score(self) -> tuple[int, int]:
        top = 7 if self.flapping else max(_RANK.get(c, 0) for c in self.codes)
        return (top, sum(self.codes.values()))

    @property
    def name(self) -> str:
        return " - ".join(str(e) for e in self.ends)

    def reason(self) -> str:
        parts = []
        if self.flapping:
            why = [f"{self.codes[329]} link-down events"] if self.codes[329] else []
            why += ["SM: FLAPPING"] if "FLAPPING" in self.conditions else []
            parts.append(f"flapping ({', '.join(why)})")
        for code, n in sorted(self.codes.items(), key=lambda kv: (-_RANK.get(kv[0], 0), kv[0])):
            if code == 329 and self.flapping:
                continue
            label = ACT[code]
            if code == 702 and self.conditions - {"FLAPPING"}:
                label += f" ({', '.join(sorted(self.conditions - {'FLAPPING'}))})"
            parts.append(f"{label} x{n} [{code}]")
        return "; ".join(parts)


@dataclass
class PortAction:
    """One line of the plan: a switch port to isolate (or deferred over the cap)."""

    end: End
    peer: End | None
    issue: LinkIssue
    action: str  # "isolate" | "deferred"

    @property
    def ufm_port(self) -> str | None:
        return f"{self.end.guid}_{self.end.port}" if self.end.guid else None

    def as_dict(self) -> dict:
        def end(e: End | None) -> dict | None:
            if e is None:
                return None
            return {
                "kind": "switch" if e.is_switch else "hca",
                "name": e.name,
                "port": e.port,
                "label": port_label(e.port) if e.is_switch else None,
                "guid": e.guid,
                "host": None if e.is_switch else e.name.split()[0],
            }

        return {
            "action": self.action,
            "port": end(self.end),
            "ufm_port": self.ufm_port,
            "peer": end(self.peer),
            "link": self.issue.name,
            "reason": self.issue.reason(),
            "codes": {str(k): v for k, v in sorted(self.issue.codes.items())},
            "events": sum(self.issue.codes.values()),
            "flapping": self.issue.flapping,
            "first_seen": self.issue.first_seen,
            "last_seen": self.issue.last_seen,
            "first_line": self.issue.first_line,
        }


@dataclass
class TriageResult:
    actions: list[PortAction]
    cap: int
    events: int = 0
    burst_dropped: int = 0
    bursts: int = 0
    ignored: int = 0
    host_port_events: int = 0
    unlocated: int = 0
    attention: Counter = field(default_factory=Counter)
    unknown_codes: Counter = field(default_factory=Counter)

    @property
    def isolate(self) -> list[PortAction]:
        return [a for a in self.actions if a.action == "isolate"]

    def summary(self) -> dict:
        return {
            "events": self.events,
            "burst_events_dropped": self.burst_dropped,
            "bursts": self.bursts,
            "ignored": self.ignored,
            "host_port_events_skipped": self.host_port_events,
            "events_without_port": self.unlocated,
            "links": len({id(a.issue) for a in self.actions}),
            "ports_to_isolate": len(self.isolate),
            "ports_deferred": sum(1 for a in self.actions if a.action == "deferred"),
            "cap": self.cap,
            "needs_attention": {ATTENTION[c]: n for c, n in sorted(self.attention.items())},
            "unknown_codes": {str(c): n for c, n in sorted(self.unknown_codes.items())},
        }


def drop_bursts(
    events: Iterable[Event], count: int = BURST_COUNT, window: float = BURST_WINDOW
) -> Iterable[tuple[Event, bool]]:
    """Yield ``(event, in_burst)`` in order; an event is in a burst when some window of
    ``window`` seconds holding it holds ``count`` or more events. Streams: memory is one
    window."""
    live: deque[list] = deque()  # [event, flagged]
    storm = False
    for event in events:
        while live and live[0][0].seconds <= event.seconds - window:
            old = live.popleft()
            yield old[0], old[1]
        item = [event, False]
        live.append(item)
        if len(live) >= count:
            if not storm:
                for other in live:
                    other[1] = True
                storm = True
            item[1] = True
        else:
            storm = False
    for old in live:
        yield old[0], old[1]


def _peer_map(
    topo: Topology | None, owners: dict[str, HcaOwner] | None = None
) -> dict[tuple[str, int], End]:
    out: dict[tuple[str, int], End] = {}
    if topo is None:
        return out
    for link in topo.links:
        for mine, theirs in ((link.a, link.b), (link.b, link.a)):
            node, other = topo.nodes[mine.guid], topo.nodes[theirs.guid]
            if node.kind != SWITCH:
                continue
            kind = "Switch" if other.kind == SWITCH else "Computer"
            owner = (owners or {}).get(other.guid) if other.kind != SWITCH else None
            name = owner.name if owner else other.name
            out[(node.name, mine.port)] = End(kind, name, theirs.port, other.guid)
    return out


def _switch_guids(topo: Topology | None) -> dict[str, str]:
    return {n.name: n.guid for n in topo.switches()} if topo else {}


def triage(
    events: Iterable[Event],
    topology: Topology | None = None,
    cap: int | None = None,
    burst_count: int = BURST_COUNT,
    burst_window: float = BURST_WINDOW,
    owners: dict[str, HcaOwner] | None = None,
) -> TriageResult:
    """Plan which ports to isolate; see the module docstring. ``owners`` (the hosts map)
    names HCA peers by host when their node description is still the factory one."""
    peers = _peer_map(topology, owners)
    guids = _switch_guids(topology)
    if cap is None:
        ports = (
            sum(topology.nodes[e.guid].kind == SWITCH for e in link_ends(topology.links))
            if topology
            else 0
        )
        cap = max(MIN_CAP, ports * 5 // 1000)
    result = TriageResult(actions=[], cap=cap)
    issues: dict[frozenset, LinkIssue] = {}
    pending: list[tuple[Event, End]] = []
    log_peers: dict[tuple[str, int], End] = {}
    in_burst_prev = False
    for event, in_burst in drop_bursts(events, burst_count, burst_window):
        result.events += 1
        code = event.code
        if code == 329:
            ends = event.link_ends()
            if ends:
                a, b = ends
                log_peers[(a.name, a.port)] = b
                log_peers[(b.name, b.port)] = a
        if in_burst:
            result.burst_dropped += 1
            if not in_burst_prev:
                result.bursts += 1
            in_burst_prev = True
            continue
        in_burst_prev = False
        if code in IGNORE:
            result.ignored += 1
            continue
        if code in ATTENTION:
            result.attention[code] += 1
            continue
        if code not in ACT:
            result.unknown_codes[code] += 1
            continue
        if "Aggregation Node" in event.dev_desc or "Aggregation Node" in event.message:
            result.ignored += 1
            continue
        if code == 702 and "MANUAL" in event.message:
            result.ignored += 1
            continue
        where = event.location()
        if where is None:
            ends = event.link_ends() if code == 329 else None
            if ends is None:
                result.unlocated += 1
                continue
            where = ends[0] if ends[0].is_switch else ends[1]
        if not where.is_switch:
            result.host_port_events += 1
            continue
        pending.append((event, where))
    for event, where in pending:
        peer = _peer_of(event, where, peers, log_peers)
        ends = [_with_guid(where, guids)] + ([_with_guid(peer, guids)] if peer else [])
        key = frozenset((e.name, e.port) for e in ends)
        issue = issues.get(key)
        if issue is None:
            issue = LinkIssue(tuple(sorted(ends, key=lambda e: (not e.is_switch, e.name, e.port))))
            issue.first_seen, issue.first_line = event.timestamp, event.line
            issues[key] = issue
        issue.codes[event.code] += 1
        issue.last_seen = event.timestamp
        if event.code == 702:
            up = event.unhealthy_peer()
            cond = up[2] if up else event.message.rstrip(".").rsplit(" ", 1)[-1]
            issue.conditions.add(cond.upper())
    ranked = sorted(issues.values(), key=lambda i: (-i.score[0], -i.score[1], i.name))
    budget = cap
    for issue in ranked:
        switch_ends = [e for e in issue.ends if e.is_switch]
        fits = len(switch_ends) <= budget
        if fits:
            budget -= len(switch_ends)
        for end in switch_ends:
            peer = next((e for e in issue.ends if e != end), None)
            result.actions.append(PortAction(end, peer, issue, "isolate" if fits else "deferred"))
    return result


def _peer_of(
    event: Event,
    where: End,
    peers: dict[tuple[str, int], End],
    log_peers: dict[tuple[str, int], End],
) -> End | None:
    if event.code == 329:
        ends = event.link_ends()
        if ends:
            return ends[1] if (ends[0].name, ends[0].port) == (where.name, where.port) else ends[0]
    if event.code == 702:
        up = event.unhealthy_peer()
        if up:
            return End("Switch", up[0], up[1])
    key = (where.name, where.port)
    return peers.get(key) or log_peers.get(key)


def _with_guid(end: End, guids: dict[str, str]) -> End:
    if end.guid or not end.is_switch or end.name not in guids:
        return end
    return End(end.kind, end.name, end.port, guids[end.name])
