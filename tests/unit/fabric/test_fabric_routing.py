"""The lab's routing engines (ftree, updn) on trees small enough to check by hand, and the
tracer on their tables: every pair routes, minimally, and a dead link is routed around."""

from __future__ import annotations

from collections import defaultdict

import pytest

from racksmith.fabric import burnin, routes
from racksmith.lab import fabricgen, fabricroute


def _names(topo, path):
    out = []
    for e in path:
        link = topo.links[e // 2]
        out.append(topo.nodes[link.b.guid if e % 2 == 0 else link.a.guid].name)
    return out


def _hca(topo, name):
    return next(n for n in topo.hcas() if n.name == name)


@pytest.fixture(scope="module")
def two_tier():
    # radix 8, 4 rails: 8 hosts, 8 leaves (4 HCAs each on ports 1-4), 4 spines; leaf uplink
    # port 4+j goes to spine j. gpu0001..0004 sit on the rail leaves 1-4, gpu0005..8 on 5-8.
    return fabricgen.generate(32, 2, seed=1, radix=8, hcas_per_host=4).topology


def test_ftree_sends_the_hca_on_leaf_port_p_down_through_spine_p(two_tier):
    # Leaves are routed in index order; each leaf's HCAs in port order take the least-loaded
    # up group, ties to the lowest index: the HCA on port p is reached through spine p, and
    # every other leaf sends to it up to spine p.
    topo = two_tier
    router = routes.Router(topo, fabricroute.ftree(topo))
    src, dst = _hca(topo, "gpu0005 mlx5_0"), _hca(topo, "gpu0002 mlx5_0")  # dst: leaf-001 port 2
    assert _names(topo, router.path(src.guid, dst.guid)) == [
        "ib-leaf-005",
        "ib-spine-002",
        "ib-leaf-001",
        "gpu0002 mlx5_0",
    ]
    for host in range(1, 5):  # the four HCAs of leaf-001, ports 1..4
        dst = _hca(topo, f"gpu{host:04d} mlx5_0")
        others = [n for n in topo.hcas() if router.uplink(n.guid)[1] != router.uplink(dst.guid)[1]]
        assert len(others) == 28
        for src in others:
            path = _names(topo, router.path(src.guid, dst.guid))
            assert path[1:] == [f"ib-spine-{host:03d}", "ib-leaf-001", dst.name]


def test_updn_spreads_a_leafs_remote_destinations_round_robin(two_tier):
    # updn: among the least-hop ports (the 4 uplinks), the one with the fewest routes so far,
    # lowest port first; destinations in port-GUID order, the leaf's own HCAs excluded.
    topo = two_tier
    tables = fabricroute.updn(topo)
    leaf = next(n for n in topo.switches() if n.name == "ib-leaf-005")
    router = routes.Router(topo, tables)
    remote = [n for n in topo.hcas() if router.uplink(n.guid)[1] != leaf.guid]  # GUID order
    assert len(remote) == 28
    assert [tables.lfts[leaf.guid][n.lid] for n in remote] == [5 + k % 4 for k in range(28)]


def _levels_ok(topo, router, hcas):
    level = burnin.levels_of(topo)
    for a in hcas:
        for b in hcas:
            if a == b:
                continue
            path = router.path(a, b)
            peaks = [level[topo.links[e // 2].b.guid if e % 2 == 0 else topo.links[e // 2].a.guid]
                     for e in path]  # fmt: skip
            top = max(peaks)
            assert len(path) == 2 * top  # minimal: up to the lowest common level, then down


@pytest.mark.parametrize("engine", fabricroute.ENGINES)
def test_every_pair_routes_minimally_on_a_three_tier_tree(engine):
    topo = fabricgen.generate(64, 3, seed=1, radix=8, hcas_per_host=4).topology
    router = routes.Router(topo, fabricroute.compute(topo, engine))
    _levels_ok(topo, router, [n.guid for n in topo.hcas()])


def test_ftree_funnels_each_destination_through_one_top_switch():
    topo = fabricgen.generate(64, 3, seed=1, radix=8, hcas_per_host=4).topology
    level = burnin.levels_of(topo)
    router = routes.Router(topo, fabricroute.ftree(topo))
    tops: dict[str, set[str]] = defaultdict(set)
    hcas = [n.guid for n in topo.hcas()]
    for a in hcas:
        for b in hcas:
            if a != b:
                for e in router.path(a, b):
                    link = topo.links[e // 2]
                    far = link.b.guid if e % 2 == 0 else link.a.guid
                    if level[far] == 3:
                        tops[b].add(far)
    assert all(len(cores) == 1 for cores in tops.values())
    assert len(set().union(*tops.values())) == 8  # and destinations spread over all 8 cores


@pytest.mark.parametrize("engine", fabricroute.ENGINES)
def test_a_dead_link_is_routed_around(engine):
    fabric = fabricgen.generate(64, 3, seed=4, radix=8, hcas_per_host=4, dead_links=3)
    dead = [f["link"] for f in fabric.faults if f["kind"] == "dead"]
    assert len(dead) == 3 and len(fabric.topology.links) == 192 - 3
    router = routes.Router(fabric.topology, fabricroute.compute(fabric.topology, engine))
    _levels_ok(fabric.topology, router, [n.guid for n in fabric.topology.hcas()])


def test_tables_from_before_a_link_died_fail_naming_the_switch_and_port():
    whole = fabricgen.generate(64, 3, seed=4, radix=8, hcas_per_host=4)
    broken = fabricgen.generate(64, 3, seed=4, radix=8, hcas_per_host=4, dead_links=3)
    stale = fabricroute.ftree(whole.topology)
    router = routes.Router(broken.topology, stale)
    hcas = [n.guid for n in broken.topology.hcas()]
    errors = set()
    for a in hcas:
        for b in hcas:
            if a != b:
                try:
                    router.path(a, b)
                except routes.RouteError as exc:
                    errors.add(exc.detail.split(": ", 1)[1])
    assert errors and all("which has no link" in e and "switch ib-" in e for e in errors)
