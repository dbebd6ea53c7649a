"""The address plan past 30 servers on real hosts: a rack that grows from 10 to 40 servers
turns its bridge from a /24 into the /23 (the stale /24 address removed), a host in the upper
/24 boots and reaches the apt cache on the controller's address, and a host of the /24 days
stays reachable. A lab of its own: bridge rslab9, 192.168.247 (/23: 246-247), own state dir."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from racksmith.lab import generate, paths, spec
from racksmith.lab.rack import down

pytestmark = pytest.mark.lab

LAB_DIR = Path("/var/lib/racksmith/lab-scale-it")


def rack_of(tmp_path: Path, servers: int) -> spec.RackSpec:
    plan = generate.RackPlan(
        servers=servers,
        bridge="rslab9",
        prefix="192.168.247",
        bmc_base_port=19443,
        maas_listen="127.0.0.1:15247",
    )
    path = tmp_path / f"rack{servers}.yml"
    path.write_text(generate.render(plan))
    return spec.load(path)


def test_a_growing_rack_moves_its_bridge_to_the_23(tmp_path, racksmith, ssh):
    small, big = rack_of(tmp_path, 10), rack_of(tmp_path, 40)
    lab = paths.LabPaths(LAB_DIR)
    down(big, lab)
    try:
        where = ["--lab-dir", str(LAB_DIR)]
        racksmith("lab", "host", "up", "a24", "192.168.247.240", "--rack", str(small.path), *where)
        shown = subprocess.run(
            ["ip", "-br", "addr", "show", "rslab9"], capture_output=True, text=True, check=True
        ).stdout
        assert "192.168.247.1/24" in shown
        racksmith("lab", "host", "up", "b23", "192.168.246.200", "--rack", str(big.path), *where)
        shown = subprocess.run(
            ["ip", "-br", "addr", "show", "rslab9"], capture_output=True, text=True, check=True
        ).stdout
        assert "192.168.247.1/23" in shown and "192.168.247.1/24" not in shown
        assert "192.168.246.200/23" in ssh(lab, "192.168.246.200", "ip -br addr show eth0")
        reach = "timeout 3 bash -c 'exec 3<>/dev/tcp/192.168.247.1/3142' && echo reachable"
        assert ssh(lab, "192.168.246.200", reach) == "reachable"  # the apt cache
        assert ssh(lab, "192.168.247.240", "hostname") == "a24"
        refused = racksmith(
            "lab", "host", "up", "c23", big.server("gpu31").ip, "--rack", str(big.path), *where,
            check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "clashes with rack server gpu31" in refused.stderr
    finally:
        racksmith("lab", "host", "down", "a24", "b23", "--lab-dir", str(LAB_DIR), check=False)
        down(big, lab)
