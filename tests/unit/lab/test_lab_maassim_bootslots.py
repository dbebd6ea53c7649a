"""The MAAS simulator's boot slots (how many lab test hosts boot at once): sized from the
machine's CPUs, overridden by $RACKSMITH_LAB_BOOT_CONCURRENCY or --boot-concurrency, bad values
refused naming where they came from, and the slots really bound the boots in flight."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from racksmith import cli
from racksmith.lab import spec
from racksmith.lab.maassim import labhosts
from racksmith.lab.maassim.labhosts import (
    BOOT_CONCURRENCY_ENV,
    LabHosts,
    boot_concurrency,
    parse_boot_concurrency,
    sized_boot_concurrency,
)
from racksmith.testing.rack import hgx_servers, write_rack


@pytest.mark.parametrize("text,expected", [("auto", None), ("", None), (" AUTO ", None),
                                           ("1", 1), ("8", 8), ("64", 64)])  # fmt: skip
def test_parse_accepts_auto_and_slot_counts(text, expected):
    assert parse_boot_concurrency(text) == expected


@pytest.mark.parametrize("text", ["0", "65", "-2", "2.5", "four", "8 slots"])
def test_parse_refuses_anything_else_naming_the_source(text):
    with pytest.raises(ValueError, match=rf"^--boot-concurrency='{text}': expected 'auto'"):
        parse_boot_concurrency(text, "--boot-concurrency")
    with pytest.raises(ValueError, match=rf"^{BOOT_CONCURRENCY_ENV}="):
        parse_boot_concurrency(text)


def test_sizing_is_two_per_cpu_within_bounds():
    assert [sized_boot_concurrency(n) for n in (0, 1, 2, 4, 16, 64)] == [2, 2, 4, 8, 32, 32]


def test_the_flag_wins_over_the_environment_which_wins_over_the_sizing():
    env = {BOOT_CONCURRENCY_ENV: "6"}
    assert boot_concurrency(3, environ=env, cpus=2) == 3
    assert boot_concurrency(None, environ=env, cpus=2) == 6
    assert boot_concurrency(None, environ={BOOT_CONCURRENCY_ENV: "auto"}, cpus=2) == 4
    assert boot_concurrency(None, environ={}, cpus=8) == 16
    assert boot_concurrency(None, environ={}) == sized_boot_concurrency(labhosts.machine_cpus())
    with pytest.raises(ValueError, match=BOOT_CONCURRENCY_ENV):
        boot_concurrency(None, environ={BOOT_CONCURRENCY_ENV: "lots"})


def _rack(tmp_path: Path, servers: int) -> spec.RackSpec:
    """A rack file only: nothing here starts a lab (the boot step is the test's own)."""
    return write_rack(
        tmp_path, bridge="rslab7", prefix="192.168.247", maas_listen="127.0.0.1:5247",
        servers=hgx_servers(servers),
    )  # fmt: skip


def test_the_slots_bound_the_boots_in_flight(tmp_path, monkeypatch):
    monkeypatch.setenv(BOOT_CONCURRENCY_ENV, "3")
    rack = _rack(tmp_path, 9)
    lock = threading.Lock()
    in_flight, peak = 0, 0

    def slow_boot(rack, server, *, user_data, lab_dir):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.15)
        with lock:
            in_flight -= 1

    hosts = LabHosts(rack, tmp_path, boot_host=slow_boot)
    assert hosts.concurrency == 3
    done = threading.Semaphore(0)
    for server in rack.servers:
        hosts.boot(server.name, None, lambda fault: done.release())
    for _ in rack.servers:
        assert done.acquire(timeout=10), "a boot was never reported"
    assert peak == 3
    with pytest.raises(ValueError, match="at least 1"):
        LabHosts(rack, tmp_path, concurrency=0)


def test_the_simulator_refuses_a_bad_setting_before_serving(tmp_path, monkeypatch, capsys):
    rack = _rack(tmp_path, 2)
    argv = ["lab", "maas", "--rack", str(rack.path), "--lab-dir", str(tmp_path / "lab"),
            "--listen", "127.0.0.1:0"]  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        cli.main([*argv, "--boot-concurrency", "0"])
    assert exited.value.code == 2
    assert "--boot-concurrency='0': expected 'auto'" in capsys.readouterr().err
    monkeypatch.setenv(BOOT_CONCURRENCY_ENV, "many")
    assert cli.main(argv) == 2
    assert f"{BOOT_CONCURRENCY_ENV}='many'" in capsys.readouterr().err
