"""The burn-in planned on the fabric's real (table) paths: a plan made the old way loses
coverage on ftree tables, the new one keeps 100 %; every stage is valid on traced paths; the
lower bound; links no route uses; adaptive routing; the data-counter load check."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from racksmith import cli
from racksmith.fabric import burnin, counters, pathplan, routes
from racksmith.lab import fabricgen, fabricroute


def _assert_valid(topo, tables, plan):
    router = routes.Router(topo, tables)
    for pairs in plan.stages:
        hcas = Counter(g for p in pairs for g in (p.client, p.server))
        assert max(hcas.values()) == 1  # no HCA twice in a stage
        directed = Counter(e for p in pairs for e in p.forward + p.back)
        assert max(directed.values()) == 1  # no link direction carries two flows
        for p in pairs:  # the paths are the tables' paths, both ways
            assert p.forward == router.path(p.client, p.server)
            assert p.back == router.path(p.server, p.client)


@pytest.fixture(scope="module")
def ftree_fabric():
    topo = fabricgen.generate(64, 3, seed=1, radix=8, hcas_per_host=4).topology
    return topo, fabricroute.ftree(topo)


def test_old_plan_loses_coverage_on_ftree_tables_the_new_one_keeps_all(ftree_fabric):
    topo, tables = ftree_fabric
    old = burnin.plan(topo, seed=1)
    assert old.coverage == 1.0 and len(old.stages) == 1  # what the old planner claims...
    real = pathplan.replay(topo, tables, old.stages)
    assert real.coverage < 0.8 and real.overloaded > 0  # ...and what the tables make of it
    new = pathplan.plan(topo, tables, seed=1)
    _assert_valid(topo, tables, new)
    assert new.coverage == 1.0 and new.covered_hca == new.hca_links == 64
    assert new.uncovered == [] and new.unusable == []
    again = pathplan.replay(topo, tables, new.stages)  # replaying it agrees with the planner
    assert again.coverage == 1.0 and again.overloaded == 0
    assert new.lower_bound == 1 == len(new.stages)  # the half-shift pairing fits in one


def test_with_dead_links_every_link_a_route_uses_is_covered():
    fabric = fabricgen.generate(128, 3, seed=3, radix=16, hcas_per_host=8, dead_links=4)
    topo = fabric.topology
    tables = fabricroute.ftree(topo)
    plan = pathplan.plan(topo, tables, seed=2)
    _assert_valid(topo, tables, plan)
    unusable_links = {e // 2 for e in plan.unusable}
    assert set(plan.uncovered) == unusable_links  # only what no route uses is left out
    assert plan.covered_inter_switch == plan.inter_switch_links - len(unusable_links)
    assert plan.covered_hca == plan.hca_links


def test_updn_leaves_aliased_uplinks_idle_and_the_plan_says_so():
    topo = fabricgen.generate(64, 3, seed=1, radix=8, hcas_per_host=4).topology
    tables = fabricroute.updn(topo)
    plan = pathplan.plan(topo, tables, seed=1)
    _assert_valid(topo, tables, plan)
    assert plan.unusable and plan.coverage < 1.0
    assert set(plan.uncovered) == {e // 2 for e in plan.unusable}


def test_lower_bound_on_real_paths_for_a_partly_filled_tree():
    topo = fabricgen.generate(60, 3, seed=2, radix=8, hcas_per_host=4).topology
    tables = fabricroute.ftree(topo)
    plan = pathplan.plan(topo, tables, seed=1)
    _assert_valid(topo, tables, plan)
    # the last unit's leaves hold 3 HCAs under 4 uplinks: one stage cannot load them all
    assert plan.lower_bound == 2 <= len(plan.stages)


def test_adaptive_tables_say_what_the_plan_cannot_guarantee(ftree_fabric):
    topo, tables = ftree_fabric
    tables.adaptive = True
    try:
        plan = pathplan.plan(topo, tables, seed=1)
    finally:
        tables.adaptive = False
    assert plan.adaptive and any("not a guarantee" in g for g in plan.guarantees)
    assert any("--before --after" in g for g in plan.guarantees)


def test_cli_plans_on_the_generated_dumps(tmp_path, capsys):
    out = tmp_path / "fab"
    gen = ["lab", "fabric", "--hcas", "64", "--tiers", "3", "--radix", "8"]
    assert cli.main([*gen, "--hcas-per-host", "4", "--seed", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    for dump in ("lfts.txt", "ibdiagnet2.fdbs"):
        rc = cli.main(
            ["fabric", "burnin", "--topology", str(out / "ibnetdiscover.txt"), "--routes",
             str(out / dump), "--json", "--out", str(tmp_path / dump)]
        )  # fmt: skip
        doc = json.loads(capsys.readouterr().out)
        assert rc == 0 and doc["coverage"]["fraction"] == 1.0
        assert doc["routes"]["source"].endswith(dump) and doc["routes"]["adaptive"] is False
        assert doc["stages"][0]["pairs"][0]["route"].count(" > ") >= 2
        assert (tmp_path / dump / "burnin.yml").is_file()
    rc = cli.main(["fabric", "burnin", "--topology", str(out / "ibnetdiscover.txt")])
    assert rc == 0 and "routes ASSUMED" in capsys.readouterr().out


def test_cli_reports_a_hole_in_the_tables(tmp_path, capsys):
    out = tmp_path / "fab"
    gen = ["lab", "fabric", "--hcas", "32", "--tiers", "2", "--radix", "8"]
    assert cli.main([*gen, "--hcas-per-host", "4", "--out", str(out)]) == 0
    lines = (out / "lfts.txt").read_text().splitlines()
    victim = next(
        i for i, line in enumerate(lines) if "Channel Adapter" in line and " 005 " in line
    )
    del lines[victim]
    count = next(i for i in range(victim, len(lines)) if "valid lids dumped" in lines[i])
    n = int(lines[count].split()[0])
    lines[count] = f"{n - 1} valid lids dumped "
    (out / "holed.txt").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    rc = cli.main(
        ["fabric", "burnin", "--topology", str(out / "ibnetdiscover.txt"), "--routes",
         str(out / "holed.txt")]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 1 and "ROUTE" in text and "(a hole)" in text


def test_data_counters_say_which_directions_the_burn_loaded(fixture_path):
    # recorded perfquery -x output parses, data counters included (64-bit)
    snap = counters.parse(fixture_path("recorded/perfquery-x-0x7cfe9003009ce5b0.txt").read_text())
    assert snap.counters[(1719, 1)]["PortXmitData"] == 36298026860928
    assert snap.counters[(1719, 1)]["SymbolErrorCounter"] == 0
    topo = fabricgen.generate(32, 2, seed=1, radix=8, hcas_per_host=4).topology
    ports = {}
    for link in topo.links:
        for end in (link.a, link.b):
            node = topo.nodes[end.guid]
            if node.lid is not None and node.kind == "switch":
                ports[(node.lid, end.port)] = {"PortXmitData": 10, "PortRcvData": 10}
    before = counters.parse(counters.render(ports), "before")
    grown = {k: {"PortXmitData": 10 + 10**9, "PortRcvData": 10 + 10**9} for k in ports}
    quiet = next(iter(sorted(ports)))
    grown[quiet] = {"PortXmitData": 11, "PortRcvData": 10 + 10**9}  # sent almost nothing
    after = counters.parse(counters.render(grown), "after")
    load = counters.load(before, after, topo, min_bytes=1e9)
    assert load.measured and len(load.idle) == 1 and not load.unmeasured
    assert len(load.loaded) == 2 * len(topo.links) - 1
    plain = counters.parse(fixture_path("perfquery-before.txt").read_text(), "b")
    assert not counters.load(plain, plain, topo).measured


def test_cli_lists_idle_link_directions_from_data_counters(tmp_path, capsys):
    out = tmp_path / "fab"
    gen = ["lab", "fabric", "--hcas", "32", "--tiers", "2", "--radix", "8"]
    assert cli.main([*gen, "--hcas-per-host", "4", "--out", str(out), "--routing", "none"]) == 0
    from racksmith.fabric import topology as topology_io

    topo = topology_io.load(out / "ibnetdiscover.txt")
    ports = {}
    for link in topo.links:
        for end in (link.a, link.b):
            node = topo.nodes[end.guid]
            if node.kind == "switch":
                ports[(node.lid, end.port)] = {
                    "SymbolErrorCounter": 0,
                    "LinkDownedCounter": 0,
                    "PortRcvErrors": 0,
                    "PortXmitData": 0,
                    "PortRcvData": 0,
                }
    (tmp_path / "before.txt").write_text(counters.render(ports))
    busy = {k: dict(v, PortXmitData=10**10, PortRcvData=10**10) for k, v in ports.items()}
    quiet = sorted(busy)[0]
    busy[quiet]["PortXmitData"] = 5  # this port sent (almost) nothing
    (tmp_path / "after.txt").write_text(counters.render(busy))
    capsys.readouterr()
    rc = cli.main(
        ["fabric", "burnin", "--topology", str(out / "ibnetdiscover.txt"), "--before",
         str(tmp_path / "before.txt"), "--after", str(tmp_path / "after.txt")]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 1
    idle = [line for line in text.splitlines() if line.strip().startswith("IDLE")]
    assert len(idle) == 1 and f"/{quiet[1]} -> " in idle[0]
