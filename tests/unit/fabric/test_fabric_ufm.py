"""Apply and restore through UFM's REST API, against the UFM simulator on 127.0.0.1: dry run
by default, both ends isolated with a ticket per link, restore only after the ticket says
repaired, the disable/enable method, the event feed, and errors that keep the password out."""

from __future__ import annotations

import json

import pytest

from racksmith import cli
from racksmith.fabric import events, ibnetdiscover, isolate, triage, ufm
from racksmith.fabric.errors import UfmError
from racksmith.fabric.tickets import TicketStore
from racksmith.lab.ufmsim import UfmState, running

PASSWORD = "ufm-Secret-42"


@pytest.fixture
def sim(fixture_text, monkeypatch):
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    state = UfmState.from_topology(topo, "admin", PASSWORD)
    with running(state) as server:
        monkeypatch.setenv("UFM_URL", server.url)
        monkeypatch.setenv("UFM_USERNAME", "admin")
        monkeypatch.setenv("UFM_PASSWORD", PASSWORD)
        yield state


def _ufm(args, capsys):
    rc = cli.main(["fabric", "ufm", *args])
    out = capsys.readouterr()
    return rc, [json.loads(line) for line in out.out.splitlines()], out.err


def test_dry_run_by_default_calls_nothing(sim, fixture_path, capsys):
    rc, lines, _ = _ufm(
        [
            str(fixture_path("small-event.log")),
            "--topology",
            str(fixture_path("small-ibnetdiscover.txt")),
            "--json",
        ],
        capsys,
    )
    assert rc == 0 and len(lines) == 5 and {x["action"] for x in lines} == {"isolate"}
    assert sim.calls == [] and sim.unhealthy == {}


def test_apply_then_restore_after_repair(sim, fixture_path, tmp_path, capsys):
    base = [
        str(fixture_path("small-event.log")),
        "--topology",
        str(fixture_path("small-ibnetdiscover.txt")),
    ]
    tickets = str(tmp_path / "tickets")
    rc, lines, err = _ufm([*base, "--apply", "--tickets", tickets, "--json"], capsys)
    assert rc == 0, err
    assert "isolate" in err  # the plan is said first, on stderr
    assert sorted(x["status"] for x in lines) == ["isolated"] * 3
    assert sorted(sim.unhealthy) == sorted(
        [
            "b8599f0300000202_33",
            "b8599f0300000100_3",  # flapping link, both ends
            "b8599f0300000201_34",
            "b8599f0300000100_2",  # symbol errors, both ends
            "b8599f0300000202_2",  # the HCA cable: the switch end only
        ]
    )
    assert sim.ports["b8599f0300000100_3"]["logical_state"] == "Down"
    store = TicketStore(tickets)
    assert len(store.all()) == 3 and all(t.status == "open" for t in store.all())
    puts = [c for c in sim.calls if c[0] == "PUT"]
    assert len(puts) == 3  # one call per link

    rc, lines, _ = _ufm([*base, "--apply", "--tickets", tickets, "--json"], capsys)
    assert rc == 0 and {x["status"] for x in lines} == {"already isolated (ticket open)"}
    assert len([c for c in sim.calls if c[0] == "PUT"]) == 3

    rc, lines, _ = _ufm(["--restore", "--tickets", tickets, "--json"], capsys)
    assert {x["status"] for x in lines} == {"waiting for repair"} and len(sim.unhealthy) == 5

    flap = next(t for t in store.all() if "ib-spine-01/3" in t.link)
    rc, lines, _ = _ufm(["--repaired", flap.id, "--tickets", tickets, "--json"], capsys)
    assert lines == [{"ticket": flap.id, "status": "repaired"}]
    rc, lines, _ = _ufm(["--restore", "--tickets", tickets, "--json"], capsys)
    assert rc == 0
    assert sorted(x["status"] for x in lines) == [
        "restored",
        "waiting for repair",
        "waiting for repair",
    ]
    assert "b8599f0300000100_3" not in sim.unhealthy and len(sim.unhealthy) == 3
    assert sim.ports["b8599f0300000100_3"]["logical_state"] == "Active"
    assert store.get(flap.id).status == "closed"
    rc, _, err = _ufm(["--repaired", flap.id, "--tickets", tickets], capsys)
    assert rc == 2 and "is closed, not open" in err


def test_disable_method_and_feed(sim, fixture_text, tmp_path):
    port = "b8599f0300000201_34"
    sim.add_event(110, port, "Symbol error counter rate is 30.0")
    sim.add_event(328, port, "Link went up")
    client = ufm.UfmClient(ufm.resolve())
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    result = triage.triage(events.from_feed(client.events()), topo)
    assert [a.ufm_port for a in result.isolate] == [port, "b8599f0300000100_2"]
    store = TicketStore(tmp_path)
    done = isolate.apply(result, client, store, method="disable")
    assert [o.status for o in done] == ["disabled"]
    assert sim.ports[port]["physical_state"] == "Disabled" and sim.jobs
    store.mark_repaired(done[0].ticket)
    assert [o.status for o in isolate.restore(client, store, method="disable")] == ["restored"]
    assert sim.ports[port]["physical_state"] == "Link Up"


def test_isolation_ufm_does_not_report_is_a_failure(sim, fixture_path, tmp_path, monkeypatch):
    real = UfmState.set_unhealthy

    def forgetful(self, body):  # accepts the request, drops the last port
        real(self, {**body, "ports": body["ports"][:-1]})

    monkeypatch.setattr(UfmState, "set_unhealthy", forgetful)
    topo = ibnetdiscover.parse(fixture_path("small-ibnetdiscover.txt").read_text())
    lines = fixture_path("small-event.log").read_text().splitlines()
    result = triage.triage(events.parse_lines(lines), topo)
    store = TicketStore(tmp_path)
    done = isolate.apply(result, ufm.UfmClient(ufm.resolve()), store)
    assert not any(o.ok for o in done)
    assert all("not confirmed (UFM does not report it" in o.status for o in done)
    assert all("not confirmed" in t.history[-1] for t in store.all())


def test_unknown_port_is_not_isolated(sim, tmp_path):
    line = (
        "2026-11-24 10:00:05.000 [2] [110] WARNING [Hardware] IBPort "
        "[default / Switch: ib-leaf-77 / 1/1/1] [dev_id: b8599f0300000777]: Symbol error"
    )
    result = triage.triage(events.parse_lines([line]))
    done = isolate.apply(result, ufm.UfmClient(ufm.resolve()), TicketStore(tmp_path))
    assert not done[0].ok and "UFM does not know ib-leaf-77/1" in done[0].status
    assert sim.unhealthy == {}


def test_bad_password_fails_without_echoing_it(sim, monkeypatch, fixture_path, tmp_path, capsys):
    monkeypatch.setenv("UFM_PASSWORD", "wrong-Pass-99")
    with pytest.raises(UfmError) as err:
        ufm.UfmClient(ufm.resolve()).ports()
    assert "HTTP 401" in str(err.value) and "wrong-Pass-99" not in str(err.value)
    rc, _, stderr = _ufm(
        [str(fixture_path("small-event.log")), "--apply", "--tickets", str(tmp_path)], capsys
    )
    assert rc == 1 and "401" in stderr and "wrong-Pass-99" not in stderr


def test_missing_credentials_is_a_usage_error(monkeypatch, tmp_path, capsys, fixture_path):
    for name in ("UFM_URL", "UFM_USERNAME", "UFM_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    rc = cli.main(
        [
            "fabric",
            "ufm",
            str(fixture_path("small-event.log")),
            "--apply",
            "--tickets",
            str(tmp_path),
        ]
    )
    assert rc == 2 and "UFM_USERNAME" in capsys.readouterr().err


def test_recorded_ports_answer_is_read_and_the_simulator_answers_alike(sim, fixture_path):
    # GET /ufmRest/resources/ports as a real UFM answered it (fixtures/fabric/README.md)
    recorded = json.loads(fixture_path("recorded/ufm-resources-ports.json").read_text())

    class Recorded:
        def ports(self):
            return recorded

    assert isolate._port_index(Recorded()) == {
        ("SLG01-02", 1): "1c34da0300728606_1",
        ("luna-0218", 1): "0c42a10300280000_1",
    }
    ours = next(iter(sim.ports.values()))
    for real in recorded:
        missing = {k for k in ("name", "guid", "system_name", "number", "peer", "path")
                   if k not in ours}  # fmt: skip
        assert not missing
        assert set(ours) <= set(real) | {"capabilities"}  # no field a real UFM lacks
        assert real["physical_state"] == "Link Up" == ours["physical_state"]
        assert ours["path"].startswith("default / ") and " / NA / " in ours["path"]
