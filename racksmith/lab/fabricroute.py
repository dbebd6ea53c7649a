"""Forwarding tables for generated fabrics, computed the way OpenSM's routing engines do.

Test data, not a subnet manager: the burn-in planner must be exercised on tables shaped like
the ones a real SM programs, and a test must be able to check a route by hand. Written from a
reading of OpenSM's ``osm_ucast_ftree.c``, ``osm_ucast_updn.c`` and ``osm_switch.c``
(github.com/linux-rdma/opensm, read 2026-12-01); no code taken. Only HCA LIDs are routed
(switch-to-switch and switch-to-HCA management paths are not what the burn-in loads), and
each switch's own LID goes to port 0.

**ftree** (``fabric_route_to_cns``). Switches are ranked by distance from the HCAs (leaves
are the switches with HCAs, roots the farthest; what a root GUID file lists) and indexed
breadth-first from the roots (roots by GUID, children by port number). Links between the same
two switches form a *port group*. Destinations are routed leaf by leaf (index order), HCA by
HCA (port order); a leaf with fewer HCAs than the fullest leaf routes "dummy" destinations for
the missing ones, which only move the counters. For destination ``d`` on leaf ``L``:

* ``L`` sends ``d`` down its HCA port; then, from ``L`` upwards (*down-going by going up*): at
  each switch, first route *up-going by going down* (below), then pick the up group with the
  fewest down-going routes (ties: lowest remote index) and in it the port with the fewest,
  count it, and program the upper switch to send ``d`` down that link; go up from there.
  The other up groups get ``d`` pointed down their least-loaded port too (secondary paths,
  not counted), so every upper switch can reach ``d``.
* *Up-going by going down* from a switch ``S`` that can reach ``d``: for every down group of
  ``S`` except the one the route came up from, in order of fewest up-going routes, the lower
  switch is programmed to send ``d`` up its least-loaded port of that group (unless it already
  has a route as short), and the same is done from it downwards; a port's up-going count grows
  when the lower part holds HCAs.

So all traffic to ``d`` from other subtrees converges on one path down from one top switch,
and destinations on a leaf are spread over its uplinks: the shape ftree is known for. OpenSM
refuses ftree for a tree whose switches of one rank differ in port groups (a dead link) unless
a root GUID file is given; the generator routes as with a root GUID file (UFM's set-up), so a
dead link is routed around: its port group is smaller or gone.

**updn** (``updn_bfs_by_node`` + ``osm_switch_recommend_path``). Roots are the switches of the
top rank (a root GUID file; OpenSM's own guess from hop histograms is not modelled); a
switch's rank is its distance from the nearest root. For each destination switch a BFS marks,
for each switch and port, the hop count to it over up*/down* paths only (a path never goes up
after going down; between switches of equal rank the bigger GUID is "up"). Then each switch,
for each HCA LID in port-GUID order, takes among its ports with the least hops the one that
already carries the fewest routes (lowest port number on ties), and counts it.
"""

from __future__ import annotations

from collections import defaultdict, deque
from operator import attrgetter

from racksmith.fabric.burnin import levels_of
from racksmith.fabric.lft import Tables
from racksmith.fabric.model import HCA, SWITCH, Topology

ENGINES = ("ftree", "updn")


class _Group:
    """Links from one switch to one neighbour: local ports (sorted) and their remote ports."""

    __slots__ = (
        "counter_down",
        "counter_up",
        "idx",
        "local",
        "port_down",
        "port_up",
        "remote",
        "remote_ports",
    )

    def __init__(self, remote: str) -> None:
        self.remote = remote
        self.local: list[int] = []
        self.remote_ports: list[int] = []
        self.counter_up = 0  # routes up this group / each port (ftree's counter_up)
        self.counter_down = 0
        self.port_up: list[int] = []
        self.port_down: list[int] = []
        self.idx = 0  # the remote switch's index


def _groups(topo: Topology) -> dict[str, dict[str, _Group]]:
    out: dict[str, dict[str, _Group]] = defaultdict(dict)
    for link in topo.links:
        for here, there in ((link.a, link.b), (link.b, link.a)):
            group = out[here.guid].get(there.guid)
            if group is None:
                group = out[here.guid][there.guid] = _Group(there.guid)
            group.local.append(here.port)
            group.remote_ports.append(there.port)
    for groups in out.values():
        for g in groups.values():
            order = sorted(range(len(g.local)), key=lambda k: g.local[k])
            g.local = [g.local[k] for k in order]
            g.remote_ports = [g.remote_ports[k] for k in order]
            g.port_up = [0] * len(order)
            g.port_down = [0] * len(order)
    return out


def _empty_tables(topo: Topology, engine: str) -> Tables:
    tables = Tables(source=f"lab:{engine}", form=engine)
    for node in topo.switches():
        tables.lfts[node.guid] = {node.lid: 0} if node.lid is not None else {}
    return tables


def ftree(topo: Topology) -> Tables:
    """LFTs as OpenSM's ftree engine computes them (see the module docstring)."""
    level = levels_of(topo)
    groups = _groups(topo)
    switches = [g for g, lv in level.items() if lv > 0]
    top = max((level[g] for g in switches), default=0)
    up: dict[str, list[_Group]] = {}
    down: dict[str, list[_Group]] = {}
    for sw in switches:
        mine = groups.get(sw, {})
        up[sw] = [g for r, g in mine.items() if r in level and level[r] == level[sw] + 1]
        down[sw] = [g for r, g in mine.items() if r in level and level[r] == level[sw] - 1]
    down_sw = {sw: [g for g in down[sw] if topo.nodes[g.remote].kind == SWITCH] for sw in switches}
    has_hca = {sw: any(topo.nodes[g.remote].kind == HCA for g in down[sw]) for sw in switches}
    # index: breadth-first from the roots (by GUID), children in port order
    index: dict[str, int] = {}
    queue: deque[str] = deque(sorted(g for g in switches if level[g] == top))
    for g in queue:
        index[g] = len(index)
    while queue:
        sw = queue.popleft()
        for grp in sorted(down[sw], key=lambda x: x.local[0]):
            if grp.remote not in index and topo.nodes[grp.remote].kind == SWITCH:
                index[grp.remote] = len(index)
                queue.append(grp.remote)
    for sw in switches:  # switches no root reaches downwards (not a tree): after the rest
        index.setdefault(sw, len(index) + 10**6)
    for sw in switches:
        for grp in up[sw] + down[sw]:
            grp.idx = index.get(grp.remote, -1)
    lft: dict[str, dict[int, int]] = {sw: {} for sw in switches}
    hops: dict[str, dict[int, int]] = {sw: {} for sw in switches}
    by_up = attrgetter("counter_up", "idx")
    by_down = attrgetter("counter_down", "idx")

    def least(counts: list[int]) -> int:
        """The least-loaded port of a group (the first of equals, in port order)."""
        return 0 if len(counts) == 1 else counts.index(min(counts))

    def upgoing(sw: str, prev: str | None, d: int, h: int) -> bool:
        created = has_hca[sw]  # a group towards HCAs counts as a route made
        groups = down_sw[sw]
        groups.sort(key=by_up)  # nearly sorted already: the sort is a pass (as OpenSM's bubble)
        for grp in groups[:]:
            if grp.remote == prev:
                continue
            remote = grp.remote
            known = hops[remote].get(d)
            if known is not None and h + 1 >= known:
                continue
            k = least(grp.port_up)
            lft[remote][d] = grp.remote_ports[k]
            hops[remote][d] = h + 1
            routed = upgoing(remote, None, d, h + 1)
            created |= routed
            if routed:
                grp.port_up[k] += 1
                grp.counter_up += 1
        return created

    def downgoing(sw: str, prev: str | None, d: int, main: bool, h: int) -> None:
        upgoing(sw, prev, d, h)
        if not up[sw]:
            return
        ordered = up[sw]
        ordered.sort(key=by_down)
        ordered = ordered[:]
        rest = ordered
        if main:
            grp = ordered[0]
            k = least(grp.port_down)
            grp.counter_down += 1
            grp.port_down[k] += 1
            remote = grp.remote
            known = hops[remote].get(d)
            if known is None or h + 1 < known:
                lft[remote][d] = grp.remote_ports[k]
                hops[remote][d] = h + 1
            downgoing(remote, sw, d, True, h + 1)
            rest = ordered[1:]
        for grp in rest:
            remote = grp.remote
            known = hops[remote].get(d)
            if known is not None and h + 1 >= known:
                continue
            k = least(grp.port_down)
            lft[remote][d] = grp.remote_ports[k]
            hops[remote][d] = h + 1
            downgoing(remote, sw, d, False, h + 1)

    leaves = sorted((g for g in switches if level[g] == 1), key=lambda g: index[g])
    cns: dict[str, list[tuple[int, int]]] = {}
    for leaf in leaves:
        cns[leaf] = sorted(
            (grp.local[0], topo.nodes[grp.remote].lid)
            for grp in down[leaf]
            if topo.nodes[grp.remote].kind == HCA and topo.nodes[grp.remote].lid is not None
        )
    widest = max((len(v) for v in cns.values()), default=0)
    dummy = 0
    for leaf in leaves:
        for port, lid in cns[leaf]:
            lft[leaf][lid] = port
            hops[leaf][lid] = 1
            downgoing(leaf, None, lid, True, 1)
        for _ in range(widest - len(cns[leaf])):
            dummy -= 1  # a stand-in LID: moves the counters, dropped below
            hops[leaf][dummy] = 1
            downgoing(leaf, None, dummy, True, 1)
    tables = _empty_tables(topo, "ftree")
    for sw, table in lft.items():
        tables.lfts[sw].update({lid: port for lid, port in table.items() if lid > 0})
    return tables


def updn(topo: Topology) -> Tables:
    """LFTs as OpenSM's updn engine (with a root GUID file) computes them."""
    level = levels_of(topo)
    groups = _groups(topo)
    switches = sorted(g for g, lv in level.items() if lv > 0)
    top = max((level[g] for g in switches), default=0)
    sw_groups = {
        sw: [g for g in groups.get(sw, {}).values() if topo.nodes[g.remote].kind == SWITCH]
        for sw in switches
    }
    rank: dict[str, int] = {}
    queue: deque[str] = deque(g for g in switches if level[g] == top)
    for g in queue:
        rank[g] = 0
    while queue:
        sw = queue.popleft()
        for grp in sw_groups[sw]:
            if grp.remote not in rank:
                rank[grp.remote] = rank[sw] + 1
                queue.append(grp.remote)
    ident = {sw: int(sw, 16) for sw in switches}

    def direction(cur: str, rem: str) -> str:
        rc, rr = rank.get(cur, 1 << 30), rank.get(rem, 1 << 30)
        if rc == 0 and rr == 0:
            return "up"
        if rc < rr:
            return "down"
        if rc > rr:
            return "up"
        return "up" if ident[cur] > ident[rem] else "down"

    # hop[sw][target switch] = {port: hops}; BFS from each target as updn_bfs_by_node does
    hop: dict[str, dict[str, dict[int, int]]] = {sw: {} for sw in switches}
    for target in switches:
        hop[target][target] = {0: 0}
        least = {target: 0}
        dirs = {target: "up"}
        todo: deque[str] = deque([target])
        queued = {target}
        while todo:
            u = todo.popleft()
            queued.discard(u)
            for grp in sw_groups[u]:
                r = grp.remote
                nxt = direction(u, r)
                if dirs[u] == "down" and nxt == "up":
                    continue
                cur = least[u]
                for port_r in grp.remote_ports:
                    have = hop[r].setdefault(target, {})
                    if cur + 1 < have.get(port_r, 1 << 30):
                        have[port_r] = cur + 1
                        if cur + 1 < least.get(r, 1 << 30):
                            least[r] = cur + 1
                        if r not in queued:
                            dirs[r] = nxt
                            queued.add(r)
                            todo.append(r)
    leaf_of: dict[str, tuple[str, int]] = {}  # HCA guid -> (its switch, that switch's port)
    for link in topo.links:
        for here, there in ((link.a, link.b), (link.b, link.a)):
            if topo.nodes[here.guid].kind == HCA and topo.nodes[there.guid].kind == SWITCH:
                leaf_of.setdefault(here.guid, (there.guid, there.port))
    tables = _empty_tables(topo, "updn")
    hcas = [n for n in topo.hcas() if n.lid is not None and n.guid in leaf_of]
    for sw in switches:
        paths: dict[int, int] = defaultdict(int)
        table = tables.lfts[sw]
        for node in hcas:  # port GUID order
            leaf, leaf_port = leaf_of[node.guid]
            if leaf == sw:
                table[node.lid] = leaf_port
                paths[leaf_port] += 1
                continue
            options = hop[sw].get(leaf)
            if not options:
                continue  # unreachable over up/down paths: no entry (a hole)
            best = min(options.values())
            port = min((p for p, h in options.items() if h == best), key=lambda p: (paths[p], p))
            table[node.lid] = port
            paths[port] += 1
    return tables


def compute(topo: Topology, engine: str) -> Tables:
    if engine == "ftree":
        return ftree(topo)
    if engine == "updn":
        return updn(topo)
    raise ValueError(f"unknown routing engine {engine!r}; known: {', '.join(ENGINES)}")
