"""A playbook gives the same results with the compiled-template cache as without it
(plugins/callback/template_cache.py, issue 25): role defaults read lazily, loops, conditionals
with filters and tests, set_fact, a lookup, a failing task's message, forked workers for
several hosts at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from racksmith.testing.playbook import playbook_env

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

ROLE_DEFAULTS = """\
probe_sizes: "{{ [probe_base, probe_base * 2, probe_base * 3] }}"
probe_label: "{{ inventory_hostname | upper }}-{{ probe_sizes | sum }}"
probe_base: 4
"""
ROLE_TASKS = """\
- name: Say the label
  ansible.builtin.debug:
    msg: "{{ probe_label }}"
- name: Each size over the first
  ansible.builtin.debug:
    msg: "{{ item }} of {{ probe_sizes | length }}"
  loop: "{{ probe_sizes }}"
  when: item > probe_sizes | first
"""
PLAY = """\
- name: Templates of every kind, on several hosts at once
  hosts: all
  gather_facts: false
  vars:
    path: 'C:\\\\new'
  roles:
    - probe
  tasks:
    - name: A fact from a filter chain
      ansible.builtin.set_fact:
        names: "{{ groups['all'] | map('regex_replace', '^h', 'host-') | list }}"
    - name: A conditional with a test and a lookup
      ansible.builtin.debug:
        msg: >-
          {{ lookup('ansible.builtin.env', 'HOME') | length > 0 }}
          {{ path | regex_replace('\\\\\\\\', '/') }}
      when: names is defined and inventory_hostname is match('h[0-9]')
    - name: A failure says its own message
      ansible.builtin.fail:
        msg: "{{ inventory_hostname }} fails with {{ names | length }} names"
      when: inventory_hostname == 'h2'
"""


def run(tmp_path: Path, callbacks: str) -> dict:
    roles = tmp_path / "roles" / "probe"
    (roles / "defaults").mkdir(parents=True, exist_ok=True)
    (roles / "tasks").mkdir(parents=True, exist_ok=True)
    (roles / "defaults" / "main.yml").write_text(ROLE_DEFAULTS)
    (roles / "tasks" / "main.yml").write_text(ROLE_TASKS)
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": {f"h{n}": local for n in (1, 2, 3)}}}))
    env = playbook_env(
        tmp_path,
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_CALLBACK_PLUGINS=os.pathsep.join(
            [str(Path(__file__).parent / "callback_plugins"), str(REPO / "plugins" / "callback")]
        ),
        ANSIBLE_STDOUT_CALLBACK="results_by_host",
        ANSIBLE_CALLBACKS_ENABLED=callbacks,
    )
    done = subprocess.run(
        [PLAYBOOK, str(play), "-i", str(inventory), "--forks", "3"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]  # h2 fails
    assert "template_cache is off" not in done.stderr
    return json.loads(done.stdout)


def outcome(document: dict) -> list:
    return sorted(
        (
            r["host"],
            r["task"],
            json.dumps(
                {k: r["result"].get(k) for k in ("msg", "skipped", "failed", "results")},
                sort_keys=True,
            ),
        )
        for r in document["results"]
    )


def test_the_same_results_with_the_cache_as_without(tmp_path):
    plain = outcome(run(tmp_path / "plain", "results_by_host"))
    cached = outcome(run(tmp_path / "cached", "results_by_host,template_cache"))
    assert cached == plain
    said = {(host, task): result for host, task, result in plain}
    assert json.loads(said[("h1", "probe : Say the label")])["msg"] == "H1-24"
    assert "h2 fails with 3 names" in said[("h2", "A failure says its own message")]
    assert '"True C:/new"' in said[("h3", "A conditional with a test and a lookup")]


def test_the_workers_compile_nothing_the_main_process_did_not(tmp_path):
    """Each task's templates, its role's variables and the play's are compiled before the
    task's workers fork: the run's shared directory holds no more than the main process
    compiled (``-vv`` prints both counts at the end)."""
    roles = tmp_path / "roles" / "probe"
    run(tmp_path, "results_by_host")  # writes the role, the play and the inventory
    env = playbook_env(
        tmp_path,
        ANSIBLE_ROLES_PATH=str(roles.parent),
        ANSIBLE_CALLBACKS_ENABLED="template_cache",
    )
    done = subprocess.run(
        [PLAYBOOK, str(tmp_path / "play.yml"), "-i", str(tmp_path / "hosts.json"), "-vv",
         "--forks", "3"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    said = [line for line in done.stdout.splitlines() if line.startswith("template_cache:")]
    assert len(said) == 1, done.stdout[-3000:]
    shared, _, mine = said[0].partition(";")
    compiled_for_workers = int(shared.split()[1])
    compiled_here = int(mine.split()[-2])
    assert compiled_for_workers > 10  # the play's templates, not an empty directory
    assert compiled_for_workers == compiled_here, said[0]
