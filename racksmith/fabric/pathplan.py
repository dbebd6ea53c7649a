"""Burn-in stages planned on the paths the fabric really uses (its forwarding tables).

The subnet manager, not the planner, decides each pair's route: a packet from ``a`` to ``b``
follows the switches' tables for ``b``'s LID (:mod:`racksmith.fabric.routes`), and
``ib_write_bw -b`` loads ``path(a, b)`` and ``path(b, a)``, which on ftree tables are
usually different links. So everything here is computed on traced paths:

* **Directions.** A link is *covered* when both of its directions carried a flow in some
  stage (symbol errors and drops are counted by the receiver, so each direction needs load).
  Within a stage no directed link carries two flows and no HCA is in two pairs, so every
  loaded direction runs at line rate.
* **Usable links.** Tracing every source leaf to every destination finds the directed links
  no route uses at all (an SM may leave parallel links idle, updn aliases uplinks); no plan can
  load them, and they are listed as not covered (exit 1), with that reason.
* **Lower bound.** A flow leaves a switch upwards at most once and enters any switch at most
  once, and each HCA sends one flow and receives one per stage. For each switch, the
  directed up-links it can use divided by the HCAs whose real paths leave it upwards, and the
  down-links into it divided by the destinations reached through them (rounded up); for each
  destination, the links into one switch that only paths to that destination use; for each
  source leaf, the links into one switch only its paths use, divided by its HCAs; for each
  link direction, the links into (or out of) one switch that every path using them reaches
  through it (it carries one flow per stage): each bounds the stage count from below, and the
  largest is the bound (at least 1).
* **Stages (greedy).** The first stage starts from the half-shift pairing (each HCA with the
  one on the same port of the mirror leaf in the mirror subtree), which fat-tree routing
  carries without sharing a link; only pairs whose traced paths fit are kept. Then uncovered
  directed links are taken busiest bottleneck first (those
  behind a link direction that the bound above counts most for), then scarcest (fewest
  source-leaf/destination combinations whose paths use them); for each, a free destination and
  a free source on a leaf whose path uses it are paired if both paths are free in the stage;
  then the free HCAs left are paired where that loads something new. Repeated until every
  usable direction is covered. Seeded; a few attempts, the one with the fewest stages kept.

**Adaptive routing.** Where the tables are marked adaptive, switches may send a flow up any
port of its adaptive-routing group at run time: the stages still keep HCAs and the offered load
per switch within line rate, but which inter-switch links a stage loads is not fixed, so the
inter-switch coverage printed is that of the static tables, and the real one must be measured
from the port data counters before and after (``burnin --before/--after``).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field

from racksmith.fabric.burnin import PlanFigures, components, levels_of
from racksmith.fabric.lft import Tables
from racksmith.fabric.model import HCA, SWITCH, Topology
from racksmith.fabric.routes import Router

MAX_STAGES = 64
#: (source leaf, destination) examples kept per directed link to look for pairs through it
USERS_KEPT = 48
#: feasible pairs weighed for each uncovered link direction (and from any one source leaf)
CHOICES = 8
CHOICES_PER_LEAF = 2

GUARANTEES = [
    "every pair's path is traced through the switches' forwarding tables",
    "within a stage no HCA is in two pairs and no link direction carries two flows",
]
ADAPTIVE = [
    "adaptive routing is on: switches may move a flow to another up-port of its group at "
    "run time, so the inter-switch coverage above is that of the static tables, not a "
    "guarantee",
    "still guaranteed: every HCA cable is loaded both ways, and each stage offers each "
    "switch no more flows than its links carry at line rate",
    "measure what was loaded: run counters.sh before and after and give both to "
    "'burnin --before --after', which lists links whose data counters did not grow",
]


@dataclass
class RoutedPair:
    client: str  # HCA GUIDs
    server: str
    forward: tuple[int, ...]  # directed links client -> server
    back: tuple[int, ...]  # directed links server -> client

    @property
    def links(self) -> list[int]:
        """Undirected link indices the pair loads (either way)."""
        return sorted({d // 2 for d in self.forward + self.back})


@dataclass
class RoutedPlan(PlanFigures):
    stages: list[list[RoutedPair]]
    lower_bound: int
    inter_switch_links: int
    covered_inter_switch: int
    hca_links: int
    covered_hca: int
    uncovered: list[int]  # link indices with a direction never loaded
    unusable: list[int]  # directed links no route uses
    seed: int
    adaptive: bool = False
    guarantees: list[str] = field(default_factory=list)


@dataclass
class _Paths:
    """What tracing every source leaf to every destination found."""

    router: Router
    hcas: list[str]
    leaf: dict[str, str]  # HCA -> its switch
    on_leaf: dict[str, list[str]]  # switch -> its HCAs
    leafpath: dict[tuple[str, str], tuple[int, ...]]
    users: dict[int, list[tuple[str, str]]]  # directed link -> (source leaf, destination)
    usable: set[int]
    lower_bound: int
    pressure: dict[int, int] = field(default_factory=dict)  # stages the link's bottleneck needs
    mirror: list[tuple[str, str]] = field(default_factory=list)

    def path(self, a: str, b: str) -> tuple[int, ...]:
        sw = self.leaf[a]
        if sw == self.leaf[b]:
            return self.router.path(a, b)
        key = (sw, b)
        tail = self.leafpath.get(key)
        if tail is None:
            tail = self.leafpath[key] = self.router.tail(sw, b)
        return (self.router.uplink(a)[0], *tail)


def analyse(topo: Topology, tables: Tables, seed: int = 0) -> _Paths:
    """Trace every (source leaf, destination HCA) path; raises RouteError on a hole or loop."""
    router = Router(topo, tables)
    level = levels_of(topo)
    leaf: dict[str, str] = {}
    on_leaf: dict[str, list[str]] = defaultdict(list)
    for node in topo.hcas():
        if node.guid not in router.lid:
            continue
        cable = router.cable(node.guid)
        if cable is None or cable[1] not in router.switches:
            continue  # an HCA without a cable to a switch sends nothing
        sw = cable[1]
        leaf[node.guid] = sw
        on_leaf[sw].append(node.guid)
    hcas = sorted(leaf)
    rng = random.Random(f"{seed}/analyse")  # noqa: S311 - sampling, not secrets
    dests = hcas[:]
    rng.shuffle(dests)
    leaves = sorted(on_leaf)
    rng.shuffle(leaves)
    leafpath: dict[tuple[str, str], tuple[int, ...]] = {}
    users: dict[int, list[tuple[str, str]]] = defaultdict(list)
    up_edges: dict[str, set[int]] = defaultdict(set)
    up_leaves: dict[str, set[str]] = defaultdict(set)
    down_edges: dict[str, set[int]] = defaultdict(set)
    down_dests: dict[str, set[str]] = defaultdict(set)
    links = topo.links
    side: dict[int, tuple[str, str, int]] = {}  # directed link -> (from, to, +1 up/-1 down/0)
    only_dest: dict[int, str | None] = {}  # directed link -> its one destination (None: several)
    only_leaf: dict[int, str | None] = {}  # directed link -> its one source leaf
    before: dict[int, set[int]] = {}  # directed link -> links every path using it took first
    for d in dests:
        d_leaf = leaf[d]
        for sw in leaves:
            if sw == d_leaf:
                continue  # same leaf: no inter-switch link
            tail = router.tail(sw, d)
            leafpath[(sw, d)] = tail
            for e in tail:
                kept = users[e]
                if len(kept) < USERS_KEPT:
                    kept.append((sw, d))
                if only_dest.setdefault(e, d) != d:
                    only_dest[e] = None
                if only_leaf.setdefault(e, sw) != sw:
                    only_leaf[e] = None
            for i, e in enumerate(tail):
                prior = before.get(e)
                if prior is None:
                    before[e] = set(tail[:i])
                elif prior:
                    prior.intersection_update(tail[:i])
                how = side.get(e)
                if how is None:
                    link = links[e // 2]
                    a, b = (link.a, link.b) if e % 2 == 0 else (link.b, link.a)
                    la, lb = level.get(a.guid, 0), level.get(b.guid, 0)
                    step = 1 if lb > la else -1 if la > lb and b.guid in router.switches else 0
                    how = side[e] = (a.guid, b.guid, step)
                if how[2] == 1:
                    up_edges[how[0]].add(e)
                    up_leaves[how[0]].add(sw)
                elif how[2] == -1:
                    down_edges[how[1]].add(e)
                    down_dests[how[1]].add(d)
    usable = set(users)
    for h in hcas:  # HCA cables: up to the leaf when it sends, down when it receives
        up_e = router.uplink(h)[0]
        usable.add(up_e)
        usable.add(up_e ^ 1)
    bound = 1
    for sw, edges in up_edges.items():
        senders = sum(len(on_leaf[x]) for x in up_leaves[sw])
        bound = max(bound, math.ceil(len(edges) / max(1, senders)))
    for sw, edges in down_edges.items():
        bound = max(bound, math.ceil(len(edges) / max(1, len(down_dests[sw]))))
    # one destination receives one flow per stage, and a flow enters a switch once: the links
    # into a switch that only paths to ``d`` use need that many stages; alike for a source leaf
    # (its HCAs send one flow each per stage)
    into: dict[tuple[str, str], int] = defaultdict(int)
    for e, d in only_dest.items():
        if d is not None:
            into[(d, side[e][1])] += 1
    bound = max(bound, max(into.values(), default=1))
    into.clear()
    for e, sw in only_leaf.items():
        if sw is not None:
            into[(sw, side[e][1])] += 1
    for (sw, _), n in into.items():
        bound = max(bound, math.ceil(n / len(on_leaf[sw])))
    # a link direction carries one flow per stage: the links into one switch that only flows
    # through it can reach need one stage each
    behind: dict[tuple[int, str, int], int] = defaultdict(int)
    for e, prior in before.items():
        for f in prior:
            behind[(f, side[e][1], 1)] += 1  # into one switch
            behind[(f, side[e][0], 0)] += 1  # out of one switch: a path leaves it once too
    bound = max(bound, max(behind.values(), default=1))
    pressure = {
        e: max(max(behind[(f, side[e][1], 1)], behind[(f, side[e][0], 0)]) for f in prior)
        for e, prior in before.items()
        if prior
    }
    mirror = _mirror(topo, level, leaf)
    return _Paths(
        router, hcas, leaf, dict(on_leaf), leafpath, users, usable, bound, pressure, mirror
    )


def _mirror(topo: Topology, level: dict[str, int], leaf: dict[str, str]) -> list[tuple[str, str]]:
    """HCAs in tree order (subtree below the top tier, leaf, leaf port), each paired with the
    one half the list away: the same port of the mirror leaf in the mirror subtree. Fat-tree
    routing sends a leaf port's destinations through "its" uplink at every level, so this
    shift loads every link once; the planner only tries these pairs first and keeps those the
    traced paths allow."""
    top = max(level.values(), default=0)
    subtree = components(topo, {g for g, lv in level.items() if 0 < lv < top})
    first: dict[str, str] = {}  # subtree -> the name that sorts first in it
    for g, root in subtree.items():
        if root not in first or topo.nodes[g].name < first[root]:
            first[root] = topo.nodes[g].name
    port: dict[str, int] = {}
    for link in topo.links:
        for here, there in ((link.a, link.b), (link.b, link.a)):
            if leaf.get(there.guid) == here.guid:
                port[there.guid] = here.port

    def key(h: str) -> tuple[str, str, int]:
        sw = leaf[h]
        pod = first[subtree[sw]] if sw in subtree else ""
        return (pod, topo.nodes[sw].name, port.get(h, 0))

    order = sorted(leaf, key=key)
    half = len(order) // 2
    return [(order[i], order[i + half]) for i in range(half)]


def plan(
    topo: Topology,
    tables: Tables,
    seed: int = 0,
    max_stages: int = MAX_STAGES,
    attempts: int = 3,
) -> RoutedPlan:
    """Plan the burn-in on ``tables``' paths; see the module docstring."""
    paths = analyse(topo, tables, seed)
    best: list[list[RoutedPair]] | None = None
    for attempt in range(max(1, attempts)):
        rng = random.Random(f"{seed}/{attempt}")  # noqa: S311
        stages = _stages(paths, rng, max_stages)
        if best is None or len(stages) < len(best):
            best = stages
        if len(best) <= paths.lower_bound:
            break
    assert best is not None
    return _result(topo, tables, paths, best, seed)


def _stages(paths: _Paths, rng: random.Random, max_stages: int) -> list[list[RoutedPair]]:
    covered: set[int] = set()
    stages: list[list[RoutedPair]] = []
    targets = paths.usable
    while len(stages) < max_stages and targets - covered:
        pairs = _stage(paths, covered, rng)
        new = {e for p in pairs for e in p.forward + p.back} - covered
        if not new:
            break
        covered |= new
        stages.append(pairs)
    return stages


def _stage(paths: _Paths, covered: set[int], rng: random.Random) -> list[RoutedPair]:
    free = set(paths.hcas)
    used: set[int] = set()
    pairs: list[RoutedPair] = []

    def feasible(a: str, d: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        fwd = paths.path(a, d)
        if used.intersection(fwd):
            return None
        back = paths.path(d, a)
        if used.intersection(back) or set(fwd).intersection(back):
            return None
        return fwd, back

    def take(a: str, d: str, fwd: tuple[int, ...], back: tuple[int, ...]) -> None:
        used.update(fwd)
        used.update(back)
        free.discard(a)
        free.discard(d)
        pairs.append(RoutedPair(a, d, fwd, back))

    def attempt(a: str, d: str) -> bool:
        found = feasible(a, d)
        if found is not None:
            take(a, d, *found)
        return found is not None

    if not covered:  # first stage: the half-shift pairing fat-tree routing carries cleanly
        for a, d in paths.mirror:
            if a in free and d in free:
                attempt(a, d)
    todo = [e for e in paths.users if e not in covered]
    rng.shuffle(todo)
    # behind the busiest bottleneck first (each stage must give it one of its links), then
    # the scarcest
    todo.sort(key=lambda e: (-paths.pressure.get(e, 0), len(paths.users[e])))
    for e in todo:
        if e in used:
            continue
        # a few feasible pairs through ``e``; the one that loads the most new directions wins
        options = paths.users[e]
        first = rng.randrange(len(options))
        best: tuple[int, str, str, tuple[int, ...], tuple[int, ...]] | None = None
        tried = 0
        for sw, d in options[first:] + options[:first]:
            if d not in free:
                continue
            sources = paths.on_leaf[sw]
            start = rng.randrange(len(sources))
            hits = 0
            for k in range(len(sources)):
                a = sources[(start + k) % len(sources)]
                if a not in free or a == d:
                    continue
                found = feasible(a, d)
                if found is None:
                    continue
                gain = len(set(found[0] + found[1]) - covered)
                if best is None or gain > best[0]:
                    best = (gain, a, d, *found)
                hits += 1
                if hits == CHOICES_PER_LEAF:
                    break
            tried += hits
            if tried >= CHOICES:
                break
        if best is not None:
            take(best[1], best[2], best[3], best[4])
    # the HCAs left: pair where it loads something not yet loaded (their cables at least)
    left = sorted(free)
    rng.shuffle(left)
    for a in left:
        if a not in free:
            continue
        for _ in range(16):
            b = left[rng.randrange(len(left))]
            if b == a or b not in free:
                continue
            fwd = paths.path(a, b)
            back = paths.path(b, a)
            if not (set(fwd) | set(back)) - covered:
                continue
            if attempt(a, b):
                break
    return pairs


def _result(
    topo: Topology, tables: Tables, paths: _Paths, stages: list[list[RoutedPair]], seed: int
) -> RoutedPlan:
    loaded = {e for pairs in stages for p in pairs for e in p.forward + p.back}
    inter, hca = _link_kinds(topo)
    both = {i for i in inter | hca if 2 * i in loaded and 2 * i + 1 in loaded}
    unusable = sorted(e for i in inter | hca for e in (2 * i, 2 * i + 1) if e not in paths.usable)
    return RoutedPlan(
        stages=stages,
        lower_bound=paths.lower_bound,
        inter_switch_links=len(inter),
        covered_inter_switch=len(inter & both),
        hca_links=len(hca),
        covered_hca=len(hca & both),
        uncovered=sorted(inter - both),
        unusable=unusable,
        seed=seed,
        adaptive=tables.adaptive,
        guarantees=GUARANTEES + (ADAPTIVE if tables.adaptive else []),
    )


def _link_kinds(topo: Topology) -> tuple[set[int], set[int]]:
    inter, hca = set(), set()
    for i, link in enumerate(topo.links):
        kinds = {topo.nodes[link.a.guid].kind, topo.nodes[link.b.guid].kind}
        if kinds == {SWITCH}:
            inter.add(i)
        elif kinds == {SWITCH, HCA}:
            hca.add(i)
    return inter, hca


@dataclass
class Replay:
    """What a plan's pairs really load on given tables (a plan made without them, say)."""

    inter_switch_links: int
    covered_inter_switch: int
    hca_links: int
    covered_hca: int
    overloaded: int  # (stage, directed link) slots carrying two flows or more

    @property
    def coverage(self) -> float:
        return (
            self.covered_inter_switch / self.inter_switch_links if self.inter_switch_links else 1.0
        )


def replay(topo: Topology, tables: Tables, stages: list[list]) -> Replay:
    """Trace each stage's pairs (``client``/``server`` GUIDs) through ``tables``: the links
    they really load both ways, and the link directions a stage loads more than once."""
    router = Router(topo, tables)
    loaded: set[int] = set()
    overloaded = 0
    for pairs in stages:
        seen: dict[int, int] = defaultdict(int)
        for p in pairs:
            for e in router.path(p.client, p.server) + router.path(p.server, p.client):
                seen[e] += 1
        loaded |= set(seen)
        overloaded += sum(1 for n in seen.values() if n > 1)
    inter, hca = _link_kinds(topo)
    both = {i for i in inter | hca if 2 * i in loaded and 2 * i + 1 in loaded}
    return Replay(len(inter), len(inter & both), len(hca), len(hca & both), overloaded)


def route_text(topo: Topology, directed: tuple[int, ...]) -> str:
    """``gpu0001 mlx5_0 > ib-leaf-001 > ... > gpu0033 mlx5_0`` for a traced path."""
    if not directed:
        return ""
    first = topo.links[directed[0] // 2]
    start = first.a.guid if directed[0] % 2 == 0 else first.b.guid
    names = [topo.nodes[start].name]
    for e in directed:
        link = topo.links[e // 2]
        names.append(topo.nodes[link.b.guid if e % 2 == 0 else link.a.guid].name)
    return " > ".join(names)
