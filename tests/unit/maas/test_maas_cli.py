"""`racksmith maas ...` against the in-process simulator: listing, and destructive commands
that only say what they would do without --yes."""

from __future__ import annotations

import json

from racksmith import cli


def test_machines_and_release_plan(sim, monkeypatch, capsys):
    sim.store.enlist_ready(2)
    monkeypatch.setenv("MAAS_URL", sim.url)
    monkeypatch.setenv("MAAS_API_KEY", sim.store.admin_key())
    assert cli.main(["maas", "machines", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(m["hostname"] for m in listed) == ["sim-0001", "sim-0002"]
    assert all(m["status_name"] == "Ready" and m["boot_disk"] for m in listed)

    mac = listed[0]["pxe_mac"]
    assert cli.main(["maas", "release", mac, "--erase"]) == 0  # Ready: nothing to release
    assert "nothing to release" in capsys.readouterr().out
    with sim.store.lock:
        machine = sim.store.get(listed[0]["system_id"])
        sim.store.start_deploying(
            machine,
            sim.store.users["admin"],
            distro="jammy",
            kernel="ga-22.04",
            user_data="",
            comment="",
        )
    assert cli.main(["maas", "release", listed[0]["hostname"], "--erase", "--quick"]) == 2
    out = capsys.readouterr()
    assert "would release" in out.out and "quick disk erase" in out.out
    assert "--yes" in out.err
    assert sim.store.get(listed[0]["system_id"]).status != 4  # untouched


def test_errors_are_one_line_without_the_key(sim, monkeypatch, capsys):
    monkeypatch.setenv("MAAS_URL", sim.url)
    consumer = sim.key.consumer_key  # right consumer, wrong token: MAAS echoes the token key
    monkeypatch.setenv("MAAS_API_KEY", f"{consumer}:WrongToken123:secretsecret")
    assert cli.main(["maas", "machines"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: GET machines/ -> HTTP 401")
    assert "Invalid access token: ********" in err
    assert "WrongToken123" not in err and "secretsecret" not in err
