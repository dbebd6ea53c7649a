"""Topology, plan, hosts and event parsers: hand-checked samples, round trips, and bad input
reported with its line number."""

from __future__ import annotations

import pytest

from racksmith.fabric import events, hosts, iblinkinfo, ibnetdiscover, topology, wiring
from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import HCA, SWITCH, PortRef, port_from_label, port_label
from racksmith.lab import fabricgen

SW_A = 'Switch\t3 "S-0000000000000001"\t# "a"\n'


def _links(topo):
    out = set()
    for link in topo.links:
        a = (topo.nodes[link.a.guid].name, link.a.port)
        b = (topo.nodes[link.b.guid].name, link.b.port)
        out.add((*sorted((a, b)), link.width, link.speed))
    return out


def test_ibnetdiscover_sample(fixture_text):
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"), "small")
    assert len(topo.switches()) == 3 and len(topo.hcas()) == 4
    assert len(topo.links) == 8  # every link is listed from both ends, kept once
    spine = topo.nodes["b8599f0300000100"]
    assert (spine.kind, spine.name, spine.lid, spine.ports) == (SWITCH, "ib-spine-01", 1, 65)
    degraded = topo.at(PortRef("b8599f0300000201", 34))
    assert (degraded.width, degraded.speed) == (2, "NDR")
    factory = topo.nodes["e09d730300001004"]
    assert factory.kind == HCA and factory.host is None
    assert topo.nodes["e09d730300001001"].host == "node01"
    assert topo.nodes["e09d730300001001"].device == "mlx5_0"


def test_iblinkinfo_default_form_matches_ibnetdiscover(fixture_text):
    a = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    b = iblinkinfo.parse(fixture_text("small-iblinkinfo.txt"))
    assert _links(a) == _links(b)
    assert sorted((b.nodes[p.guid].name, p.port) for p in b.down_ports) == [
        ("ib-leaf-02", 35),
        ("ib-spine-01", 5),
    ]
    assert {n.name for n in b.switches()} == {"ib-spine-01", "ib-leaf-01", "ib-leaf-02"}


def test_generated_round_trips_through_both_formats():
    fabric = fabricgen.generate(64, 3, seed=2, radix=8, hcas_per_host=4, faults=("degraded",))
    text = ibnetdiscover.render(fabric.topology)
    back = topology.parse(text, "gen")
    assert _links(back) == _links(fabric.topology)
    line_form = topology.parse(iblinkinfo.render_line_form(back), "gen-line")
    assert _links(line_form) == _links(back)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            'Switch\t3 "S-0000000000000001"\t# "sw" enhanced port 0 lid 1\nnonsense here\n',
            2,
            "not an ibnetdiscover",
        ),
        ('[1]\t"S-0000000000000002"[1]\t# "x" lid 2 4xNDR\n', 1, "before any Switch"),
        (
            SW_A + '[1]\t"S-0000000000000002"[1]\t# "b" lid 2 4xNDR\n'
            'Switch\t3 "S-0000000000000002"\t# "b"\n'
            '[1]\t"S-0000000000000003"[1]\t# "c" lid 3 4xNDR\n',
            4,
            "contradicts line 2",
        ),
        (
            SW_A + '[1]\t"S-0000000000000002"[1]\t# "b" lid 2 4xQQQ\n',
            2,
            "unknown link speed",
        ),
    ],
)
def test_ibnetdiscover_bad_lines_are_named(text, line, words):
    with pytest.raises(FabricInputError) as err:
        ibnetdiscover.parse(text, "topo.txt")
    assert err.value.line == line and words in str(err.value)
    assert str(err.value).startswith(f"topo.txt:{line}:")


def test_iblinkinfo_errors():
    with pytest.raises(FabricInputError, match=r"links.txt:2: not an iblinkinfo line"):
        iblinkinfo.parse("Switch: 0x0000000000000001 sw:\n   what is this\n", "links.txt")
    bad_lid = (
        "Switch: 0x0000000000000001 sw:\n"
        '           1    1[  ] ==( 4X 106.25 Gbps Active/  LinkUp)==>      99    1[  ] "x" ( )\n'
    )
    with pytest.raises(FabricInputError, match=r"links.txt:2: peer LID 99"):
        iblinkinfo.parse(bad_lid, "links.txt")
    with pytest.raises(FabricInputError, match="no port lines"):
        iblinkinfo.parse("\n\n", "links.txt")


def test_plan_errors_name_the_line(fixture_text):
    plan = wiring.parse(fixture_text("small-plan.csv"))
    assert len(plan.links) == 9 and plan.locations["ib-spine-01"] == "N01-U02"
    head = "a_name,a_location,a_port,b_name,b_location,b_port\n"
    cases = [
        (head + "sw1,R1,1,sw2,R2,x\n", 2, "b_port 'x' is not a port number"),
        (head + "sw1,R1,1,sw2,R2,1\nsw1,R1,1,sw3,R3,1\n", 3, "already cabled on line 2"),
        (head + "sw1,R1,1,sw2,R2,1\nsw1,R9,2,sw3,R3,1\n", 3, "sw1 is at R9 here but R1"),
        ("a_name,b_name\nx,y\n", 1, "header lacks"),
        (head + "sw1,R1,1,sw2,R2\n", 2, "too few columns"),
    ]
    for text, line, words in cases:
        with pytest.raises(FabricInputError) as err:
            wiring.parse(text, "plan.csv")
        assert err.value.line == line, text
        assert words in str(err.value)


def test_hosts_map(fixture_text):
    owners = hosts.parse(fixture_text("small-hosts.json"))
    assert owners["e09d730300001004"].name == "node04 mlx5_0"
    assert owners["e09d730300001001"].host == "node01"
    sysfs = hosts.parse('{"gpu9": ["e09d:7303:0000:1009"]}', "h.json")
    assert sysfs["e09d730300001009"].name == "gpu9 mlx5_0"
    with pytest.raises(FabricInputError, match=r"listed for a and b"):
        hosts.parse('{"a": ["0x1"], "b": ["1"]}', "h.json")
    with pytest.raises(FabricInputError, match=r"h\.json:1: not JSON"):
        hosts.parse("{", "h.json")
    with pytest.raises(FabricInputError, match="not a GUID"):
        hosts.parse('{"a": ["zz"]}', "h.json")


def test_event_lines(fixture_text):
    parsed = list(events.parse_lines(fixture_text("small-event.log").splitlines(), "ev"))
    assert [e.code for e in parsed] == [328, 110, 329, 329, 329, 702, 917, 907, 1234]
    sym = parsed[1].location()
    assert (sym.name, sym.port, sym.guid) == ("ib-leaf-01", 34, "b8599f0300000201")
    a, b = parsed[2].link_ends()
    assert (str(a), str(b)) == ("ib-leaf-02/33", "ib-spine-01/3")
    assert parsed[2].seconds - parsed[1].seconds == pytest.approx(55.0)
    lines = fixture_text("small-event.log").splitlines()
    lines.insert(3, "2026-11-24 10:00:99 [x] garbage")
    with pytest.raises(FabricInputError, match=r"ev:4: not a UFM event.log line"):
        list(events.parse_lines(lines, "ev"))


def test_port_labels():
    assert [port_label(p) for p in (1, 2, 33, 34, 64)] == [
        "1/1/1",
        "1/1/2",
        "1/17/1",
        "1/17/2",
        "1/32/2",
    ]
    assert all(port_from_label(port_label(p)) == p for p in range(1, 65))
    assert port_from_label("17/1") == 33 and port_from_label("7") == 7
    with pytest.raises(ValueError):
        port_from_label("1/2/3")
