"""A lab of its own for these tests: bridge rslab1, 192.168.249.0/24, its own state dir and
simulator ports, so it never collides with the main lab (rslab0), molecule or other helpers.
Everything it starts is stopped by `racksmith lab down`'s code at the end of the session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.lab import hosts, paths, spec
from racksmith.lab.rack import down
from racksmith.testing.rack import hgx_servers, write_rack

LAB_DIR = Path("/var/lib/racksmith/lab-it")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def it_rack(tmp_path_factory) -> spec.RackSpec:
    if os.geteuid() != 0:
        pytest.fail("lab integration tests need root (bridge, netns, systemd-nspawn)")
    rack = write_rack(
        tmp_path_factory.mktemp("rack"),
        bridge="rslab1", prefix="192.168.249", bmc_base_port=18443,
        maas_listen="127.0.0.1:15249", servers=hgx_servers(2),
    )  # fmt: skip
    down(rack, paths.LabPaths(LAB_DIR))  # whatever a crashed earlier run left behind
    yield rack
    down(rack, paths.LabPaths(LAB_DIR))


@pytest.fixture(scope="session")
def it_lab(it_rack) -> paths.LabPaths:
    return paths.LabPaths(LAB_DIR)


@pytest.fixture
def lab_env(it_rack):
    return {**os.environ, "RACKSMITH_LAB_DIR": str(LAB_DIR), "RACKSMITH_RACK": str(it_rack.path)}


def _racksmith(
    *args: str, env: dict | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", *args], capture_output=True, text=True, env=env,
        cwd=REPO, check=False,
    )  # fmt: skip
    if check and done.returncode != 0:
        pytest.fail(
            f"racksmith {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done


def _ssh(lab: paths.LabPaths, ip: str, command: str, check: bool = True) -> str:
    done = subprocess.run(
        hosts.ssh_argv(lab.ssh_key, ip, command), capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        pytest.fail(f"ssh {ip} {command!r} failed ({done.returncode}): {done.stderr}")
    return done.stdout.strip()


@pytest.fixture
def racksmith():
    """Run the racksmith CLI as a user would (a separate process)."""
    return _racksmith


@pytest.fixture
def ssh():
    """Run a command on a test host as `ubuntu`, over SSH like Ansible does."""
    return _ssh
