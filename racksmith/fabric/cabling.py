"""The cabling check: the discovered fabric against the site's wiring plan.

What it reports, each as a :class:`Finding` with a plain message:

* ``split``: the fabric (or the plan itself) is several disjoint networks. A fat tree is one
  network; the first power-on of the 4,000-GPU cluster found 8, from a plan error, so this is
  checked first and said plainly.
* ``missing``: a planned cable whose ports are both empty (or ``Down``).
* ``swapped``: two cables on one switch crossed (each port has the other's planned peer).
* ``miscabled``: a port connected to something other than its planned peer.
* ``extra``: a cable the plan does not have.
* ``degraded``: a planned cable that trained below its width or speed (``1x`` instead of
  ``4x``, HDR instead of NDR): a bad cable or transceiver.
* ``renamed``: a switch whose name differs from the plan but whose cables show it is the
  switch planned at that location (its ports reach the planned peers); the check then goes on
  with the planned name, so one renamed switch is one finding, not sixty-four miscabled ports.
* ``absent`` / ``unknown``: a planned node not in the fabric; a fabric node not in the plan.

HCAs are matched by their node description (``host mlx5_N``) or, with a hosts map (see
:mod:`racksmith.fabric.hosts`), by GUID, so findings name the host (its service tag) even
when the adapter still has its factory description.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field

from racksmith.fabric.hosts import HcaOwner
from racksmith.fabric.model import HCA, SWITCH, Link, PortRef, Topology, speed_rank
from racksmith.fabric.wiring import PlanEnd, PlannedLink, WiringPlan

FAIL = "fail"
WARN = "warn"


@dataclass
class Finding:
    kind: str
    message: str
    severity: str = FAIL
    ports: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    plan_line: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CablingReport:
    findings: list[Finding]
    fabric_networks: int
    network_sizes: list[dict[str, int]]
    planned_links: int
    matching_links: int
    fabric_links: int

    @property
    def ok(self) -> bool:
        return not any(f.severity == FAIL for f in self.findings)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for f in self.findings:
            out[f.kind] += 1
        return dict(sorted(out.items()))

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "fabric_networks": self.fabric_networks,
            "network_sizes": self.network_sizes,
            "planned_links": self.planned_links,
            "matching_links": self.matching_links,
            "fabric_links": self.fabric_links,
            "counts": self.counts(),
            "findings": [f.as_dict() for f in self.findings],
        }


Key = tuple[str, int]  # (plan name, port)


class _Names:
    """Fabric node <-> plan name, after hosts-map and rename resolution."""

    def __init__(self, topo: Topology, owners: dict[str, HcaOwner]):
        self.topo = topo
        self.owners = owners
        self.name_of: dict[str, str] = {}
        for node in topo.nodes.values():
            owner = owners.get(node.guid) if node.kind == HCA else None
            self.name_of[node.guid] = owner.name if owner else node.name
        self.guid_of: dict[str, str] = {}
        self.duplicates: dict[str, list[str]] = defaultdict(list)
        for guid in sorted(self.name_of):
            name = self.name_of[guid]
            if name in self.guid_of:
                self.duplicates[name].append(guid)
            else:
                self.guid_of[name] = guid

    def rename(self, guid: str, name: str) -> None:
        old = self.name_of[guid]
        if self.guid_of.get(old) == guid:
            del self.guid_of[old]
        self.name_of[guid] = name
        self.guid_of[name] = guid

    def key(self, ref: PortRef) -> Key:
        return (self.name_of[ref.guid], ref.port)

    def host(self, guid: str) -> str | None:
        owner = self.owners.get(guid)
        if owner:
            return owner.host
        node = self.topo.nodes.get(guid)
        return node.host if node else None

    def show(self, ref: PortRef) -> str:
        node = self.topo.nodes[ref.guid]
        name = self.name_of[ref.guid]
        if node.kind == HCA:
            extra = f" (GUID {ref.guid}" + (", factory description)" if name != node.name else ")")
            return f"{name}{extra}"
        return f"{name}/{ref.port}"


def _show_plan(end: PlanEnd, kind: str | None) -> str:
    at = f" at {end.location}" if end.location else ""
    return f"{end.name}{at}" if kind == HCA else f"{end}{at}"


def check(
    topo: Topology,
    plan: WiringPlan,
    owners: dict[str, HcaOwner] | None = None,
    width: int = 4,
    speed: str = "NDR",
) -> CablingReport:
    """Compare ``topo`` with ``plan``; see the module docstring for what is reported."""
    names = _Names(topo, owners or {})
    findings: list[Finding] = []
    findings += _split(topo, plan, names)
    for name, guids in sorted(names.duplicates.items()):
        findings.append(
            Finding(
                "duplicate",
                f"{len(guids) + 1} nodes are named {name!r} (GUIDs {names.guid_of[name]}, "
                f"{', '.join(guids)}): name them uniquely so they can be told apart",
            )
        )
    findings += _renames(topo, plan, names)

    planned = plan.by_port()
    plan_names = set(plan.locations) | {e.name for link in plan.links for e in (link.a, link.b)}
    absent = sorted(n for n in plan_names if n not in names.guid_of)
    for name in absent:
        kind = _plan_kind(name, plan)
        where = f" (planned at {plan.locations[name]})" if plan.locations.get(name) else ""
        what = "HCA" if kind == HCA else "switch"
        hint = (
            " (give --hosts if HCAs still carry their factory description)" if kind == HCA else ""
        )
        findings.append(Finding("absent", f"{what} {name}{where} is not in the fabric{hint}"))
    for guid, name in sorted(names.name_of.items()):
        node = topo.nodes[guid]
        if name not in plan_names and node.kind == SWITCH:
            findings.append(
                Finding("unknown", f"switch {name} (GUID {guid}) is in the fabric, not in the plan")
            )

    # exact matches first; what is left over is classified below
    unmet: list[PlannedLink] = []
    matched = 0
    fabric_by_key: dict[tuple[Key, Key], Link] = {}
    for link in topo.links:
        ka, kb = names.key(link.a), names.key(link.b)
        fabric_by_key[(ka, kb) if ka <= kb else (kb, ka)] = link
    used: set[int] = set()
    for p in plan.links:
        ka, kb = (p.a.name, p.a.port), (p.b.name, p.b.port)
        link = fabric_by_key.get((ka, kb) if ka <= kb else (kb, ka))
        if link is None:
            unmet.append(p)
            continue
        used.add(id(link))
        matched += 1
        bad = _degraded(link, p, width, speed)
        if bad:
            findings.append(_link_finding("degraded", names, link, f"trained at {bad}", p.line))
    unplanned = [link for link in topo.links if id(link) not in used]
    findings += _classify(topo, names, planned, unmet, unplanned, absent)
    comps = topo.components()
    sizes = [
        {
            "switches": sum(1 for g in c if topo.nodes[g].kind == SWITCH),
            "hcas": sum(1 for g in c if topo.nodes[g].kind == HCA),
        }
        for c in comps
    ]
    return CablingReport(
        findings=findings,
        fabric_networks=len(comps),
        network_sizes=sizes,
        planned_links=len(plan.links),
        matching_links=matched,
        fabric_links=len(topo.links),
    )


def _link_finding(
    kind: str, names: _Names, link: Link, what: str, plan_line: int | None = None
) -> Finding:
    """A finding about one fabric link, naming both ends and the hosts on it."""
    return Finding(
        kind,
        f"{names.show(link.a)} - {names.show(link.b)} {what}",
        ports=[str(link.a), str(link.b)],
        hosts=_hosts(names, link),
        plan_line=plan_line,
    )


def _hosts(names: _Names, link: Link) -> list[str]:
    return sorted({h for h in (names.host(link.a.guid), names.host(link.b.guid)) if h})


def _plan_kind(name: str, plan: WiringPlan | None = None) -> str:
    words = name.split()
    return HCA if len(words) == 2 and words[1].startswith(("mlx", "HCA")) else SWITCH


def _degraded(link: Link, p: PlannedLink, width: int, speed: str) -> str | None:
    want_w, want_s = p.width or width, p.speed or speed
    if link.width is None and link.speed is None:
        return None
    if (link.width or 0) < want_w or speed_rank(link.speed) < speed_rank(want_s):
        return f"{link.width}x {link.speed}, planned {want_w}x {want_s}"
    return None


def _split(topo: Topology, plan: WiringPlan, names: _Names) -> list[Finding]:
    out = []
    comps = [c for c in topo.components() if len(c) > 1 or topo.nodes[next(iter(c))].kind == SWITCH]
    if len(comps) > 1:
        parts = []
        for c in comps[:8]:
            sw = sorted(names.name_of[g] for g in c if topo.nodes[g].kind == SWITCH)
            hc = sum(1 for g in c if topo.nodes[g].kind == HCA)
            sample = ", ".join(sw[:3]) + (", ..." if len(sw) > 3 else "")
            parts.append(f"{len(sw)} switches and {hc} HCAs ({sample})")
        more = f"; and {len(comps) - 8} more" if len(comps) > 8 else ""
        out.append(
            Finding(
                "split",
                f"the fabric is {len(comps)} disjoint networks, not one: "
                + "; ".join(parts)
                + more
                + ". HCAs in different networks cannot reach each other.",
            )
        )
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for link in plan.links:
        parent[find(link.a.name)] = find(link.b.name)
    groups = {find(x) for x in list(parent)}
    if len(groups) > 1:
        out.append(
            Finding(
                "split",
                f"the wiring plan itself describes {len(groups)} disjoint networks: "
                "the plan is wrong, not (only) the cabling",
            )
        )
    return out


def _renames(topo: Topology, plan: WiringPlan, names: _Names) -> list[Finding]:
    """Pair each fabric switch whose name is not planned with the planned switch (not found
    by name) whose planned peers its ports reach; a rename when most ports agree."""
    planned = plan.by_port()
    plan_switches = {n for n in plan.locations if _plan_kind(n, plan) == SWITCH}
    plan_switches |= {
        e.name
        for link in plan.links
        for e in (link.a, link.b)
        if _plan_kind(e.name, plan) == SWITCH
    }
    missing = sorted(n for n in plan_switches if n not in names.guid_of)
    strays = [n for n in topo.switches() if names.name_of[n.guid] not in plan_switches]
    if not missing or not strays:
        return []
    ports_of: dict[str, list[tuple[int, PlanEnd]]] = defaultdict(list)
    for (name, port), (_, peer) in planned.items():
        ports_of[name].append((port, peer))
    scores = []
    for node in strays:
        for want in missing:
            hits = 0
            for port, peer in ports_of[want]:
                link = topo.at(PortRef(node.guid, port))
                if link is not None:
                    other = link.other(PortRef(node.guid, port))
                    if names.key(other) == (peer.name, peer.port):
                        hits += 1
            if hits and hits * 2 >= len(ports_of[want]):
                scores.append((-hits, want, node.guid))
    out = []
    taken_plan: set[str] = set()
    taken_node: set[str] = set()
    for neg, want, guid in sorted(scores):
        if want in taken_plan or guid in taken_node:
            continue
        taken_plan.add(want)
        taken_node.add(guid)
        old = names.name_of[guid]
        where = f" at {plan.locations[want]}" if plan.locations.get(want) else ""
        out.append(
            Finding(
                "renamed",
                f"switch {old} (GUID {guid}) sits where the plan has {want}{where} "
                f"({-neg} of {len(ports_of[want])} ports reach their planned peers): "
                f"rename it {want} or fix the plan",
                severity=WARN,
            )
        )
        names.rename(guid, want)
    return out


def _classify(
    topo: Topology,
    names: _Names,
    planned: dict[Key, tuple[PlannedLink, PlanEnd]],
    unmet: list[PlannedLink],
    unplanned: list[Link],
    absent: list[str],
) -> list[Finding]:
    out: list[Finding] = []
    absent_set = set(absent)
    down = {names.key(r) for r in topo.down_ports}
    actual: dict[Key, tuple[Link, PortRef, PortRef]] = {}
    for link in unplanned:
        actual[names.key(link.a)] = (link, link.a, link.b)
        actual[names.key(link.b)] = (link, link.b, link.a)
    done_links: set[int] = set()
    done_plan: set[int] = set()

    # swapped: two ports of one node whose cables are crossed
    for p in unmet:
        if p.line in done_plan:
            continue
        for end, peer in ((p.a, p.b), (p.b, p.a)):
            here = actual.get((end.name, end.port))
            if here is None:
                continue
            link, mine, theirs = here
            now = names.key(theirs)
            other = planned.get(now)  # the planned link of whatever my port reaches
            if other is None or other[1].name != end.name or other[0].line in done_plan:
                continue
            sib = (end.name, other[1].port)  # my sibling port that should reach `now`
            there = actual.get(sib)
            if there is None or names.key(there[2]) != (peer.name, peer.port):
                continue
            done_plan |= {p.line, other[0].line}
            done_links |= {id(link), id(there[0])}
            out.append(
                Finding(
                    "swapped",
                    f"{end.name} ports {end.port} and {sib[1]} are swapped: port {end.port} "
                    f"reaches {names.show(theirs)} and port {sib[1]} reaches "
                    f"{names.show(there[2])}; the plan has them the other way round",
                    ports=[str(mine), str(there[1])],
                    hosts=sorted(
                        {h for h in (names.host(theirs.guid), names.host(there[2].guid)) if h}
                    ),
                    plan_line=p.line,
                )
            )
            break

    for p in unmet:
        if p.line in done_plan:
            continue
        if p.a.name in absent_set or p.b.name in absent_set:
            continue  # reported once per absent node
        wrong = []
        explained = False
        for end, peer in ((p.a, p.b), (p.b, p.a)):
            here = actual.get((end.name, end.port))
            if here is None:
                continue
            explained = True  # the port is cabled, just not as planned
            if id(here[0]) in done_links:
                continue
            link, mine, theirs = here
            done_links.add(id(link))
            hosts = sorted({h for h in (names.host(theirs.guid), names.host(mine.guid)) if h})
            hosts += [h for h in _plan_host(peer) if h not in hosts]
            wrong.append(
                Finding(
                    "miscabled",
                    f"{names.show(mine)} reaches {names.show(theirs)}; the plan has "
                    f"{_show_plan(peer, _plan_kind(peer.name, None))} (plan line {p.line})",
                    ports=[str(mine), str(theirs)],
                    hosts=hosts,
                    plan_line=p.line,
                )
            )
        out += wrong
        if explained:
            continue
        state = ""
        if (p.a.name, p.a.port) in down or (p.b.name, p.b.port) in down:
            state = " (the port is Down/Polling: a cable that does not train, or none)"
        out.append(
            Finding(
                "missing",
                f"no cable {_show_plan(p.a, _plan_kind(p.a.name, None))} - "
                f"{_show_plan(p.b, _plan_kind(p.b.name, None))}{state}",
                hosts=_plan_host(p.a) + _plan_host(p.b),
                plan_line=p.line,
            )
        )
    for link in unplanned:
        if id(link) in done_links:
            continue
        out.append(_link_finding("extra", names, link, "is not in the plan"))
    return out


def _plan_host(end: PlanEnd) -> list[str]:
    words = end.name.split()
    return [words[0]] if len(words) == 2 and words[1].startswith(("mlx", "HCA")) else []
