"""Realistic test fabrics: 2- and 3-tier non-blocking fat trees of radix-R switches (NDR
QM9700: 64 ports), rail-optimised (HCA ``mlx5_r`` of every host on the rail-``r`` leaf of its
scalable unit), with injected faults, a wiring plan, a hosts map and a UFM event log.

Shape, for ``h = R/2`` (ports down = ports up on a leaf):

* leaves: ``h`` hosts per scalable unit, one leaf per rail per unit;
* 2 tiers: ``ceil(L/2)`` spines, every leaf's ``h`` uplinks spread over all spines (at most
  ``R`` leaves, 2,048 HCAs at R=64);
* 3 tiers: pods of ``h`` leaves and ``h`` spines (leaf uplink ``j`` to pod spine ``j``),
  spine ``j`` of every pod to core group ``j`` of ``ceil(P/2)`` cores. 4,096 HCAs at R=64 give
  128 leaves, 128 spines and 64 cores: 320 switches and 12,288 links, the cluster of issue 12.

Faults (``--fault``, repeatable): ``miscabling`` (two HCA cables swapped on a leaf, two
uplinks crossed between leaves), ``missing`` (a cable absent), ``degraded`` (a link at 1x,
one at HDR), ``renamed`` (a switch carries another name), ``disjoint`` (the plan error of
issue 12: each rail's leaves wired only to that rail's spines, so the "one fabric" is 8).
What was injected is returned (and written as ``faults.json``) so tests check the tools
against the truth.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.fabric import iblinkinfo, ibnetdiscover, lft, wiring
from racksmith.fabric.events import End, format_line, link_down_message
from racksmith.fabric.model import HCA, SWITCH, Link, Node, PortRef, Topology, port_label
from racksmith.fabric.wiring import PlanEnd, PlannedLink
from racksmith.lab import fabricroute

FAULTS = ("miscabling", "missing", "degraded", "renamed", "disjoint")
PLANES = 8


@dataclass
class Fabric:
    topology: Topology
    plan: list[PlannedLink]
    hosts: dict[str, list[str]]
    faults: list[dict] = field(default_factory=list)
    locations: dict[str, str] = field(default_factory=dict)


@dataclass
class _Sw:
    name: str
    guid: str
    location: str
    used: int = 0

    def take(self) -> int:
        self.used += 1
        return self.used


def generate(
    hcas: int,
    tiers: int,
    seed: int = 0,
    faults: tuple[str, ...] = (),
    radix: int = 64,
    hcas_per_host: int = 8,
    dead_links: int = 0,
) -> Fabric:
    """Build a fat tree and its plan; see the module docstring. ``dead_links`` inter-switch
    links are cabled (in the plan) but down (absent from the topology), as a subnet manager
    finds them and routes around them."""
    if tiers not in (2, 3):
        raise UsageError(f"--tiers must be 2 or 3, not {tiers}")
    if radix < 4 or radix % 2:
        raise UsageError(f"--radix must be an even number >= 4, not {radix}")
    if hcas < 2 or hcas > 65536:
        raise UsageError(f"--hcas must be between 2 and 65536, not {hcas}")
    for fault in faults:
        if fault not in FAULTS:
            raise UsageError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    rng = random.Random(seed)  # noqa: S311 (test data, not secrets)
    h = radix // 2
    rails = max(1, min(hcas_per_host, hcas))
    hosts = math.ceil(hcas / rails)
    units = math.ceil(hosts / h)
    n_leaves = units * rails
    if tiers == 2 and n_leaves > radix:
        raise UsageError(
            f"a 2-tier tree of radix {radix} holds {radix * h} HCAs at most "
            f"({n_leaves} leaves needed); use --tiers 3"
        )
    oui = rng.getrandbits(16)
    sw_n = 0

    def switch(prefix: str, index: int, location: str) -> _Sw:
        nonlocal sw_n
        sw_n += 1
        return _Sw(f"ib-{prefix}-{index:03d}", f"fc6a1c03{oui:04x}{sw_n:04x}", location)

    leaves = [
        switch("leaf", i + 1, f"R{100 + i // 2}-U{41 + 2 * (i % 2)}") for i in range(n_leaves)
    ]
    disjoint = "disjoint" in faults
    cables: list[tuple[_Sw | str, int, _Sw | str, int]] = []
    host_guids: dict[str, list[str]] = {}
    hca_loc: dict[str, str] = {}
    for i in range(hcas):
        host, rail = divmod(i, rails)
        unit, slot = divmod(host, h)
        name = f"gpu{host + 1:04d}"
        guid = f"e09d7303{oui:04x}{i + 1:04x}"
        host_guids.setdefault(name, []).append(guid)
        hca = f"{name} mlx5_{rail}"
        hca_loc[hca] = f"R{1 + host // 4:03d}-U{2 + 8 * (host % 4):02d}"
        leaf = leaves[unit * rails + rail]
        cables.append((leaf, slot + 1, hca, 1))
        leaf.used = max(leaf.used, slot + 1)
    for leaf in leaves:
        leaf.used = h  # uplinks start at port h+1 whatever the population
    uppers: list[_Sw] = []
    if tiers == 2:
        spines = [
            switch("spine", i + 1, f"N{10 + i // 8}-U{2 + 2 * (i % 8)}")
            for i in range(max(1, math.ceil(n_leaves / 2)))
        ]
        planes = min(PLANES, len(spines))
        for li, leaf in enumerate(leaves):
            ok = [s for si, s in enumerate(spines) if not disjoint or si % planes == li % planes]
            for j in range(h):
                spine = ok[j % len(ok)]
                cables.append((leaf, leaf.take(), spine, spine.take()))
        uppers = spines
    else:
        pods = math.ceil(n_leaves / h)
        if pods < 2:
            raise UsageError(
                f"{hcas} HCAs fill one pod of a radix-{radix} 3-tier tree: no traffic would "
                "cross its core tier; use --tiers 2 (or more HCAs)"
            )
        group = max(1, math.ceil(pods / 2))
        aggs = [
            [switch("spine", p * h + j + 1, f"N{10 + p}-U{2 + j}") for j in range(h)]
            for p in range(pods)
        ]
        cores = [
            [
                switch("core", j * group + g + 1, f"C{10 + j // 8}-U{2 + 4 * (j % 8) + g}")
                for g in range(group)
            ]
            for j in range(h)
        ]
        planes = min(PLANES, h)
        for li, leaf in enumerate(leaves):
            pod = aggs[li // h]
            ok = [a for ai, a in enumerate(pod) if not disjoint or ai % planes == li % planes]
            for j in range(h):
                agg = ok[j % len(ok)]
                cables.append((leaf, leaf.take(), agg, agg.take()))
        for pod in aggs:
            for j, agg in enumerate(pod):
                for u in range(h):
                    core = cores[j][u % group]
                    cables.append((agg, agg.take(), core, core.take()))
        uppers = [a for pod in aggs for a in pod] + [c for grp in cores for c in grp]
    switches = leaves + uppers
    locations = {s.name: s.location for s in switches} | hca_loc
    plan = [
        PlannedLink(
            PlanEnd(_name(a), pa, locations[_name(a)]),
            PlanEnd(_name(b), pb, locations[_name(b)]),
            4,
            "NDR",
            line=i + 2,
        )
        for i, (a, pa, b, pb) in enumerate(cables)
    ]
    fabric = Fabric(Topology(source="generated"), plan, host_guids, locations=locations)
    built = [[a, pa, b, pb, 4, "NDR"] for a, pa, b, pb in cables]
    if disjoint:
        fabric.faults.append({"kind": "disjoint", "networks": planes})
    _inject(fabric, built, leaves, faults, rng, h)
    _build_topology(fabric, built, switches, host_guids, radix)
    if dead_links:
        _kill(fabric, dead_links, rng)
    return fabric


def _kill(fabric: Fabric, count: int, rng: random.Random) -> None:
    """Take ``count`` inter-switch links down: the topology loses them (ibnetdiscover does not
    see a dead link), the plan keeps them, ``faults`` names them."""
    topo = fabric.topology
    inter = [
        i
        for i, link in enumerate(topo.links)
        if topo.nodes[link.a.guid].kind == SWITCH and topo.nodes[link.b.guid].kind == SWITCH
    ]
    if count > len(inter):
        raise UsageError(f"--dead-links {count}: the fabric has {len(inter)} inter-switch links")
    dead = set(rng.sample(inter, count))
    alive = Topology(source=topo.source)
    for node in topo.nodes.values():
        alive.add_node(node)
    for i, link in enumerate(topo.links):
        if i in dead:
            fabric.faults.append(
                {"kind": "dead", "link": f"{topo.describe(link.a)} - {topo.describe(link.b)}"}
            )
        else:
            alive.add_link(link)
    fabric.topology = alive


def _row_name(row: list) -> str:
    return f"{_name(row[0])}/{row[1]} - {_name(row[2])}/{row[3]}"


def _name(x: _Sw | str) -> str:
    return x if isinstance(x, str) else x.name


def _inject(
    fabric: Fabric, built: list[list], leaves: list[_Sw], faults, rng: random.Random, h: int
) -> None:
    """Break the as-built cabling (``built`` rows: a, port, b, port, width, speed) and record
    each fault in ``fabric.faults``. Faults touch different switches, so each one shows up
    in the cabling check as exactly the finding it is."""
    hca_rows = [i for i, c in enumerate(built) if isinstance(c[2], str)]
    up_rows = [i for i, c in enumerate(built) if not isinstance(c[2], str)]
    leaf_up = [i for i in up_rows if built[i][0] in leaves]
    truth = fabric.faults
    touched: set[str] = set()  # switches a miscabling fault already involves

    def free(rows: list[int]) -> list[int]:
        return [
            i
            for i in rows
            if built[i] is not None and not {_name(built[i][0]), _name(built[i][2])} & touched
        ]

    if "miscabling" in faults:
        by_leaf: dict[str, list[int]] = {}
        for i in hca_rows:
            by_leaf.setdefault(built[i][0].name, []).append(i)
        candidates = sorted(k for k, v in by_leaf.items() if len(v) >= 2)
        if candidates:
            i, j = rng.sample(by_leaf[rng.choice(candidates)], 2)
            built[i][2], built[j][2] = built[j][2], built[i][2]
            touched.add(built[i][0].name)
            hosts = sorted({built[i][2].split()[0], built[j][2].split()[0]})
            ports = sorted([built[i][1], built[j][1]])
            truth.append(
                {"kind": "swapped", "switch": built[i][0].name, "ports": ports, "hosts": hosts}
            )
        ups = free(leaf_up)
        for _ in range(1000):  # two uplinks of different leaves to different spines
            if len(ups) < 2:
                break
            i, j = rng.sample(ups, 2)
            a, b = built[i], built[j]
            if a[0] is b[0] or a[2] is b[2]:
                continue
            a[2], a[3], b[2], b[3] = b[2], b[3], a[2], a[3]
            touched.update({a[0].name, b[0].name, a[2].name, b[2].name})
            ports = sorted([f"{a[0].name}/{a[1]}", f"{b[0].name}/{b[1]}"])
            truth.append({"kind": "miscabled", "ports": ports})
            break
    if "missing" in faults:
        for rows in (up_rows, hca_rows):
            left = free(rows)
            if left:
                i = rng.choice(left)
                truth.append({"kind": "missing", "link": _row_name(built[i])})
                built[i] = None
    if "degraded" in faults:
        left = free(up_rows)
        for width, speed in ((1, "NDR"), (4, "HDR")):
            if left:
                i = left.pop(rng.randrange(len(left)))
                built[i][4], built[i][5] = width, speed
                link = _row_name(built[i])
                truth.append({"kind": "degraded", "link": link, "width": width, "speed": speed})
    if "renamed" in faults:
        leaf = rng.choice(leaves)
        new = leaf.name.replace("ib-leaf", "leaf-old")
        truth.append(
            {"kind": "renamed", "planned": leaf.name, "actual": new, "location": leaf.location}
        )
        leaf.name = new
    built[:] = [c for c in built if c is not None]


def _build_topology(
    fabric: Fabric,
    built: list[list],
    switches: list[_Sw],
    host_guids: dict[str, list[str]],
    radix: int,
) -> None:
    topo = fabric.topology
    lid = 0
    for sw in switches:
        lid += 1
        topo.add_node(Node(sw.guid, SWITCH, f"MF0;{sw.name}:MQM9790/U1", max(radix, sw.used), lid))
    hca_guid = {}
    for host, guids in host_guids.items():
        for rail, guid in enumerate(guids):
            lid += 1
            hca_guid[f"{host} mlx5_{rail}"] = guid
            topo.add_node(Node(guid, HCA, f"{host} mlx5_{rail}", 1, lid))
    for a, pa, b, pb, width, speed in built:
        ga = a.guid
        gb = hca_guid[b] if isinstance(b, str) else b.guid
        topo.add_link(Link(PortRef(ga, pa), PortRef(gb, pb), width, speed))


def _unhealthy(peer: End, why: str) -> str:
    where = f"{peer.name}:{port_label(peer.port)}"
    return f"Peer Port {where} is considered by SM as unhealthy due to {why}."


def event_log(
    fabric: Fabric,
    lines: int,
    seed: int = 0,
    bad_links: int | None = None,
    start: datetime.datetime | None = None,
) -> tuple[list[str], list[dict]]:
    """A UFM event.log of about ``lines`` lines over the fabric, and the truth: the bad links.

    Background churn uses ignored codes (link up, GID in/out of service, multicast groups,
    node up/down, CPU reports); one switch reboot makes a storm of link-down/up events in
    half a second (to be dropped); bad links get flapping (329 x3 and 702 FLAPPING), symbol
    errors (110), BER (917), link-downed counters (112) or receive errors (113); one port
    has a ``MANUAL`` unhealthy mark (to be skipped). Inter-event gaps average 0.5 s.
    """
    rng = random.Random(seed ^ 0x5EED)  # noqa: S311
    topo = fabric.topology
    when = start or datetime.datetime(2026, 11, 20, 0, 0, 0)
    sw_links = [
        link
        for link in topo.links
        if topo.nodes[link.a.guid].kind == SWITCH and topo.nodes[link.b.guid].kind == SWITCH
    ]
    host_links = [
        link
        for link in topo.links
        if HCA in (topo.nodes[link.a.guid].kind, topo.nodes[link.b.guid].kind)
    ]

    def end(ref: PortRef) -> End:
        node = topo.nodes[ref.guid]
        return End("Switch" if node.kind == SWITCH else "Computer", node.name, ref.port, node.guid)

    def oriented(link: Link) -> tuple[End, End]:
        a, b = end(link.a), end(link.b)
        return (a, b) if a.is_switch else (b, a)

    n_bad = bad_links if bad_links is not None else max(3, min(40, len(topo.links) // 100))
    bad = rng.sample(sw_links, min(len(sw_links), n_bad - 1)) + rng.sample(host_links, 1)
    kinds = ["flap", "symbol", "ber", "downed", "rcv"]
    scripted: list[tuple[float, int, str, End | None, str]] = []  # (offset, code, level, end, msg)
    span = max(600.0, lines * 0.5)
    truth = []
    for k, link in enumerate(bad):
        kind = kinds[k % len(kinds)]
        a, b = oriented(link)
        t = rng.uniform(0.35, 0.9) * span  # clear of the storm at 0.3
        truth.append({"link": f"{a} - {b}", "kind": kind, "ends": [str(a), str(b)]})
        if kind == "flap":
            for n in range(3):
                scripted.append(
                    (
                        t + 40 * n,
                        329,
                        "WARNING",
                        a,
                        link_down_message(a, b, f"MT23{rng.randrange(10**8):08d}"),
                    )
                )
                scripted.append((t + 40 * n + 5, 328, "INFO", a, "Link went up"))
            if b.is_switch:
                scripted.append(
                    (
                        t + 130,
                        702,
                        "WARNING",
                        a,
                        _unhealthy(b, "FLAPPING"),
                    )
                )
        elif kind == "symbol":
            scripted.append(
                (t, 110, "WARNING", a, "Symbol error counter rate is 14.0 per 1 min, threshold 1.0")
            )
        elif kind == "ber":
            scripted.append(
                (t, 917, "CRITICAL", a, "Symbol BER value 2.1e-10 exceeded threshold 1e-12")
            )
        elif kind == "downed":
            scripted.append((t, 112, "WARNING", a, "Link downed counter delta is 2, threshold 0"))
        else:
            scripted.append((t, 113, "WARNING", a, "Port receive errors delta is 25, threshold 5"))
    manual = rng.choice(sw_links)
    ma, mb = oriented(manual)
    scripted.append(
        (
            span * 0.5,
            702,
            "INFO",
            ma,
            _unhealthy(mb, "MANUAL"),
        )
    )
    scripted.append((span * 0.6, 907, "CRITICAL", None, "Switch is down"))
    # a reboot storm: 120 link events within half a second
    storm_t = span * 0.3
    for n in range(120):
        link = sw_links[n % len(sw_links)]
        a, b = oriented(link)
        code = 329 if n % 2 == 0 else 328
        msg = link_down_message(a, b, "MT0000000000") if code == 329 else "Link went up"
        scripted.append((storm_t + n * 0.004, code, "WARNING", a, msg))
    noise = max(0, lines - len(scripted))
    noise_codes = [
        (328, "INFO", "Link went up"),
        (64, "INFO", "GID address out of service"),
        (65, "INFO", "GID address in service"),
        (66, "INFO", "MCast group created"),
        (527, "INFO", "UFM CPU usage is 12%"),
        (332, "INFO", "Node is up"),
        (517, "INFO", "Fabric health report"),
    ]
    offsets = sorted(rng.uniform(0, span) for _ in range(noise))
    # keep background events out of the storm's second so it stays a clean test of bursts
    offsets = [o if not (storm_t - 1.5 < o < storm_t + 1.5) else o + 3.0 for o in offsets]
    events = list(scripted)
    rnd = rng.random
    switch_ends = [oriented(link)[0] for link in sw_links]
    nl = len(switch_ends)
    for o in offsets:
        code, level, msg = noise_codes[int(rnd() * len(noise_codes))]
        events.append((o, code, level, switch_ends[int(rnd() * nl)], msg))
    events.sort(key=lambda e: e[0])
    out = []
    for n, (offset, code, level, where, msg) in enumerate(events, 1):
        out.append(
            format_line(n, when + datetime.timedelta(seconds=offset), code, level, where, msg)
        )
    return out, truth


# --- ``racksmith lab fabric``: write a generated fabric as the tools would dump it ---------


def run(args: argparse.Namespace) -> int:
    fabric = generate(
        args.hcas,
        args.tiers,
        args.seed,
        tuple(args.fault or ()),
        args.radix,
        args.hcas_per_host,
        dead_links=_dead_count(args.dead_links),
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "ibnetdiscover.txt": ibnetdiscover.render(fabric.topology),
        "iblinkinfo.txt": iblinkinfo.render_line_form(fabric.topology),
        "plan.csv": wiring.render(fabric.plan),
        "hosts.json": json.dumps(fabric.hosts, indent=1) + "\n",
    }
    if args.routing != "none":
        tables = fabricroute.compute(fabric.topology, args.routing)
        files["lfts.txt"] = lft.render_ibroute(tables, fabric.topology)
        files["ibdiagnet2.fdbs"] = lft.render_fdbs(tables)
    lines, bad = event_log(fabric, args.events, args.seed)
    files["event.log"] = "\n".join(lines) + "\n"
    truth = {"faults": fabric.faults, "bad_links": bad, "seed": args.seed, "routing": args.routing}
    files["faults.json"] = json.dumps(truth, indent=1) + "\n"
    for name, text in files.items():
        (out / name).write_text(text)
    summary = {
        "out": str(out),
        "hcas": len(fabric.topology.hcas()),
        "switches": len(fabric.topology.switches()),
        "links": len(fabric.topology.links),
        "event_lines": len(lines),
        "routing": args.routing,
        "faults": [f["kind"] for f in fabric.faults],
        "files": sorted(files),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"wrote {out}: {summary['switches']} switches, {summary['hcas']} HCAs, "
            f"{summary['links']} links, {len(lines)} event lines, routing {args.routing}"
            + (f"; faults: {', '.join(sorted(set(summary['faults'])))}" if fabric.faults else "")
        )
    return 0


def _dead_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--dead-links must be a count, not {text!r}") from None
    if value < 0:
        raise UsageError(f"--dead-links must be 0 or more, not {value}")
    return value


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Write a generated 2- or 3-tier fat tree (ibnetdiscover, iblinkinfo, wiring plan, "
        "hosts map, UFM event.log) with optional faults and the forwarding tables an SM "
        "would program (dump_lfts.sh and ibdiagnet2.fdbs forms)."
    )
    parser.add_argument("--hcas", type=int, required=True, metavar="N")
    parser.add_argument("--tiers", type=int, choices=(2, 3), required=True)
    parser.add_argument(
        "--fault",
        action="append",
        choices=FAULTS,
        metavar="KIND",
        help=f"inject a fault (repeatable): {', '.join(FAULTS)}",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--radix", type=int, default=64, help="switch ports (default 64, QM9700)")
    parser.add_argument("--hcas-per-host", type=int, default=8, metavar="K")
    parser.add_argument(
        "--routing",
        choices=(*fabricroute.ENGINES, "none"),
        default="ftree",
        help="routing engine whose tables to write (default ftree)",
    )
    parser.add_argument(
        "--dead-links",
        default="0",
        metavar="N",
        help="inter-switch links down (in the plan, not in the fabric; routed around)",
    )
    parser.add_argument(
        "--events", type=int, default=2000, metavar="LINES", help="event.log size (default 2000)"
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=run)
