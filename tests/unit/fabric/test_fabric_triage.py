"""UFM event triage: the hand-checked log, bursts (also at the very end of the log), the cap,
and the generator's truth recovered from a generated log."""

from __future__ import annotations

import datetime

from racksmith.fabric import events, hosts, ibnetdiscover, triage
from racksmith.fabric.events import End, format_line, link_down_message
from racksmith.lab import fabricgen


def _run(text, topo=None, **kw):
    return triage.triage(events.parse_lines(text.splitlines(), "ev"), topo, **kw)


def test_sample_log(fixture_text):
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    result = _run(fixture_text("small-event.log"), topo)
    plan = [(a.action, str(a.end), str(a.peer), a.ufm_port) for a in result.actions]
    assert plan == [
        ("isolate", "ib-leaf-02/33", "ib-spine-01/3", "b8599f0300000202_33"),
        ("isolate", "ib-spine-01/3", "ib-leaf-02/33", "b8599f0300000100_3"),
        (
            "isolate",
            "ib-leaf-02/2",
            "MT4129 ConnectX7 Mellanox Technologies/1",
            "b8599f0300000202_2",
        ),
        ("isolate", "ib-leaf-01/34", "ib-spine-01/2", "b8599f0300000201_34"),
        ("isolate", "ib-spine-01/2", "ib-leaf-01/34", "b8599f0300000100_2"),
    ]
    flap = result.actions[0].issue
    assert (
        flap.flapping and flap.codes[329] == 3 and "flapping (3 link-down events)" in flap.reason()
    )
    s = result.summary()
    assert s["needs_attention"] == {"switch down": 1}
    assert s["unknown_codes"] == {"1234": 1}
    assert s["ignored"] == 2  # link up + the MANUAL unhealthy mark
    named = triage.triage(
        events.parse_lines(fixture_text("small-event.log").splitlines()),
        topo,
        owners=hosts.parse(fixture_text("small-hosts.json")),
    )
    ber = next(a for a in named.actions if a.issue.codes[917])
    assert str(ber.peer) == "node04 mlx5_0/1" and ber.as_dict()["peer"]["host"] == "node04"
    line = result.actions[0].as_dict()
    assert line["peer"]["name"] == "ib-spine-01" and line["port"]["label"] == "1/17/1"


def test_without_topology_the_peer_comes_from_the_log_or_stays_unknown(fixture_text):
    result = _run(fixture_text("small-event.log"))
    peers = {str(a.end): (str(a.peer) if a.peer else None) for a in result.actions}
    assert peers["ib-leaf-02/33"] == "ib-spine-01/3"  # from the Link went down message
    assert peers["ib-leaf-01/34"] is None  # symbol errors name one port only
    assert result.actions[-1].as_dict()["peer"] is None


def _storm_log(at_end: bool) -> list[str]:
    t0 = datetime.datetime(2026, 11, 24, 9, 0, 0)
    a = End("Switch", "sw-a", 1, "00000000000000aa")
    b = End("Switch", "sw-b", 2, "00000000000000bb")
    lines = []
    quiet = [(t0 + datetime.timedelta(seconds=10 * k), 328, "Link went up") for k in range(20)]
    storm_start = t0 + datetime.timedelta(seconds=300 if at_end else 105)
    storm = [
        (storm_start + datetime.timedelta(milliseconds=9 * k), 329, link_down_message(a, b, "MT1"))
        for k in range(60)
    ]
    for n, (when, code, msg) in enumerate(sorted(quiet + storm), 1):
        lines.append(format_line(n, when, code, "WARNING", a, msg))
    return lines


def test_reboot_storms_are_dropped_even_at_the_end_of_the_log():
    for at_end in (False, True):
        result = _run("\n".join(_storm_log(at_end)))
        assert result.actions == [], at_end
        assert result.burst_dropped == 60 and result.bursts == 1


def test_a_smaller_burst_is_acted_on():
    result = _run("\n".join(_storm_log(True)), burst_count=61)
    assert [str(a.end) for a in result.actions] == ["sw-a/1", "sw-b/2"]
    assert result.actions[0].issue.flapping


def test_cap_defers_links_it_cannot_take_whole():
    fabric = fabricgen.generate(64, 3, seed=7, radix=8, hcas_per_host=4)
    lines, _ = fabricgen.event_log(fabric, 3000, seed=7, bad_links=8)
    result = triage.triage(events.parse_lines(lines), fabric.topology, cap=5)
    assert len(result.isolate) <= 5
    deferred = [a for a in result.actions if a.action == "deferred"]
    assert deferred and result.summary()["ports_deferred"] == len(deferred)
    for action in result.isolate:  # both ends of every isolated switch-switch link
        ends = [e for e in action.issue.ends if e.is_switch]
        assert sum(1 for a in result.isolate if a.issue is action.issue) == len(ends)


def test_generated_log_recovers_the_bad_links():
    fabric = fabricgen.generate(64, 3, seed=11, radix=8, hcas_per_host=4)
    lines, truth = fabricgen.event_log(fabric, 5000, seed=11, bad_links=6)
    result = triage.triage(events.parse_lines(lines), fabric.topology, cap=100)
    found = {frozenset(str(e) for e in a.issue.ends) for a in result.isolate}
    want = {frozenset(t["ends"]) for t in truth}
    assert found == want
    assert result.bursts == 1 and result.burst_dropped >= 120
    flaps = {frozenset(t["ends"]) for t in truth if t["kind"] == "flap"}
    assert all(
        a.issue.flapping for a in result.isolate if frozenset(str(e) for e in a.issue.ends) in flaps
    )


def test_rest_feed_is_the_same_triage(fixture_text):
    feed = [
        {
            "id": 1,
            "event_type": 110,
            "severity": "Warning",
            "timestamp": "2026-11-24 10:00:05",
            "type": "IBPort",
            "object_path": "default / Switch: ib-leaf-01 / 1/17/2",
            "object_name": "b8599f0300000201",
            "description": "Symbol error counter rate is 14.0",
        }
    ]
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    result = triage.triage(events.from_feed(feed), topo)
    assert [(str(a.end), str(a.peer)) for a in result.actions] == [
        ("ib-leaf-01/34", "ib-spine-01/2"),
        ("ib-spine-01/2", "ib-leaf-01/34"),
    ]
    bad = [dict(feed[0], timestamp="yesterday")]
    try:
        events.from_feed(bad)
    except Exception as exc:  # the feed item is named by its index
        assert ":1:" in str(exc)
    else:
        raise AssertionError("a bad timestamp must be refused")
