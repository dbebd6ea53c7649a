"""What `lab up` starts and how `lab status` reads; pure parts only."""

import sys

import pytest

from racksmith.lab import rack as labrack
from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths
from racksmith.lab.spec import load


def test_simulators_get_the_rack_and_lab_dir_they_read_secrets_from(tmp_path):
    spec = load()
    bmc, maas = labrack.daemons(spec, LabPaths(tmp_path))
    assert bmc.argv == (
        sys.executable, "-m", "racksmith", "lab", "bmc",
        "--rack", str(spec.path), "--lab-dir", str(tmp_path),
    )  # fmt: skip
    assert maas.argv[5:7] == ("--listen", spec.maas_listen)
    assert maas.endpoints == (("127.0.0.1", 5240),)


def test_readiness_skips_bmcs_that_are_unreachable_on_purpose(tmp_path):
    spec = load()
    bmc = labrack.daemons(spec, LabPaths(tmp_path))[0]
    closed = {s.bmc_port for s in spec.servers if "bmc_unreachable" in s.faults}
    assert closed, "the built-in rack has an unreachable BMC"
    ports = {port for _, port in bmc.endpoints}
    assert not ports & closed
    assert len(ports) == len(spec.servers) - len(closed)


@pytest.mark.parametrize(("listen", "expected"), [("127.0.0.1:5240", ("127.0.0.1", 5240))])
def test_split_listen(listen, expected):
    assert labrack.split_listen(listen) == expected


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.1:http", ":"])
def test_split_listen_rejects_bad_input(listen):
    with pytest.raises(LabError, match="HOST:PORT"):
        labrack.split_listen(listen)


def test_missing_simulator_modules_are_reported_not_fatal():
    assert labrack.available("racksmith.lab.no_such_simulator") is False
    assert labrack.available("racksmith.lab.hosts") is True


def test_status_renders_daemons_and_hosts():
    report = {
        "rack": "r.yml",
        "lab_dir": "/l",
        "bridge": {"name": "rslab0", "address": "192.168.250.1/24", "up": True},
        "image": {"path": "/c/rootfs.tar.zst", "cached": False, "mib": 0},
        "daemons": [
            {"name": "apt-cacher-ng", "pid": 10, "serving": True, "endpoints": ["a:1"]},
            {"name": "maas", "pid": None, "serving": False, "endpoints": ["b:2"]},
        ],
        "hosts": [{"name": "gpu01", "ip": "192.168.250.20", "mac": "02:5a", "running": True}],
    }
    text = labrack.render_status(report)
    assert "not built" in text
    assert "apt-cacher-ng       10  serving" in text
    assert "maas                 -  stopped" in text
    assert "gpu01          192.168.250.20   02:5a              running" in text
