"""Issue 26's "done when" for ``racksmith diagnose hang``, in the lab: a 4-host gloo job with
one rank made to hang is diagnosed, with the right host and rank named and nothing else.

Four real test hosts (systemd-nspawn, sshd, sudo) on a lab network of their own (bridge
rslab4, 192.168.242.0/24, /var/lib/racksmith/lab-hang), one rank each of
tests/integration/diagnose/hang_job.py under the hosts' own python3 (Debian 12's 3.11).
torch reaches the hosts lab-only: the controller venv's torch and its dependencies are
hard-linked into each host's overlay upper layer under /opt/racksmith-lab-torch (same
filesystem; no copy, nothing in the image), and the job runs with that on PYTHONPATH. The hosts
have no py-spy: ``diagnose hang`` ships the controller's, as it would to a real host. It reaches
the hosts as a site's inventory says (``ansible_user: ubuntu``, its key, ``sudo -n``).

Then one host stops answering SSH and the diagnosis names it as silent, beside the hung rank's
host.
Wall times are printed (the figures in docs/diagnose.md), not asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from racksmith.lab import hosts, paths
from racksmith.lab.rack import down
from racksmith.testing.rack import hgx_servers, write_rack

pytestmark = pytest.mark.lab

LAB_DIR = Path("/var/lib/racksmith/lab-hang")
REPO = Path(__file__).resolve().parents[3]
JOB = REPO / "tests" / "integration" / "diagnose" / "hang_job.py"
SITE = Path(sysconfig.get_paths()["purelib"])
#: torch and what it imports, from the controller's venv (top-level names in site-packages).
TORCH_PARTS = (
    "torch",
    "torchgen",
    "functorch",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "markupsafe",
    "fsspec",
    "filelock",
    "typing_extensions.py",
)
ON_HOST = "/opt/racksmith-lab-torch"
HANG_RANK, HANG_STEP, WORLD = 2, 3, 4


@pytest.fixture(scope="module")
def hang_rack(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("lab tests need root (bridge, netns, systemd-nspawn)")
    rack = write_rack(
        tmp_path_factory.mktemp("hang-rack"),
        bridge="rslab4", prefix="192.168.242", bmc_base_port=18843,
        maas_listen="127.0.0.1:15242", servers=hgx_servers(WORLD),
    )  # fmt: skip
    lab = paths.LabPaths(LAB_DIR)
    down(rack, lab)  # whatever a crashed earlier run left behind
    try:
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=WORLD) as pool:
            list(pool.map(lambda s: hosts.boot(rack, s, lab_dir=LAB_DIR), rack.servers))
        print(f"\n{WORLD} hosts booted in {time.monotonic() - t0:.1f} s")
        for server in rack.servers:
            _give_torch(lab, server)
        yield rack, lab
    finally:
        down(rack, lab)


def _give_torch(lab: paths.LabPaths, server) -> None:
    """Hard-link torch into the host's overlay upper layer (lab only; see the module doc). A
    file added to the upper layer of a mounted overlay shows through once nothing has looked up
    that path yet (a new folder): checked over SSH; where it does not show (or the host has a
    copied root), the parts are copied through the host's root instead (slower)."""
    machine = lab.machine(server.name)
    upper = machine / "upper"
    layers = ([upper] if upper.is_dir() else []) + [machine / "root"]
    for layer in layers:
        target = layer / ON_HOST.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        how = "-al" if layer == upper else "-a"
        for part in TORCH_PARTS:
            source = SITE / part
            assert source.exists(), f"{source}: the train-test extra (torch) is not installed"
            if not (target / part).exists():
                subprocess.run(["cp", how, str(source), str(target / part)], check=True)
        shutil.copy(JOB, target / JOB.name)
        seen = _ssh(
            lab, server.ip, f"test -f {ON_HOST}/torch/__init__.py -a -f {ON_HOST}/{JOB.name}"
        )
        if seen.returncode == 0:
            print(f"{server.name}: torch in {ON_HOST} ({'hard links' if how == '-al' else 'copy'})")
            return
    pytest.fail(f"{server.name}: torch does not show under {ON_HOST} on the host")


def _ssh(
    lab: paths.LabPaths, ip: str, command: str, *, user: str = "root", timeout: float = 60
) -> subprocess.CompletedProcess:
    return subprocess.run(
        hosts.ssh_argv(lab.ssh_key, ip, command, user=user),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def hung_job(hang_rack):
    rack, lab = hang_rack
    master = rack.servers[0].ip
    for rank, server in enumerate(rack.servers):
        env = (
            f"MASTER_ADDR={master} MASTER_PORT=29500 RANK={rank} LOCAL_RANK=0 "
            f"WORLD_SIZE={WORLD} LOCAL_WORLD_SIZE=1 GLOO_SOCKET_IFNAME=eth0 "
            f"TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE=/tmp/fr_rank_ "
            f"PYTHONPATH={ON_HOST}"
        )
        started = _ssh(
            lab,
            server.ip,
            f"{env} setsid nohup python3 "
            f"{ON_HOST}/{JOB.name} --hang-rank {HANG_RANK} --hang-step {HANG_STEP} "
            f"> /tmp/rank.log 2>&1 < /dev/null &",
        )
        assert started.returncode == 0, started.stderr
    want = {r: 2 * HANG_STEP + (0 if r == HANG_RANK else 1) for r in range(WORLD)}
    deadline = time.monotonic() + 300  # torch's import on a loaded 2-core machine
    seen: dict[int, int | None] = {}
    while time.monotonic() < deadline:
        for rank, server in enumerate(rack.servers):
            seen[rank] = _enqueued(_ssh(lab, server.ip, f"cat /tmp/fr_rank_{rank}").stdout)
        if seen == want:
            break
        time.sleep(2)
    else:
        logs = {s.name: _ssh(lab, s.ip, "tail -5 /tmp/rank.log").stdout for s in rack.servers}
        pytest.fail(f"the job did not reach its hang: {seen}, want {want}; logs: {logs}")
    return rack, lab


def _enqueued(dump: str) -> int | None:
    """The last enqueued collective in a rank's flight-recorder dump (None: none yet). The
    waiting ranks are inside step HANG_STEP's first all_reduce (two a step), the hung rank is
    one behind."""
    try:
        return int(json.loads(dump)["pg_status"]["0"]["last_enqueued_collective"])
    except (ValueError, KeyError):
        return None


def _inventory(tmp_path: Path, rack, lab: paths.LabPaths) -> Path:
    lines = ["all:", "  children:", "    job42:", "      hosts:"]
    for server in rack.servers:
        lines += [
            f"        {server.name}:",
            f"          ansible_host: {server.ip}",
            "          ansible_user: ubuntu",
            f"          ansible_ssh_private_key_file: {lab.ssh_key}",
            "          ansible_ssh_common_args: '-o StrictHostKeyChecking=no"
            " -o UserKnownHostsFile=/dev/null'",
        ]
    path = tmp_path / "hosts.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _diagnose(inventory: Path, out: Path) -> tuple[int, dict, float, str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", "diagnose", "hang", "-i", str(inventory),
         "--limit", "job42", "--json", "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    took = time.monotonic() - t0
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout), took, done.stderr


def test_a_4_host_job_with_one_hung_rank_names_that_host_and_rank_only(hung_job, tmp_path):
    rack, lab = hung_job
    hung = rack.servers[HANG_RANK].name
    code, doc, took, err = _diagnose(_inventory(tmp_path, rack, lab), tmp_path / "diag")
    print(f"diagnose hang, 4 lab hosts: {took:.1f} s wall, {doc['seconds']}")
    shown = {
        k: doc[k]
        for k in (
            "suspects",
            "named_hosts",
            "unanswered_hosts",
            "unread_ranks",
            "undecided",
            "stack_groups",
            "collective_groups",
        )
    }
    assert code == 1, (err, shown)
    assert [(s["host"], s["rank"]) for s in doc["suspects"]] == [(hung, HANG_RANK)], shown
    assert [n["host"] for n in doc["named_hosts"]] == [hung], shown
    assert doc["decided"] and doc["ranks_seen"] == WORLD and doc["missing_ranks"] == []
    (suspect,) = doc["suspects"]
    assert any("wait_for_batch" in why for why in suspect["reasons"])
    assert any(why.startswith("flight recorder: pg 0:") for why in suspect["reasons"])
    assert [len(g["ranks"]) for g in doc["stack_groups"]] == [3, 1]
    assert set(doc["tickets"]) == {hung}
    assert set(doc["health"]) == {hung}
    # the hosts had no py-spy: the controller's was shipped to each
    for server in rack.servers:
        assert _ssh(lab, server.ip, "test -x /var/tmp/racksmith/py-spy").returncode == 0


def test_a_host_that_went_away_is_named_as_silent_beside_the_hung_one(hung_job, tmp_path):
    rack, lab = hung_job
    gone = rack.servers[3]
    # sshd stops answering; the host and its rank stay up (a powered-off host would also end
    # its TCP connections, and the other ranks' gloo could notice and exit)
    stopped = _ssh(lab, gone.ip, "systemctl stop ssh.socket ssh.service")
    assert stopped.returncode in (0, 255), stopped.stderr  # 255: the session ended with sshd
    code, doc, took, _ = _diagnose(_inventory(tmp_path, rack, lab), tmp_path / "diag")
    print(f"diagnose hang, 4 lab hosts, one down: {took:.1f} s wall, {doc['seconds']}")
    assert code == 1
    assert [n["host"] for n in doc["named_hosts"]] == [rack.servers[HANG_RANK].name, gone.name]
    assert [u["host"] for u in doc["unanswered_hosts"]] == [gone.name]
    assert doc["missing_ranks"] == [3] and not doc["decided"]
    assert [(s["host"], s["rank"]) for s in doc["suspects"]] == [
        (rack.servers[HANG_RANK].name, HANG_RANK)
    ]
