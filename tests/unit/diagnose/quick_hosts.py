"""Hosts whose quick checks are real: the health agent, run as a process, on the lab stand-in
that replays the real 2 x H200 capture (tests/fixtures/h200-x2), with a real failure overlay
(tests/fixtures/h200-x2-failures) on the hosts that should fail."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from racksmith.lab.standin import install

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


def profile(tmp: Path) -> Path:
    """lab-standin minus the check that reads this machine's own disks (as the health tests)."""
    path = tmp / "unit-standin.json"
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


def make_hosts(tmp: Path, overlays: dict[str, str | None]) -> Path:
    """One stand-in per host under ``tmp/hosts/<host>``; ``overlays``: host -> failure folder
    (None: healthy). Returns the folder."""
    root = tmp / "hosts"
    for host, overlay in overlays.items():
        extra = [FIXTURES / "h200-x2-failures" / overlay] if overlay else []
        install(FIXTURES / "h200-x2", root / host, overlays=extra)
    return root


def check_command(root: Path, prof: Path) -> str:
    """A ``--check`` template that runs the agent on host ``{host}``'s stand-in."""
    return shlex.join(
        [
            "env",
            f"PATH={root}/{{host}}/bin:/usr/bin:/bin",
            f"PYTHONPATH={REPO}",
            sys.executable,
            "-m",
            "racksmith.health",
            "check",
            "--json",
            "--sysfs",
            f"{root}/{{host}}/sys",
            "--profile",
            str(prof),
        ]
    )


def racksmith(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The ``racksmith`` command, as a process (stdout and exit code are what is tested)."""
    return subprocess.run(
        [sys.executable, "-m", "racksmith", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
