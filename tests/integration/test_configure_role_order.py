"""Each host applies its configure roles in order: racksmith's in racksmith's order, then the
site's own in its own list's order, whatever other hosts run.

Why this test exists: ``playbooks/configure.yml`` imports racksmith's roles statically (one
task list every host walks in the same order; ``racksmith_configure_roles`` only selects among
them) and applies a site's own roles (``racksmith_configure_extra_roles``, a variable list) with
``include_tasks`` in a loop. Ansible shares one included file between hosts whose loop items
look alike (ansible/ansible#36978, open): with different lists per host, a host could run a
later role before an earlier one, depending on which host's result Ansible processed first (CI
saw the driver role run before ``base`` on one host when racksmith's roles were included too).
``loop_control: extended`` makes each item carry its host's whole list, so only hosts with
identical lists share an include.

``forks=1`` makes the bad order certain without the fix: the host listed first (one role)
always reports first. Runs the real configure.yml on local hosts with racksmith's roles
deselected (each of their tasks skips, so the run also shows their order); needs no root and
no lab.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from racksmith.testing.playbook import playbook_env

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
CONFIGURE = REPO / "playbooks" / "configure.yml"

#: host -> its own roles, in inventory order: the short list first, so its include result is
#: processed first
ROLES = {
    "short": ["beta"],
    "long": ["alpha", "beta", "gamma"],
    "reversed": ["gamma", "beta", "alpha"],
}
SAY = "Say which role runs"


def _ours() -> list[str]:
    """racksmith's roles in their default order (roles/racksmith, the knobs' one home)."""
    defaults = yaml.safe_load((REPO / "roles/racksmith/defaults/main.yml").read_text())
    return defaults["racksmith_configure_roles"]


def _run(tmp_path: Path, ours: list[str], *, forks: int = 1) -> subprocess.CompletedProcess:
    for role in {r for roles in ROLES.values() for r in roles}:
        tasks = tmp_path / "roles" / role / "tasks"
        tasks.mkdir(parents=True, exist_ok=True)
        say = f"- name: {SAY}\n  ansible.builtin.debug:\n    msg: {role}\n"
        (tasks / "main.yml").write_text(say)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hosts = {
        name: {
            **local,
            "ansible_become": False,
            "racksmith_configure_roles": ours,
            "racksmith_configure_extra_roles": roles,
        }
        for name, roles in ROLES.items()
    }
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"maas_deployed": {"hosts": hosts}}))
    env = playbook_env(
        tmp_path,
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_CALLBACK_PLUGINS=str(Path(__file__).parent / "callback_plugins"),
        ANSIBLE_STDOUT_CALLBACK="results_by_host",
        ANSIBLE_CALLBACKS_ENABLED="results_by_host",  # no run report: JSON only
        ANSIBLE_GATHERING="explicit",
        RACKSMITH_RUN_DIR=str(tmp_path / "run"),
    )
    return subprocess.run(
        [PLAYBOOK, str(CONFIGURE), "-i", str(inventory), "--forks", str(forks)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_each_host_runs_its_roles_in_order(tmp_path):
    done = _run(tmp_path, [])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    document = json.loads(done.stdout)
    ran = {host: [] for host in ROLES}  # the site's roles that ran
    walked = {host: [] for host in ROLES}  # racksmith's roles whose (skipped) tasks came by
    short = {name.rpartition(".")[2]: name for name in _ours()}
    for record in document["results"]:
        role, _, name = record["task"].rpartition(" : ")
        role = role.rpartition(".")[2]
        if name == SAY:
            ran[record["host"]].append(role)
        elif role in short:
            assert record["result"].get("skipped"), record  # deselected: nothing of it ran
            if walked[record["host"]][-1:] != [short[role]]:
                walked[record["host"]].append(short[role])
    assert ran == ROLES
    # every racksmith role came by once, in racksmith's order, on every host
    assert walked == {host: _ours() for host in ROLES}


def test_the_imports_are_the_knobs_roles_in_order():
    """The static imports name exactly racksmith_configure_roles' default, in its order, each
    selected by its own name and with its own rescue that records the failure."""
    (play,) = yaml.safe_load(CONFIGURE.read_text())
    blocks = [
        t for t in play["tasks"] if "block" in t and "ansible.builtin.import_role" in t["block"][0]
    ]
    imported = [b["block"][0]["ansible.builtin.import_role"]["name"] for b in blocks]
    assert imported == _ours()
    for name, block in zip(imported, blocks, strict=True):
        assert block["when"] == f"'{name}' in racksmith_configure_roles"
        assert block["vars"] == {"racksmith_role": name}
        (rescue,) = block["rescue"]
        assert rescue["ansible.builtin.include_tasks"] == "tasks/record_failure.yml"
    known_expr = play["vars"]["racksmith_configure_known"]  # "{{ [...] | map(...) | list }}"
    known = yaml.safe_load(known_expr.replace("{{", "").split("|")[0])
    assert [f"racksmith.core.{r}" for r in known] == _ours()


def test_a_role_that_is_not_racksmiths_stops_the_phase_saying_so(tmp_path):
    done = _run(tmp_path, ["racksmith.core.base", "alpha"], forks=4)
    assert done.returncode != 0
    document = json.loads(done.stdout)
    failed = [r for r in document["results"] if r["result"].get("failed")]
    assert failed, document["results"][:3]
    assert (
        "racksmith_configure_roles names roles that are not racksmith's: alpha"
        in (failed[0]["result"]["msg"])
    )
    assert not [r for r in document["results"] if r["task"].endswith(SAY)]
