"""A role that skips says so as data, and the run report carries it (issue 10: "the report lists
what each role skipped and why").

Runs the real playbooks/configure.yml with the report callback on three local hosts: its roles
announce their skips with ``racksmith.core.role_skip``, exactly as the GPU-host roles do.
Needs no root and no lab.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

NO_GPU = "no NVIDIA GPU on the PCI bus (set gpu_stack_without_gpu to install anyway)"
NO_NVSWITCH = "no NVSwitch on the PCI bus"

#: A role shaped like nvidia_driver: the whole role skips without a GPU, one part without an
#: NVSwitch. What the host has comes from inventory variables instead of the PCI bus.
GPU_STACK = """
- name: Decide what applies here
  ansible.builtin.set_fact:
    _gpu_stack_applies: "{{ host_gpus | int > 0 }}"
    _gpu_stack_fm_applies: "{{ host_nvswitches | int > 0 }}"

- name: Say why the GPU stack is skipped on this host
  racksmith.core.role_skip:
    reason: >-
      no NVIDIA GPU on the PCI bus
      (set gpu_stack_without_gpu to install anyway)
  when: not _gpu_stack_applies | bool

- name: Say why fabric manager is skipped on this host
  racksmith.core.role_skip:
    part: fabricmanager
    reason: "{{ 'no NVSwitch on the PCI bus' }}"
  when: _gpu_stack_applies | bool and not _gpu_stack_fm_applies | bool

- name: Install the stack
  ansible.builtin.command: /bin/true
  changed_when: false
  when: _gpu_stack_applies | bool
"""

#: A role that announces a skip without a reason: the announcement fails the role.
SILENT = """
- name: Skip without saying why
  racksmith.core.role_skip:
    reason: "{{ '' }}"
"""

HOSTS = {
    "cpu1": {"host_gpus": 0, "host_nvswitches": 0},
    "pcie1": {"host_gpus": 8, "host_nvswitches": 0},
    "hgx1": {"host_gpus": 8, "host_nvswitches": 4},
}


def _run(tmp_path: Path, roles: list[str], *args: str) -> tuple[subprocess.CompletedProcess, Path]:
    for name, tasks in (("gpu_stack", GPU_STACK), ("silent", SILENT)):
        (tmp_path / "roles" / name / "tasks").mkdir(parents=True, exist_ok=True)
        (tmp_path / "roles" / name / "tasks" / "main.yml").write_text(tasks)
    inventory = tmp_path / "hosts.json"
    hostvars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ansible_become": False,  # configure.yml becomes root; these hosts are this process
    }
    inventory.write_text(
        json.dumps({"maas_deployed": {"hosts": {h: {**v, **hostvars} for h, v in HOSTS.items()}}})
    )
    run_dir = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),  # the report callback, racksmith.core
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        RACKSMITH_RUN_DIR=str(run_dir),
    )
    # the test roles as a site's own; racksmith's (imported by name) left out by their tag
    selection = {"racksmith_configure_roles": [], "racksmith_configure_extra_roles": roles}
    done = subprocess.run(
        [PLAYBOOK, str(REPO / "playbooks" / "configure.yml"), "-i", str(inventory),
         "-e", json.dumps(selection), "--skip-tags", "racksmith_roles", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done, run_dir


def _recap(stdout: str) -> dict[str, dict[str, int]]:
    found = {}
    for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", stdout, re.MULTILINE):
        found[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
    return found


@pytest.mark.parametrize("mode", [[], ["--check"]], ids=["run", "check"])
def test_each_hosts_skips_reach_report_json_and_txt(tmp_path, mode):
    done, run_dir = _run(tmp_path, ["gpu_stack"], *mode)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # readable in plain ansible-playbook output, and never a change (reruns stay changed=0)
    shown = " ".join(done.stdout.split())  # the YAML result format wraps long lines
    assert f"msg: 'gpu_stack skipped: {NO_GPU}'" in shown
    assert f"msg: 'gpu_stack: fabricmanager skipped: {NO_NVSWITCH}'" in shown
    recap = _recap(done.stdout)
    assert sorted(recap) == sorted(HOSTS)
    assert all(r["changed"] == 0 and r["failed"] == 0 for r in recap.values()), recap

    hosts = json.loads((run_dir / "report.json").read_text())["hosts"]
    assert {name: host["skips"] for name, host in hosts.items()} == {
        "cpu1": [{"role": "gpu_stack", "part": "all", "reason": NO_GPU}],
        "pcie1": [{"role": "gpu_stack", "part": "fabricmanager", "reason": NO_NVSWITCH}],
        "hgx1": [],
    }
    text = (run_dir / "report.txt").read_text().splitlines()
    section = text[text.index("skipped by role (did not apply; why):") + 1 :]
    assert section == [
        f"  gpu_stack (1 host): {NO_GPU}  [cpu1]",
        f"  gpu_stack/fabricmanager (1 host): {NO_NVSWITCH}  [pcie1]",
    ]
    assert "RACKSMITH REPORT" in done.stdout and section[1] in done.stdout
    html = (run_dir / "report.html").read_text()
    assert 'data-skips="|gpu_stack/fabricmanager|"' in html
    prom = (run_dir / "report.prom").read_text()
    # the run is named once, by racksmith_run_info; its series carry no per-run label
    assert f'racksmith_run_info{{run="{run_dir.name}"' in prom
    assert 'racksmith_run_skips{role="gpu_stack",part="all"} 1' in prom


def test_a_skip_without_a_reason_fails_the_role_with_its_name(tmp_path):
    done, run_dir = _run(tmp_path, ["silent"])
    assert done.returncode == 2, done.stdout[-4000:]
    hosts = json.loads((run_dir / "report.json").read_text())["hosts"]
    for name in HOSTS:
        assert hosts[name]["result"] == "FAILED:configure"
        assert "role_skip: role silent: 'reason' is empty" in hosts[name]["failure_reason"]
        assert hosts[name]["skips"] == []
