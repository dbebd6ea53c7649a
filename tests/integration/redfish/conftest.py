"""A running ``racksmith lab bmc`` (the real command, as ``racksmith lab up`` starts it) and the
lab's own inventory file pointed at it.

Each test session gets its own lab directory (CA and credentials generated there) and free
loopback ports (``--base-port 0``; the ports are read back from ``state.json``), so the tests never
collide with a lab that is already up on 8443+. No root and no bridge are needed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@dataclass
class RunningRack:
    lab_dir: Path
    state: dict
    inventory: Path  # inventory/lab/redfish.yml with targets swapped for this run's ports

    def port(self, name: str) -> int:
        return next(b["port"] for b in self.state["bmcs"] if b["name"] == name)

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_BMC_"))
        }
        env.update(
            {
                "RACKSMITH_LAB_DIR": str(self.lab_dir),  # the lab inventory file expands this
                "ANSIBLE_CONFIG": str(self.lab_dir / "ansible.cfg"),
                "ANSIBLE_LOCAL_TEMP": str(self.lab_dir / "ansible-tmp"),
                "ANSIBLE_HOME": str(self.lab_dir / "ansible-home"),
            }
        )
        env.update(extra)
        return env

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / args[0]), *args[1:]],
            env=self.env(**extra),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def _start(rack_file: Path, lab_dir: Path) -> tuple[subprocess.Popen, dict]:
    log = (lab_dir / "bmc.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "racksmith",
            "lab",
            "bmc",
            "--rack",
            str(rack_file),
            "--lab-dir",
            str(lab_dir),
            "--base-port",
            "0",
            "--power-delay",
            "0.5",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    state_file = lab_dir / "bmc" / "state.json"
    deadline = time.monotonic() + 30
    while not state_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(
                f"racksmith lab bmc did not start: {(lab_dir / 'bmc.log').read_text()}"
            )
        time.sleep(0.1)
    return proc, json.loads(state_file.read_text())


def _lab_inventory(lab_dir: Path, state: dict) -> Path:
    """The repository's inventory/lab/redfish.yml, unchanged except for its targets."""
    config = yaml.safe_load((REPO / "inventory" / "lab" / "redfish.yml").read_text())
    config["targets"] = [f"127.0.0.1:{b['port']}" for b in state["bmcs"]]
    path = lab_dir / "redfish.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _ansible_cfg(lab_dir: Path) -> None:
    """The repository's plugin paths, without its callbacks (they write run reports)."""
    (lab_dir / "ansible.cfg").write_text(
        "[defaults]\n"
        f"inventory_plugins = {REPO / 'plugins' / 'inventory'}\n"
        f"library = {REPO / 'plugins' / 'modules'}\n"
        f"doc_fragment_plugins = {REPO / 'plugins' / 'doc_fragments'}\n"
        f"collections_path = {REPO / '.collections'}\n"
        "forks = 32\nretry_files_enabled = False\n"
        "[inventory]\nenable_plugins = racksmith.core.redfish\n"
    )


@pytest.fixture(scope="module")
def running_rack(request, tmp_path_factory) -> Iterator[RunningRack]:
    """Parametrize indirectly with a rack file path; defaults to the repository's lab rack."""
    rack_file = Path(getattr(request, "param", REPO / "inventory" / "lab" / "rack.yml"))
    lab_dir = tmp_path_factory.mktemp("lab")
    proc, state = _start(rack_file, lab_dir)
    _ansible_cfg(lab_dir)
    try:
        yield RunningRack(lab_dir, state, _lab_inventory(lab_dir, state))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # our own child, by its process group
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
