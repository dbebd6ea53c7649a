"""Forwarding-table dumps (recorded ibroute/ibnetdiscover output, an ibdiagnet2.fdbs excerpt,
the generator's own dumps) and tracing through them, with the ways a dump or a table fails."""

from __future__ import annotations

import pytest

from racksmith.fabric import ibnetdiscover, lft, routes, topology
from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import PortRef
from racksmith.lab import fabricgen, fabricroute

REC = "recorded/"


def test_recorded_ibsim_tables_trace_the_route_ibsim_reports(fixture_path):
    # ibnetdiscover and ibroute run against ibsim; ibsim's own "route 5 2" printed
    # Hca2[1] -> Switch2[1], Switch2[4] -> Switch1[3], Switch1[1] -> Hca1[1].
    topo = topology.load(fixture_path(REC + "ibsim-ibnetdiscover.txt"))
    tables = lft.load(fixture_path(REC + "ibsim-ibroute.txt"))
    assert tables.form == "ibroute" and not tables.adaptive
    assert {topo.nodes[g].name: t for g, t in tables.lfts.items()} == {
        "Switch1": {1: 0, 2: 1, 3: 3, 5: 3},
        "Switch2": {1: 4, 2: 4, 3: 0, 5: 1},
    }
    assert lft.check_against(tables, topo) == []
    hca = {n.name: n for n in topo.hcas()}
    assert (hca["Hca1"].lid, hca["Hca2"].lid) == (2, 5)  # from the Ca port lines
    router = routes.Router(topo, tables)
    hops = []
    for e in router.path(hca["Hca2"].guid, hca["Hca1"].guid):
        link = topo.links[e // 2]
        a, b = (link.a, link.b) if e % 2 == 0 else (link.b, link.a)
        hops.append((topo.describe(a), topo.describe(b)))
    assert hops == [("Hca2/1", "Switch2/1"), ("Switch2/4", "Switch1/3"), ("Switch1/1", "Hca1/1")]


def test_recorded_ibdiagnet_fdbs_excerpt(fixture_path):
    tables = lft.load(fixture_path(REC + "ibdiagnet2.fdbs-excerpt.txt"))
    assert tables.form == "ibdiagnet2.fdbs"
    table = tables.lfts["0002c9030068ec10"]
    assert len(table) == 10
    assert tables.port("0002c9030068ec10", 1) is None  # UNREACHABLE
    assert tables.port("0002c9030068ec10", 9) == 5 and tables.port("0002c9030068ec10", 4) == 1


def test_recorded_ibnetdiscover_ports_form(fixture_path):
    topo = topology.load(fixture_path(REC + "ibnetdiscover-p.txt"))
    names = {n.name: n for n in topo.nodes.values()}
    assert names["o0001 HCA-1"].lid == 134 and names["ib-i1l1s01"].lid == 1719
    assert len(topo.links) == 4  # each link reported from both ends, kept once
    assert {topo.describe(p) for p in topo.down_ports} == {"ib-i4l1s01/37", "ib-i7l2s01/80"}
    link = topo.at(PortRef(names["ib-i1l1s01"].guid, 1))
    assert link is not None and (link.width, link.speed) == (4, "EDR")


@pytest.mark.parametrize("form", ["ibroute", "fdbs"])
def test_generated_dumps_read_back_as_written(form):
    topo = fabricgen.generate(64, 3, seed=2, radix=8, hcas_per_host=4).topology
    tables = fabricroute.ftree(topo)
    text = lft.render_ibroute(tables, topo) if form == "ibroute" else lft.render_fdbs(tables)
    again = lft.parse(text, "dump")
    assert again.lfts == tables.lfts
    # and the topology, re-read from its ibnetdiscover text, keeps every HCA's LID
    reread = ibnetdiscover.parse(ibnetdiscover.render(topo), "t")
    assert {n.guid: n.lid for n in reread.hcas()} == {n.guid: n.lid for n in topo.hcas()}


def test_truncated_or_garbled_dumps_are_rejected_with_their_line(fixture_path):
    text = fixture_path(REC + "ibsim-ibroute.txt").read_text()
    cut = text.replace("0x0005 003 : (Channel Adapter portguid 0x0000000000100004: 'Hca2')\n", "")
    with pytest.raises(FabricInputError, match=r"4 lids dumped but 3 read"):
        lft.parse(cut, "cut")
    with pytest.raises(FabricInputError, match=r"bad:5: not an ibroute/dump_lfts line"):
        lft.parse(text.replace("0x0002 001", "0x0002 one"), "bad")
    with pytest.raises(FabricInputError, match=r"ends without its 'lids dumped' line"):
        lft.parse(text.rsplit("4 valid", 1)[0], "short")
    with pytest.raises(FabricInputError, match="no switch tables"):
        lft.parse("hello\n", "x")


def _ibsim(fixture_path, edit):
    topo = topology.load(fixture_path(REC + "ibsim-ibnetdiscover.txt"))
    tables = lft.load(fixture_path(REC + "ibsim-ibroute.txt"))
    by_name = {topo.nodes[g].name: g for g in tables.lfts}
    edit(tables.lfts, by_name)
    hca = {n.name: n.guid for n in topo.hcas()}
    return routes.Router(topo, tables), hca


def test_a_hole_a_loop_and_a_dead_port_fail_naming_the_switch(fixture_path):
    router, hca = _ibsim(fixture_path, lambda t, s: t[s["Switch2"]].pop(5))
    with pytest.raises(routes.RouteError, match=r"switch Switch2 has no route to LID 5 \(a hole\)"):
        router.path(hca["Hca1"], hca["Hca2"])

    def loop(t, s):
        t[s["Switch2"]][5] = 4  # back to Switch1, which sends LID 5 to Switch2 again

    router, hca = _ibsim(fixture_path, loop)
    with pytest.raises(routes.RouteError, match=r"loop \(Switch2 > Switch1 > Switch2"):
        router.path(hca["Hca1"], hca["Hca2"])
    router, hca = _ibsim(fixture_path, lambda t, s: t[s["Switch1"]].__setitem__(5, 7))
    with pytest.raises(routes.RouteError, match=r"Switch1 sends LID 5 out of port 7, which has no"):
        router.path(hca["Hca1"], hca["Hca2"])


def test_adaptive_routing_is_found_from_ibdiagnet2_ar(tmp_path, fixture_path):
    fdbs = tmp_path / "ibdiagnet2.fdbs"
    fdbs.write_text(fixture_path(REC + "ibdiagnet2.fdbs-excerpt.txt").read_text())
    assert not lft.load(fdbs).adaptive
    (tmp_path / "ibdiagnet2.ar").write_text("# AR\n")
    assert not lft.load(fdbs).adaptive  # comments only: nothing says a switch has AR on
    (tmp_path / "ibdiagnet2.ar").write_text("# AR\nSwitch 0x0002c9030068ec10\n")
    tables = lft.load(fdbs)
    assert tables.adaptive and "adaptive routing is on" in tables.notes[0]
    assert lft.load(fdbs, adaptive=False).adaptive is False


def test_opensm_lfts_dump_form_written_from_its_source():
    # OpenSM's opensm-lfts.dump, written from the format strings of dump_ucast_lfts() in
    # linux-rdma/opensm (no real file found): '#' comments, "N lids dumped" = the top LID
    text = (
        "Unicast lids [0-5] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):\n"
        "0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'\n"
        "0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'\n"
        "0x0005 003 # Channel Adapter portguid 0x0000000000100004: 'Hca2'\n"
        "5 lids dumped\n"
    )
    tables = lft.parse(text, "opensm-lfts.dump")
    assert tables.lfts == {"0000000000200000": {1: 0, 2: 1, 5: 3}}
