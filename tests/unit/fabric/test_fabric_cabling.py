"""The cabling check on the hand-checked sample and on generated fabrics with injected faults
(the generator's own record of what it broke is the truth to compare with)."""

from __future__ import annotations

import pytest

from racksmith.fabric import cabling, hosts, iblinkinfo, ibnetdiscover, wiring
from racksmith.lab import fabricgen


def _check(fabric, owners=None):
    topo = ibnetdiscover.parse(ibnetdiscover.render(fabric.topology), "gen")
    plan = wiring.parse(wiring.render(fabric.plan), "plan")
    return cabling.check(topo, plan, owners)


def _kinds(report):
    return sorted(f.kind for f in report.findings)


def test_sample_with_hosts_map(fixture_text):
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    plan = wiring.parse(fixture_text("small-plan.csv"))
    report = cabling.check(topo, plan, hosts.parse(fixture_text("small-hosts.json")))
    assert not report.ok
    assert _kinds(report) == ["degraded", "missing", "swapped"]
    swapped = next(f for f in report.findings if f.kind == "swapped")
    assert "ib-leaf-01 ports 1 and 2 are swapped" in swapped.message
    assert swapped.hosts == ["node01", "node02"]
    missing = next(f for f in report.findings if f.kind == "missing")
    assert "ib-leaf-02/35" in missing.message and "ib-spine-01/5" in missing.message
    assert report.matching_links == 6 and report.fabric_networks == 1


def test_sample_without_hosts_map_cannot_place_factory_hca(fixture_text):
    topo = iblinkinfo.parse(fixture_text("small-iblinkinfo.txt"))
    report = cabling.check(topo, wiring.parse(fixture_text("small-plan.csv")))
    assert _kinds(report) == ["absent", "degraded", "extra", "missing", "swapped"]
    missing = next(f for f in report.findings if f.kind == "missing")
    assert "Down/Polling" in missing.message  # iblinkinfo saw the dead port


def test_hosts_map_names_a_miscabled_hca_by_service_tag():
    fabric = fabricgen.generate(32, 2, seed=4, radix=8, hcas_per_host=4)
    topo = fabric.topology
    # HCAs straight out of the box: factory descriptions; the plan uses service tags
    tags = {host: f"SVC{n:04d}" for n, host in enumerate(sorted(fabric.hosts))}
    for node in topo.hcas():
        node.description = "MT4129 ConnectX7 Mellanox Technologies"
    plan = [
        type(p)(
            type(p.a)(p.a.name, p.a.port, p.a.location),
            type(p.b)(_tag(p.b.name, tags), p.b.port, p.b.location),
            p.width,
            p.speed,
            p.line,
        )
        for p in fabric.plan
    ]
    # cross two HCA cables between two different hosts on one leaf
    leaf = topo.switches()[0]
    a, b = (topo.at(type(topo.links[0].a)(leaf.guid, port)) for port in (1, 2))
    a_hca, b_hca = (x.b if x.a.guid == leaf.guid else x.a for x in (a, b))
    for link, new in ((a, b_hca), (b, a_hca)):
        if link.a.guid == leaf.guid:
            link.b = new
        else:
            link.a = new
    topo._by_port.clear()
    for link in topo.links:
        topo._by_port[link.a] = topo._by_port[link.b] = link
    owners = hosts.parse(
        __import__("json").dumps({tags[h]: g for h, g in fabric.hosts.items()}), "hosts.json"
    )
    report = cabling.check(topo, wiring.parse(wiring.render(plan)), owners)
    swapped = [f for f in report.findings if f.kind == "swapped"]
    assert len(swapped) == 1 and _kinds(report) == ["swapped"]
    assert all(h.startswith("SVC") for h in swapped[0].hosts) and len(swapped[0].hosts) == 2
    bare = cabling.check(topo, wiring.parse(wiring.render(plan)))
    assert {f.kind for f in bare.findings} >= {"absent", "extra"}  # without the map: lost


def _tag(name, tags):
    host, _, dev = name.partition(" ")
    return f"{tags[host]} {dev}" if dev else name


def test_clean_generated_fabric_passes():
    for tiers, n in ((2, 32), (3, 64)):
        report = _check(fabricgen.generate(n, tiers, seed=1, radix=8, hcas_per_host=4))
        assert report.ok and report.findings == [] and report.fabric_networks == 1
        assert report.matching_links == report.planned_links == report.fabric_links


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_faults_are_found(seed):
    fabric = fabricgen.generate(
        64,
        3,
        seed=seed,
        radix=8,
        hcas_per_host=4,
        faults=("miscabling", "missing", "degraded", "renamed"),
    )
    report = _check(fabric)
    by_kind = {}
    for f in report.findings:
        by_kind.setdefault(f.kind, []).append(f)
    truth = {t["kind"]: [x for x in fabric.faults if x["kind"] == t["kind"]] for t in fabric.faults}
    swap = truth["swapped"][0]
    assert len(by_kind["swapped"]) == 1
    assert (
        f"{swap['switch']} ports {swap['ports'][0]} and {swap['ports'][1]}"
        in by_kind["swapped"][0].message
    )
    assert sorted(by_kind["swapped"][0].hosts) == swap["hosts"]
    crossed = truth["miscabled"][0]["ports"]
    assert len(by_kind["miscabled"]) == 2
    told = " ".join(f.message for f in by_kind["miscabled"])
    assert all(f"{p} reaches" in told or f"reaches {p};" in told for p in crossed), (crossed, told)
    missing = sorted(f.message for f in by_kind["missing"])
    for t in truth["missing"]:
        a, b = t["link"].split(" - ")
        assert any(a.split("/")[0] in m and b.split("/")[0] in m for m in missing), (t, missing)
    degraded = sorted(f.message for f in by_kind["degraded"])
    assert len(degraded) == 2
    assert any("1x NDR" in m for m in degraded) and any("4x HDR" in m for m in degraded)
    renamed = by_kind["renamed"][0]
    assert (
        truth["renamed"][0]["planned"] in renamed.message
        and truth["renamed"][0]["actual"] in renamed.message
    )
    assert renamed.severity == cabling.WARN
    assert "unknown" not in by_kind and "absent" not in by_kind  # the rename explained it


def test_the_eight_disjoint_networks_are_named_plainly():
    fabric = fabricgen.generate(128, 3, seed=5, radix=16, hcas_per_host=8, faults=("disjoint",))
    report = _check(fabric)
    splits = [f.message for f in report.findings if f.kind == "split"]
    assert report.fabric_networks == 8
    assert splits[0].startswith("the fabric is 8 disjoint networks, not one")
    assert "the wiring plan itself describes 8 disjoint networks" in splits[1]
    assert not report.ok
