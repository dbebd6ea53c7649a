"""The burn-in planner: stages of ``ib_write_bw`` pairs that together load every link.

Model. A pair is a bidirectional ``ib_write_bw`` between two HCAs along a *minimal* up/down
route: up from one HCA to the lowest switch where the two HCAs' subtrees meet, down to the
other. Within a stage every HCA is in at most one pair and every link carries at most one
pair, so a covered link runs at full line rate in both directions and nothing is
over-subscribed (and no HCA, hence no ``ib_write_bw`` port, is used twice). The routes are
the planner's own choice: a real fabric forwards by the subnet manager's tables, which pick
other minimal routes (on ftree tables this plan loads about two thirds of the links), so this
planner only sizes a burn-in when no tables are at hand; :mod:`racksmith.fabric.pathplan`
plans on the tables' real paths. The commands, play and counter script below serve both.

Lower bound. A switch ``s`` can send at most ``A(s)`` pairs up per stage, where ``A(leaf)``
is its HCA count and ``A(s) = sum over children c of min(links(c, s), A(c))``; its ``U(s)``
uplinks each need a pair, so no plan has fewer than ``max_s ceil(U(s) / A(s))`` stages
(and at least one). On a full non-blocking tree the bound is 1.

Assignment (one stage, bottom-up, like an edge colouring of each switch's links). Every HCA
starts a route. At each switch, level by level, the arriving routes are matched to uplinks,
uncovered links first (then links towards switches with uncovered uplinks, then a seeded
shuffle), as many as there are uplinks; the routes left at a switch are paired there, two
from different child subtrees (largest groups first), so each pair's route is minimal.
Routes that cannot be paired are dropped for the stage. Stages repeat until every
inter-switch link is covered or a stage adds nothing (then the uncovered links are listed:
the topology does not allow minimal routes over them, e.g. links between switches of one
tier). Deterministic for a given topology and seed.
"""

from __future__ import annotations

import heapq
import math
import random
import shlex
from collections import defaultdict, deque
from dataclasses import dataclass, field

from racksmith.fabric.hosts import HcaOwner
from racksmith.fabric.model import HCA, SWITCH, Link, Topology

MAX_STAGES = 64


@dataclass
class Pair:
    client: str  # HCA GUIDs
    server: str
    top: str  # switch where the route turns
    links: list[int]  # indices into Topology.links, client side up then server side down


class PlanFigures:
    """Coverage and stage ratio, the same for a plan on assumed routes (:class:`BurnPlan`) and
    one on the tables' traced paths (``pathplan.RoutedPlan``)."""

    stages: list
    lower_bound: int
    inter_switch_links: int
    covered_inter_switch: int

    @property
    def coverage(self) -> float:
        return (
            self.covered_inter_switch / self.inter_switch_links if self.inter_switch_links else 1.0
        )

    @property
    def ratio(self) -> float:
        return len(self.stages) / self.lower_bound if self.lower_bound else 0.0


@dataclass
class BurnPlan(PlanFigures):
    stages: list[list[Pair]]
    lower_bound: int
    inter_switch_links: int
    covered_inter_switch: int
    hca_links: int
    covered_hca: int
    uncovered: list[int]
    seed: int
    levels: dict[str, int] = field(default_factory=dict, repr=False)


def levels_of(topo: Topology) -> dict[str, int]:
    """HCAs are level 0; a switch's level is its hop distance to the nearest HCA."""
    level: dict[str, int] = {}
    queue: deque[str] = deque()
    for node in topo.hcas():
        level[node.guid] = 0
        queue.append(node.guid)
    nbrs = topo.neighbours()
    while queue:
        guid = queue.popleft()
        for _, peer in nbrs.get(guid, []):
            if peer not in level and topo.nodes[peer].kind == SWITCH:
                level[peer] = level[guid] + 1
                queue.append(peer)
    return level


def components(topo: Topology, members: set[str]) -> dict[str, str]:
    """guid -> a representative of its connected component, over links between ``members``
    only (union-find)."""
    parent = {g: g for g in members}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for link in topo.links:
        a, b = link.a.guid, link.b.guid
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    return {g: find(g) for g in parent}


def _groups(topo: Topology, level: dict[str, int], top: int) -> list[dict[str, int]]:
    """groups[k][guid]: connected component of ``guid`` among nodes of level <= k."""
    out: list[dict[str, int]] = []
    for k in range(top + 1):
        roots = components(topo, {g for g, lv in level.items() if lv <= k})
        ids: dict[str, int] = {}
        out.append({g: ids.setdefault(root, len(ids)) for g, root in roots.items()})
    return out


def plan(
    topo: Topology, seed: int = 0, max_stages: int = MAX_STAGES, attempts: int = 8
) -> BurnPlan:
    """Plan the burn-in of ``topo``; see the module docstring. Tries ``attempts`` seeded
    shuffles (derived from ``seed``) and keeps the plan with the fewest stages, stopping at
    the lower bound."""
    best: BurnPlan | None = None
    for attempt in range(max(1, attempts)):
        found = _plan_once(topo, random.Random(f"{seed}/{attempt}"), seed, max_stages)  # noqa: S311
        if best is None or (-found.covered_inter_switch, len(found.stages)) < (
            -best.covered_inter_switch,
            len(best.stages),
        ):
            best = found
        if len(best.stages) <= best.lower_bound and not best.uncovered:
            break
    assert best is not None
    return best


def _plan_once(topo: Topology, rng: random.Random, seed: int, max_stages: int) -> BurnPlan:
    level = levels_of(topo)
    top = max(level.values(), default=0)
    groups = _groups(topo, level, top)
    up: dict[str, list[int]] = defaultdict(list)  # switch/HCA -> links to the next level up
    inter: list[int] = []
    hca_links: list[int] = []
    for i, link in enumerate(topo.links):
        a, b = link.a.guid, link.b.guid
        if a not in level or b not in level:
            continue  # a part with no HCA at all: nothing can load it
        kinds = (topo.nodes[a].kind, topo.nodes[b].kind)
        if HCA in kinds:
            if kinds == (HCA, HCA):
                continue
            hca_links.append(i)
        else:
            inter.append(i)
        if level[a] + 1 == level[b]:
            up[a].append(i)
        elif level[b] + 1 == level[a]:
            up[b].append(i)
    for links in up.values():
        links.sort()
    lower = _lower_bound(topo, level, up)
    covered: set[int] = set()
    stages: list[list[Pair]] = []
    targets = set(inter) | set(hca_links)
    hcas = [n.guid for n in topo.hcas() if up.get(n.guid)]
    by_level: dict[int, list[str]] = defaultdict(list)
    for guid, lv in level.items():
        if lv > 0:
            by_level[lv].append(guid)
    for guids in by_level.values():
        guids.sort()
    while len(stages) < max_stages and (targets - covered):
        pairs = _stage(topo, level, groups, up, by_level, hcas, covered, rng)
        new = {i for p in pairs for i in p.links} - covered
        if not new:
            break
        covered |= new
        stages.append(pairs)
    inter_set = set(inter)
    return BurnPlan(
        stages=stages,
        lower_bound=lower,
        inter_switch_links=len(inter),
        covered_inter_switch=len(inter_set & covered),
        hca_links=len(hca_links),
        covered_hca=len(set(hca_links) & covered),
        uncovered=sorted(inter_set - covered),
        seed=seed,
        levels=level,
    )


def _lower_bound(topo: Topology, level: dict[str, int], up: dict[str, list[int]]) -> int:
    cap: dict[str, int] = {g: 1 for g, lv in level.items() if lv == 0}
    bound = 1
    # children of each switch with the number of parallel links from each
    below: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for child, links in up.items():
        for i in links:
            link = topo.links[i]
            parent = link.b.guid if link.a.guid == child else link.a.guid
            below[parent][child] += 1
    for guid in sorted(level, key=lambda g: level[g]):
        if level[guid] == 0:
            continue
        cap[guid] = sum(min(n, cap.get(child, 0)) for child, n in below[guid].items())
        ups = len(up.get(guid, ()))
        if ups and cap[guid]:
            bound = max(bound, math.ceil(ups / cap[guid]))
    return bound


def _stage(
    topo: Topology,
    level: dict[str, int],
    groups: list[dict[str, int]],
    up: dict[str, list[int]],
    by_level: dict[int, list[str]],
    hcas: list[str],
    covered: set[int],
    rng: random.Random,
) -> list[Pair]:
    # a route is (origin HCA, nodes visited, links taken); it ends at the switch it reached
    arrivals: dict[str, list[tuple[str, list[str], list[int]]]] = defaultdict(list)
    order = hcas[:]
    rng.shuffle(order)
    order.sort(key=lambda g: up[g][0] in covered)  # HCAs whose cable is unloaded first
    for hca in order:
        i = up[hca][0]
        link = topo.links[i]
        leaf = link.b.guid if link.a.guid == hca else link.a.guid
        arrivals[leaf].append((hca, [hca, leaf], [i]))
    need: dict[str, int] = {
        g: sum(1 for i in up.get(g, ()) if i not in covered) for lv in by_level.values() for g in lv
    }
    stay: dict[str, list] = defaultdict(list)
    for lv in sorted(by_level):  # upward: match arrivals to uplinks
        for sw in by_level[lv]:
            here = arrivals.pop(sw, [])
            links = up.get(sw, [])
            if not here or not links:
                stay[sw] += here
                continue
            keyed = []
            for i in links:
                link = topo.links[i]
                parent = link.b.guid if link.a.guid == sw else link.a.guid
                keyed.append((i in covered, -need.get(parent, 0), rng.random(), i, parent))
            keyed.sort()
            going = _pick_up(here, len(keyed), lv, groups, rng)
            stay[sw] += [r for k, r in enumerate(here) if k not in going]
            for (_, _, _, i, parent), k in zip(keyed, sorted(going), strict=False):
                origin, nodes, path = here[k]
                arrivals[parent].append((origin, [*nodes, parent], [*path, i]))
    pairs: list[Pair] = []
    for lv in sorted(by_level, reverse=True):  # downward: pair; leftovers step back one hop
        for sw in by_level[lv]:
            pool = stay.pop(sw, [])
            if not pool:
                continue
            made, left = _pair_at(sw, pool, lv, groups, rng, covered)
            pairs += made
            for origin, nodes, path in left:
                if lv > 1:
                    stay[nodes[-2]].append((origin, nodes[:-1], path[:-1]))
    return pairs


def _pick_up(
    here: list[tuple[str, str, list[int]]], slots: int, lv: int, groups: list[dict[str, int]], rng
) -> set[int]:
    """Which arrivals go up: all if they fit; else take from the biggest child groups first,
    so that those left behind are spread over groups and can pair here."""
    if len(here) <= slots:
        return set(range(len(here)))
    buckets: dict[int, list[int]] = defaultdict(list)
    g = groups[lv - 1]
    for k, (_, nodes, _) in enumerate(here):
        buckets[g[nodes[-2]]].append(k)
    heap = [(-len(v), key) for key, v in buckets.items()]
    heapq.heapify(heap)
    chosen: set[int] = set()
    while len(chosen) < slots and heap:
        n, key = heapq.heappop(heap)
        chosen.add(buckets[key].pop())
        if n + 1 < 0:
            heapq.heappush(heap, (n + 1, key))
    return chosen


def _pair_at(
    sw: str, stay: list, lv: int, groups: list[dict[str, int]], rng, covered: set[int]
) -> tuple[list[Pair], list]:
    """Pair routes ending at ``sw`` two by two from different child subtrees (largest
    groups first, which pairs the most; within a group, routes whose last link is still
    uncovered first); returns the pairs and the routes left over."""
    g = groups[lv - 1]
    buckets: dict[int, list] = defaultdict(list)
    for route in stay:
        buckets[g[route[1][-2]]].append(route)
    for routes in buckets.values():
        rng.shuffle(routes)
        routes.sort(key=lambda r: r[2][-1] not in covered)  # popped from the end

    def entry(key: int) -> tuple[int, bool, float, int]:
        # biggest group first; among equals, one whose next route still loads a new link
        routes = buckets[key]
        return (-len(routes), routes[-1][2][-1] in covered, rng.random(), key)

    heap = [entry(key) for key in sorted(buckets)]
    heapq.heapify(heap)
    out = []
    while len(heap) >= 2:
        k1, k2 = heapq.heappop(heap)[3], heapq.heappop(heap)[3]
        a, b = buckets[k1].pop(), buckets[k2].pop()
        out.append(Pair(a[0], b[0], sw, a[2] + b[2][::-1]))
        for k in (k1, k2):
            if buckets[k]:
                heapq.heappush(heap, entry(k))
    left = [r for routes in buckets.values() for r in routes]
    return out, left


# --- commands -------------------------------------------------------------------------------

BASE_PORT = 18515


@dataclass(frozen=True)
class Endpoint:
    host: str
    device: str
    gpu: int | None


def endpoints(
    topo: Topology, owners: dict[str, HcaOwner] | None = None, gdr: bool = True
) -> dict[str, Endpoint]:
    """HCA GUID -> (host, device, GPU for GPUDirect: the HCA's rank among its host's HCAs)."""
    owners = owners or {}
    named: dict[str, tuple[str, str]] = {}
    for node in topo.hcas():
        owner = owners.get(node.guid)
        if owner:
            named[node.guid] = (owner.host, owner.device)
        elif node.host and node.device:
            named[node.guid] = (node.host, node.device)
    per_host: dict[str, list[str]] = defaultdict(list)
    for host, device in named.values():
        per_host[host].append(device)
    rank = {}
    for host, devices in per_host.items():
        for k, dev in enumerate(sorted(devices, key=_devkey)):
            rank[(host, dev)] = k
    return {
        guid: Endpoint(host, dev, rank[(host, dev)] if gdr else None)
        for guid, (host, dev) in named.items()
    }


def _devkey(dev: str) -> tuple[str, int]:
    head = dev.rstrip("0123456789")
    tail = dev[len(head) :]
    return (head, int(tail) if tail else -1)


def server_ports(pairs: list[Pair], ends: dict[str, Endpoint]) -> list[int]:
    """The TCP port of each pair's server: BASE_PORT upwards, unique per server host within
    the stage (a host serves several of its HCAs at once)."""
    taken: dict[str, int] = defaultdict(int)
    out = []
    for pair in pairs:
        end = ends.get(pair.server)
        host = end.host if end else pair.server
        out.append(BASE_PORT + taken[host])
        taken[host] += 1
    return out


@dataclass
class Command:
    host: str
    role: str  # "server" | "client"
    argv: list[str]
    log: str


def stage_commands(
    pairs: list[Pair],
    ends: dict[str, Endpoint],
    stage: int,
    duration: int = 1800,
    size: int = 8388608,
) -> list[Command]:
    """Server and client command lines of one stage; server TCP ports unique per host."""
    out: list[Command] = []
    for pair, port in zip(pairs, server_ports(pairs, ends), strict=True):
        c, s = ends[pair.client], ends[pair.server]
        common = [
            "ib_write_bw",
            "-F",
            "--report_gbits",
            "-b",
            "-s",
            str(size),
            "--duration",
            str(duration),
            "-p",
            str(port),
        ]
        tag = f"s{stage:02d}-{c.host}-{c.device}-{s.host}-{s.device}"
        out.append(
            Command(
                s.host, "server", [*common, "-d", s.device, *_cuda(s)], f"ib-burn-{tag}-server.log"
            )
        )
        out.append(
            Command(
                c.host,
                "client",
                [*common, "-d", c.device, *_cuda(c), s.host],
                f"ib-burn-{tag}-client.log",
            )
        )
    return out


def _cuda(end: Endpoint) -> list[str]:
    return [f"--use_cuda={end.gpu}"] if end.gpu is not None else []


#: Extra seconds a stage may run past its ``--duration``: connection set-up and retries.
GRACE = 600


def host_script(
    host: str, commands: list[Command], stage: int, stages: int, seed: int, duration: int = 1800
) -> str:
    """The bash script one host runs for a stage: its servers, then its clients, then wait;
    exit 1 if any ``ib_write_bw`` failed (its log says why).

    Hosts start a stage seconds apart (Ansible reaches them in turn), so a client whose
    server is not listening yet (``Couldn't connect``) retries for up to five minutes; any
    other failure is final. Every command runs under ``timeout`` so a server whose client
    never came cannot hold the stage forever."""
    limit = duration + GRACE
    lines = [
        "#!/usr/bin/env bash",
        f"# racksmith fabric burn-in: stage {stage} of {stages}, host {host}, seed {seed}",
        "set -uo pipefail",
        'logs="${RACKSMITH_BURNIN_LOGS:-/var/tmp/racksmith-burnin}"',
        'mkdir -p "$logs"',
        "client() {  # LOG COMMAND...: retry while the server is not listening yet",
        '  local log="$1"',
        "  shift",
        "  for _ in $(seq 1 60); do",
        '    "$@" >"$log" 2>&1 && return 0',
        '    grep -q "Couldn\'t connect" "$log" || return 1',
        '    sleep "${RACKSMITH_BURNIN_RETRY_SECONDS:-5}"',
        "  done",
        "  return 1",
        "}",
        "pids=()",
    ]
    mine = [c for c in commands if c.host == host]
    for c in (c for c in mine if c.role == "server"):
        lines.append(f'timeout {limit} {shlex.join(c.argv)} >"$logs/{c.log}" 2>&1 &')
        lines.append('pids+=("$!")')
    for c in (c for c in mine if c.role == "client"):
        lines.append(f'client "$logs/{c.log}" timeout {limit} {shlex.join(c.argv)} &')
        lines.append('pids+=("$!")')
    lines += [
        "rc=0",
        'for pid in "${pids[@]}"; do wait "$pid" || rc=1; done',
        'exit "$rc"',
        "",
    ]
    return "\n".join(lines)


def play(stages: int, stage_hosts: list[list[str]], seed: int, duration: int = 1800) -> str:
    """An Ansible play: copy each host's stage scripts, then per stage start the script on
    every host of the stage at once (``async``, ``poll: 0``) and wait for all of them before
    the next stage. A host whose script failed fails its task; its logs say which test."""
    limit = duration + GRACE + 300
    out = [
        "---",
        f"# racksmith fabric burn-in: {stages} stages, seed {seed}. Run from this directory:",
        "#   ansible-playbook -i INVENTORY burnin.yml",
        "- name: InfiniBand burn-in",
        "  hosts: \"{{ burnin_hosts | default('all') }}\"",
        "  gather_facts: false",
        "  become: true",
        "  vars:",
        "    burnin_dir: /var/tmp/racksmith-burnin",
        "    burnin_stage_hosts:",
    ]
    for hosts in stage_hosts:
        out.append(f"      - [{', '.join(repr(h) for h in hosts)}]")
    out += [
        "  tasks:",
        "    - name: Make the burn-in directory",
        "      ansible.builtin.file:",
        '        path: "{{ burnin_dir }}"',
        "        state: directory",
        '        mode: "0755"',
        "    - name: Copy this host's stage scripts",
        "      ansible.builtin.copy:",
        "        src: \"stage-{{ '%02d' % (item + 1) }}/{{ inventory_hostname }}.sh\"",
        "        dest: \"{{ burnin_dir }}/stage-{{ '%02d' % (item + 1) }}.sh\"",
        '        mode: "0755"',
        '      loop: "{{ range(burnin_stage_hosts | length) | list }}"',
        "      when: inventory_hostname in burnin_stage_hosts[item]",
    ]
    for k in range(1, stages + 1):
        cond = f"      when: inventory_hostname in burnin_stage_hosts[{k - 1}]"
        out += [
            f"    - name: Start burn-in stage {k} of {stages}",
            f'      ansible.builtin.command: "{{{{ burnin_dir }}}}/stage-{k:02d}.sh"',
            f"      async: {limit}",
            "      poll: 0",
            "      register: burnin_job",
            "      changed_when: true",
            cond,
            f"    - name: Wait for burn-in stage {k} of {stages}",
            "      ansible.builtin.async_status:",
            '        jid: "{{ burnin_job.ansible_job_id }}"',
            "      register: burnin_result",
            "      until: burnin_result.finished",
            f"      retries: {limit // 30 + 1}",
            "      delay: 30",
            cond,
        ]
    return "\n".join(out) + "\n"


def counters_script(topo: Topology) -> str:
    """Reads every switch port's counters with ``perfquery -x LID PORT`` (64-bit data counters
    and the error counters); run before and after the burn (on any host of the fabric) and give
    both outputs to ``--before/--after``: errors are triaged, and the data counters say which
    link directions the burn really loaded (what adaptive routing decides at run time).
    A port that cannot be read leaves a marker line, so the diff fails closed."""
    lines = [
        "#!/usr/bin/env bash",
        "# racksmith fabric burn-in: switch port error counters",
        "set -u",
    ]
    seen = set()
    for link in topo.links:
        for end in (link.a, link.b):
            node = topo.nodes[end.guid]
            if node.kind == SWITCH and node.lid is not None and (node.lid, end.port) not in seen:
                seen.add((node.lid, end.port))
                where = f"{node.lid} {end.port}"
                failed = f"# perfquery failed: Lid {node.lid} port {end.port}"
                lines.append(f'perfquery -x {where} || echo "{failed}"')
    return "\n".join(lines) + "\n"


def route_text(topo: Topology, pair: Pair) -> str:
    names = [topo.nodes[pair.client].name]
    cur = pair.client
    for i in pair.links:
        link: Link = topo.links[i]
        cur = link.b.guid if link.a.guid == cur else link.a.guid
        names.append(topo.nodes[cur].name)
    return " > ".join(names)
