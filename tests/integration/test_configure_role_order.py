"""Each host applies its configure roles in its own list's order, whatever other hosts run.

Why this test exists: ``playbooks/configure.yml`` applies the roles with ``include_tasks`` in a
loop, and Ansible shares one included file between hosts whose loop items look alike
(ansible/ansible#36978, open). When hosts have different role lists (a site's
``racksmith_configure_roles`` per group), a host could then run a later role before an
earlier one, depending on which host's result Ansible processed first: CI saw the driver role
run before ``base`` on one host. ``loop_control: extended`` makes each item carry its host's
whole list, so only hosts with identical lists share an include.

``forks=1`` makes the bad order certain without the fix: the host listed first (one role)
always reports first. Runs the real configure.yml on local hosts; needs no root and no lab.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

#: host -> its role list, in inventory order: the short list first, so its include result is
#: processed first
ROLES = {
    "short": ["beta"],
    "long": ["alpha", "beta", "gamma"],
    "reversed": ["gamma", "beta", "alpha"],
}
SAY = "Say which role runs"


def _run(tmp_path: Path) -> dict:
    for role in {r for roles in ROLES.values() for r in roles}:
        tasks = tmp_path / "roles" / role / "tasks"
        tasks.mkdir(parents=True)
        say = f"- name: {SAY}\n  ansible.builtin.debug:\n    msg: {role}\n"
        (tasks / "main.yml").write_text(say)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {
        name: {**local, "ansible_become": False, "racksmith_configure_roles": roles}
        for name, roles in ROLES.items()
    }
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"maas_deployed": {"hosts": hosts}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_CALLBACK_PLUGINS=str(Path(__file__).parent / "callback_plugins"),
        ANSIBLE_STDOUT_CALLBACK="results_by_host",
        ANSIBLE_CALLBACKS_ENABLED="results_by_host",  # no run report: JSON only
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_GATHERING="explicit",
        RACKSMITH_RUN_DIR=str(tmp_path / "run"),
    )
    done = subprocess.run(
        [PLAYBOOK, str(REPO / "playbooks" / "configure.yml"), "-i", str(inventory),
         "--forks", "1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def test_each_host_runs_its_roles_in_its_own_order(tmp_path):
    document = _run(tmp_path)
    ran = {host: [] for host in ROLES}
    for record in document["results"]:
        role, _, name = record["task"].rpartition(" : ")
        if name == SAY:
            ran[record["host"]].append(role)
    assert ran == ROLES
