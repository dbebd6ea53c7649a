"""The MAAS simulator as a separate process (`racksmith lab maas`), and ansible-playbook runs
against it with a static "Redfish" inventory plus the real MAAS inventory plugin. Shared by
tests/integration/maas (no lab) and tests/integration/lab/test_maas_lab.py (needs the lab)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import yaml

from racksmith.maas.auth import ApiKey

REPO = Path(__file__).resolve().parents[2]
SPEED = "600"
BMC_USER, BMC_PASSWORD = "root", "bmc-Secret-4711"


@dataclass
class SimProcess:
    url: str
    key: str
    proc: subprocess.Popen
    log: Path

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        """A signed request to the simulator (test API under /MAAS/sim/)."""
        import time

        header = ApiKey.parse(self.key).authorization(timestamp=int(time.time()))
        reply = requests.request(
            method, self.url + path, headers={"Authorization": header}, timeout=10, **kwargs
        )
        reply.raise_for_status()
        return reply


def start_sim(tmp: Path, *args: str) -> SimProcess:
    run_dir = Path(tempfile.mkdtemp(prefix="maassim-", dir=tmp))
    log = run_dir / "maassim.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "racksmith",
            "lab",
            "maas",
            "--listen",
            "127.0.0.1:0",
            "--state",
            str(run_dir / "state.json"),
            "--speed",
            SPEED,
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
        cwd=REPO,
    )
    key = proc.stdout.readline().strip()
    banner = proc.stdout.readline()
    if key.startswith("API key: MAAS_API_KEY in "):  # adopted from the lab's secrets file
        from racksmith.secrets import read_env_file

        key = read_env_file(Path(key.removeprefix("API key: MAAS_API_KEY in ")))["MAAS_API_KEY"]
    match = re.search(r"at (http://\S+/MAAS/)", banner)
    if not key or not match:
        proc.kill()
        raise RuntimeError(f"simulator did not start: {key!r} {banner!r}\n{log.read_text()}")
    return SimProcess(url=match.group(1), key=key, proc=proc, log=log)


@pytest.fixture
def start_maas_sim(tmp_path):
    """Start simulators with extra CLI arguments; all are stopped at teardown."""
    started: list[SimProcess] = []

    def start(*args: str) -> SimProcess:
        sim = start_sim(tmp_path, *args)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.proc.terminate()
        sim.proc.wait(timeout=10)


@pytest.fixture
def maas_sim(start_maas_sim):
    return start_maas_sim()


@dataclass
class Rack:
    """A static inventory shaped like the Redfish inventory's output, plus maas.yml."""

    tmp: Path
    sim: SimProcess
    hosts: dict[str, dict] = field(default_factory=dict)
    #: extra settings for maas.yml (the inventory plugin) and group_vars/all.yml
    maas_inventory: dict = field(default_factory=dict)
    group_vars: dict = field(default_factory=dict)

    def add(self, index: int) -> str:
        name = f"l{index:06d}"
        self.hosts[name] = {
            "redfish_pxe_mac": f"02:5A:00:00:{index:02X}:00",
            "redfish_bmc": f"127.0.0.1:{8442 + index}",
            "redfish_service_tag": name.upper(),
        }
        return name

    def write(self) -> Path:
        inv = self.tmp / "inventory"
        (inv / "group_vars").mkdir(parents=True, exist_ok=True)
        (inv / "hosts.yml").write_text(yaml.safe_dump({"bmc_ok": {"hosts": self.hosts}}))
        (inv / "maas.yml").write_text(
            yaml.safe_dump({"plugin": "racksmith.core.maas", **self.maas_inventory})
        )
        group_vars = {
            "racksmith_maas_boot_disk": {"model": "DELLBOSS*"},
            "racksmith_maas_hwe_kernel": "hwe-22.04",
            "racksmith_maas_tags": ["racksmith-test"],
            "racksmith_maas_poll_interval": 0.3,
            "racksmith_maas_wait_ssh": False,
            **self.group_vars,
        }
        (inv / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
        return inv

    bmc_password: str = BMC_PASSWORD

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
                "ANSIBLE_FORCE_COLOR": "0",
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(self.tmp / "facts"),
                "ANSIBLE_LOCAL_TEMP": str(self.tmp / "ansible-tmp"),
                "RACKSMITH_RUN_DIR": str(self.tmp / "run"),
                "MAAS_URL": self.sim.url,
                "MAAS_API_KEY": self.sim.key,
                "RACKSMITH_BMC_USERNAME": BMC_USER,
                "RACKSMITH_BMC_PASSWORD": BMC_PASSWORD,
                "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
            }
        )
        env.update(extra or {})
        return env

    def playbook(self, playbook: str, *args: str, env: dict[str, str] | None = None):
        inv = self.write()
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "ansible-playbook"),
                "-i",
                str(inv),
                f"playbooks/{playbook}",
                *args,
            ],
            cwd=REPO,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done

    @staticmethod
    def recap(output: str) -> dict[str, dict[str, int]]:
        """PLAY RECAP -> {host: {ok, changed, failed, ...}}."""
        stats = {}
        for line in output.split("PLAY RECAP", 1)[-1].splitlines():
            match = re.match(r"^(\S+)\s+:\s+(.*)$", line.strip())
            if match:
                pairs = re.findall(r"(\w+)=(\d+)", match.group(2))
                stats[match.group(1)] = {k: int(v) for k, v in pairs}
        return stats


@pytest.fixture
def rack(tmp_path, maas_sim):
    return Rack(tmp_path, maas_sim)
