"""Shared helpers for the health agent's tests (imported by conftest.py and the tests): real
captures, replayed through the same lab stand-in the Ansible role installs (fake nvidia-smi
and dmesg printing captured outputs, a fake sysfs tree), and the agent run as a subprocess or
in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.health.checks import all_checks, requirements
from racksmith.health.host import Host
from racksmith.health.profile import load
from racksmith.health.runner import run_checks
from racksmith.lab.standin import install

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
CAPTURES = ("h200x2", "h200-x2")  # the shared capture and racksmith's own
FAILURES = FIXTURES / "h200-x2-failures"


@pytest.fixture
def unit_profile(tmp_path: Path) -> Path:
    """lab-standin, minus the one check that reads this machine's real disks."""
    path = tmp_path / "unit-standin.json"
    path.write_text(
        json.dumps(
            {
                "extends": "lab-standin",
                "name": "unit-standin",
                "skip": {"disk_space": "unit test: the test machine's disks are not under test"},
            }
        )
    )
    return path


class Replay:
    def __init__(self, prefix: Path):
        self.prefix = prefix
        self.sysfs = prefix / "sys"
        self.env = dict(
            os.environ, PATH=f"{prefix / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        )

    def host(self) -> Host:
        return Host(sysfs=self.sysfs, env=self.env)

    def run(self, profile: str | Path, **kwargs):
        prof = load(str(profile), requirements())
        return run_checks(all_checks(), prof, self.host(), **kwargs)

    def agent(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        env = dict(self.env, PYTHONPATH=str(ROOT))
        return subprocess.run(
            [sys.executable, "-m", "racksmith.health", "check", "--sysfs", str(self.sysfs), *args],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture
def replay(tmp_path: Path):
    """replay(capture="h200-x2", overlays=()) -> Replay with the stand-in installed."""

    def make(capture: str = "h200-x2", overlays=()) -> Replay:
        prefix = tmp_path / f"standin-{capture}-{len(list(tmp_path.iterdir()))}"
        install(FIXTURES / capture, prefix, overlays=[FAILURES / o for o in overlays])
        return Replay(prefix)

    return make


def by_name(results) -> dict:
    return {r.name: r for r in results}
