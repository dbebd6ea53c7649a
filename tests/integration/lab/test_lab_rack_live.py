"""`racksmith lab up|status|down` as a user runs them: idempotent up, clean down, rollback."""

from __future__ import annotations

import json
import socket
import stat

import pytest

from racksmith.lab import net, proc

pytestmark = pytest.mark.lab


def _status(racksmith, env) -> dict:
    return json.loads(racksmith("lab", "status", "--json", env=env).stdout)


def test_up_is_idempotent_and_down_stops_everything(lab_env, it_rack, it_lab, racksmith):
    racksmith("lab", "up", env=lab_env)
    first = _status(racksmith, lab_env)
    assert first["bridge"]["up"] and first["image"]["cached"]
    started = {d["name"]: d for d in first["daemons"] if d["pid"]}
    assert started["apt-cacher-ng"]["serving"]
    for daemon in started.values():  # whatever simulators exist must answer
        assert daemon["serving"], daemon
    for name in ("secrets/bmc.env", "secrets/maas.env", "ca/ca-key.pem", "keys/id_ed25519"):
        assert stat.S_IMODE((it_lab.root / name).stat().st_mode) == 0o600, name
    assert (it_lab.ca / "ca.pem").exists()

    racksmith("lab", "up", env=lab_env)  # reuses what runs
    again = {d["name"]: d["pid"] for d in _status(racksmith, lab_env)["daemons"] if d["pid"]}
    assert again == {name: d["pid"] for name, d in started.items()}

    records = [proc.read_record(it_lab.pidfile(name)) for name in started]
    racksmith("lab", "down", env=lab_env)
    assert not any(proc.alive(r) for r in records if r)
    assert not net.link_exists(it_rack.bridge)
    assert not [ns for ns in net.netns_list() if ns.startswith(f"{it_rack.bridge}-")]
    assert not _status(racksmith, lab_env)["bridge"]["up"]


def test_up_fails_clearly_and_rolls_back_when_a_port_is_taken(lab_env, it_rack, it_lab, racksmith):
    """A stranger on the MAAS simulator's port: `lab up` names it and stops what it started."""
    status = _status(racksmith, lab_env)
    maas = next(d for d in status["daemons"] if d["name"] == "maas")
    host, port = maas["endpoints"][0].rsplit(":", 1)
    stranger = socket.socket()
    stranger.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    stranger.bind((host, int(port)))
    stranger.listen()
    try:
        done = racksmith("lab", "up", env=lab_env, check=False)
    finally:
        stranger.close()
    assert done.returncode == 1
    assert f"{host}:{port}" in done.stderr and "already taken by pid" in done.stderr
    assert "stopping what this run started" in done.stderr
    assert not net.link_exists(it_rack.bridge)
    assert proc.running(it_lab.pidfile("apt-cacher-ng")) is None


def test_status_without_root_state_reads_fine(lab_env, racksmith):
    assert "bridge" in racksmith("lab", "status", env=lab_env).stdout
