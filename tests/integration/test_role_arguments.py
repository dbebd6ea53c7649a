"""racksmith.core.role_arguments checks a host's inputs against several roles' argument specs
in one task, and finds exactly what ansible-core's own per-role check finds (issue 25: one task
per host in configure.yml instead of seven). Run with racksmith's real roles and specs, on three
hosts with different inputs, beside ansible.builtin.validate_argument_spec fed each role's spec
as ansible-core feeds it when it imports a role."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from racksmith.testing.playbook import playbook_env

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
ROLES = ["racksmith.core.base", "racksmith.core.container_runtime", "racksmith.core.dcgm"]
PLAY = """\
- name: One check for every role, beside ansible-core's own per role
  hosts: all
  gather_facts: false
  tasks:
    - name: All roles at once
      racksmith.core.role_arguments:
        roles: {roles}
      register: together
      ignore_errors: true
    - name: Each role as ansible-core checks it
      ansible.builtin.validate_argument_spec:
        argument_spec: >-
          {{{{ (lookup('ansible.builtin.file', item.spec) | from_yaml)
               .argument_specs.main.options }}}}
      loop: {specs}
      register: apart
      ignore_errors: true
    - name: Keep both
      ansible.builtin.copy:
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        content: "{{{{ {{'together': together, 'apart': apart.results}} | to_json }}}}"
        mode: "0644"
      delegate_to: localhost
"""


def run(tmp_path: Path, hostvars: dict[str, dict]) -> dict[str, dict]:
    specs = [
        {
            "role": r,
            "spec": str(REPO / "roles" / r.rpartition(".")[2] / "meta" / "argument_specs.yml"),
        }
        for r in ROLES
    ]
    # the roles' defaults under every host's own values, as configure.yml's imports give them
    defaults: dict = {}
    for role in ROLES:
        path = REPO / "roles" / role.rpartition(".")[2] / "defaults" / "main.yml"
        defaults.update(yaml.safe_load(path.read_text()))
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(roles=json.dumps(ROLES), specs=json.dumps(specs), out=tmp_path))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.json"
    hosts = {name: {**local, **extra} for name, extra in hostvars.items()}
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": defaults}}))
    env = playbook_env(
        tmp_path,
        ANSIBLE_CALLBACKS_ENABLED="template_cache",  # no run report for a test play
    )
    done = subprocess.run(
        [PLAYBOOK, str(play), "-i", str(inventory), "--forks", "3"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in hostvars}


def test_same_findings_as_ansible_cores_own_check(tmp_path: Path) -> None:
    found = run(
        tmp_path,
        {
            "good": {},
            "bad_base": {"base_sysctl": "not-a-dict", "base_cpu_governor": "turbo"},
            "bad_two": {"container_runtime_hold": "maybe", "dcgm_exporter_fields": 7},
        },
    )
    good = found["good"]["together"]
    assert not good.get("failed"), good
    assert good["roles_checked"] == ROLES
    assert all(not r.get("failed") for r in found["good"]["apart"])
    for host in ("bad_base", "bad_two"):
        together = found[host]["together"]
        assert together["failed"], together
        apart = {
            r["item"]["role"]: r["argument_errors"] for r in found[host]["apart"] if r.get("failed")
        }
        assert apart, f"{host}: ansible-core's own check found nothing"
        # the same errors, role by role, and the message names each
        assert together["argument_errors"] == apart
        for role, errors in apart.items():
            for error in errors:
                assert f"role {role}: {error}" in together["msg"]
    assert set(found["bad_base"]["together"]["argument_errors"]) == {"racksmith.core.base"}
    assert set(found["bad_two"]["together"]["argument_errors"]) == {
        "racksmith.core.container_runtime",
        "racksmith.core.dcgm",
    }


def test_every_configure_import_skips_ansibles_own_check_and_the_play_checks_them() -> None:
    """configure.yml: each racksmith role import says rolespec_validate: false, and the play's
    one check runs before the first role, over the roles the host selects."""
    play = yaml.safe_load((REPO / "playbooks" / "configure.yml").read_text())[0]
    imports = [
        t["block"][0]["ansible.builtin.import_role"]
        for t in play["tasks"]
        if "block" in t and "ansible.builtin.import_role" in t["block"][0]
    ]
    assert len(imports) == 7
    assert all(i["rolespec_validate"] is False for i in imports)
    first_role = next(n for n, t in enumerate(play["tasks"]) if t["name"].startswith("Role "))
    check = [n for n, t in enumerate(play["tasks"]) if "argument specs" in t["name"]]
    assert check and check[0] < first_role
    task = play["tasks"][check[0]]["block"][0]
    assert task["racksmith.core.role_arguments"]["roles"] == "{{ racksmith_configure_roles }}"
