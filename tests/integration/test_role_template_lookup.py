"""racksmith.core.role_template renders what ansible.builtin.template's lookup renders (the
roles' verify-first steps compare its sha1 with the file the template module wrote), without
deep-copying the host's variables (issue 25), and what it adds for the render never reaches the
host's variables.

Run for real with ansible-playbook on a local host: a role whose template reads the host's
facts, a play variable, a loop variable and what the lookup adds (``ansible_managed``,
``template_path``), rendered by both lookups and by the template module.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from racksmith.testing.playbook import playbook_env

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

TEMPLATE = """\
# {{ ansible_managed }} (role demo)
host {{ inventory_hostname }}, {{ ansible_facts.os_family | default('no facts') }}
{% for name in servers %}
server {{ name }} iburst
{% endfor %}
item {{ item | default('none') }} from {{ template_path | basename }}
"""

TASKS = """\
- name: Render with both lookups and with the template module, in a loop
  ansible.builtin.set_fact:
    rendered: >-
      {{ rendered | default([]) + [{'item': item,
          'core': lookup('ansible.builtin.template', 'demo.conf.j2'),
          'ours': lookup('racksmith.core.role_template', 'demo.conf.j2')}] }}
  loop: [a, b]
- name: Write it as a role does
  ansible.builtin.template:
    src: demo.conf.j2
    dest: "{{ out }}/written.conf"
    mode: "0644"
- name: Keep what was rendered, and whether the lookup's own variables leaked
  ansible.builtin.copy:
    dest: "{{ out }}/rendered.json"
    content: >-
      {{ {'rendered': rendered, 'leaked': template_path is defined or template_fullpath is defined,
          'written_sha1': lookup('racksmith.core.role_template', 'demo.conf.j2') | hash('sha1')}
         | to_json }}
    mode: "0644"
"""


def test_the_same_render_without_a_copy(tmp_path: Path) -> None:
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True)
    (role / "templates").mkdir()
    (role / "tasks" / "main.yml").write_text(TASKS)
    (role / "templates" / "demo.conf.j2").write_text(TEMPLATE)
    out = tmp_path / "out"
    out.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: all\n  gather_facts: true\n  gather_subset: [min]\n"
        "  vars: {servers: [ntp1, ntp2]}\n  roles: [demo]\n"
    )
    env = playbook_env(
        tmp_path,
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_CALLBACKS_ENABLED="template_cache",
    )
    done = subprocess.run(
        [PLAYBOOK, str(play), "-i", "here,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"out={out}"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    kept = json.loads((out / "rendered.json").read_text())
    assert [r["item"] for r in kept["rendered"]] == ["a", "b"]
    for render in kept["rendered"]:
        assert render["ours"] == render["core"]
        assert f"item {render['item']} from demo.conf.j2" in render["ours"]
        assert "server ntp2 iburst" in render["ours"] and "no facts" not in render["ours"]
    assert not kept["leaked"]  # ansible_managed, template_path: the render's, not the host's
    # what the verify-first step compares: the sha1 of the file the template module wrote
    written = (out / "written.conf").read_bytes()
    assert hashlib.sha1(written).hexdigest() == kept["written_sha1"]  # noqa: S324 (as sha1sum)
