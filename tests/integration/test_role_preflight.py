"""racksmith.core.role_preflight does a role's whole preflight in one task (issue 25): it gathers
the facts only when missing, counts the PCI bus only when no earlier role counted it under the
same root, evaluates the role's lazy variables with what it found, fails with every problem
before the probe runs, returns the probe as ansible.builtin.command would under the task's
register name, and says a skip as racksmith.core.role_skip does.

Run for real with ansible-playbook on local hosts (no root, no lab): a small role in a temporary
roles path, a PCI tree built from the recorded HGX H200 bus (tests/fixtures), and the facts
either there already or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.testing.playbook import playbook_env

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")

#: The role's lazy variables read what the preflight finds (facts, PCI counts, the probe).
ROLE_VARS = """\
_demo_problems: >-
  {{ ([] if ansible_facts.os_family | default('') != '' else ['no os_family fact'])
     + (['demo_bad is set'] if demo_bad | default(false) | bool else []) }}
_demo_argv: "{{ ['sh', '-c', 'echo family=$1', 'sh', ansible_facts.os_family] }}"
_demo_skip: >-
  {{ 'no NVIDIA GPU on the PCI bus' if ansible_facts.racksmith_pci_counts.gpu == 0
     else ('probe said ' ~ _demo_read.stdout if demo_skip_on_probe | default(false) | bool
     else '') }}
_demo_said: "{{ ansible_facts.racksmith_pci_counts.gpu }} GPUs under {{ demo_root }}"
"""

ROLE_TASKS = """\
- name: Preflight | Facts, the PCI bus, the inputs and the host
  racksmith.core.role_preflight:
    pci_root: "{{ demo_root }}"
    problems: _demo_problems
    probe: _demo_argv
    skip: _demo_skip
    say: _demo_said
  register: _demo_read
  check_mode: false
- name: Keep what the role saw
  ansible.builtin.copy:
    dest: "{{ demo_out }}/{{ inventory_hostname }}.json"
    content: >-
      {{ {'read': _demo_read, 'facts': ansible_facts | dict2items | map(attribute='key') | list,
          'counts': ansible_facts.racksmith_pci_counts} | to_json }}
    mode: "0644"
  delegate_to: localhost
"""

PLAY = """\
- name: Preflight in one task
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: demo
"""


def _sysfs(root: Path, gpus: int) -> Path:
    """A sysfs PCI tree with ``gpus`` NVIDIA 3D controllers and one Mellanox InfiniBand HCA."""
    devices = root / "bus" / "pci" / "devices"
    functions = [("0x10de", "0x030200")] * gpus + [("0x15b3", "0x020700")]
    for n, (vendor, cls) in enumerate(functions):
        dev = devices / f"0000:{n + 0x10:02x}:00.0"
        dev.mkdir(parents=True)
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(cls + "\n")
    return root


def _setup(tmp_path: Path, hostvars: dict[str, dict]) -> Path:
    """The demo role, the inventory of local hosts and the folder the role keeps results in."""
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True)
    (role / "vars").mkdir()
    (role / "tasks" / "main.yml").write_text(ROLE_TASKS)
    (role / "vars" / "main.yml").write_text(ROLE_VARS)
    out = tmp_path / "out"
    out.mkdir()
    local = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "demo_out": str(out),
    }
    hosts = {name: {**local, **extra} for name, extra in hostvars.items()}
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"hosts": hosts}}))
    return out


def _play(tmp_path: Path, play: str) -> tuple[int, str, dict[str, list[dict]]]:
    """Run ``play``; the return code, stdout and each host's preflight results in order."""
    path = tmp_path / "play.yml"
    path.write_text(play)
    env = playbook_env(
        tmp_path,
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_CALLBACKS_ENABLED="template_cache",  # no run report for a test play
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
    )
    done = subprocess.run(
        [PLAYBOOK, str(path), "-i", str(tmp_path / "hosts.json"), "--forks", "4"],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(done.stdout[-3000:] + done.stderr[-3000:])
    results: dict[str, list[dict]] = {}
    for play_ in document["plays"]:
        for task in play_["tasks"]:
            if task["task"]["name"].rpartition(" : ")[2].startswith("Preflight"):
                for host, result in task["hosts"].items():
                    results.setdefault(host, []).append(result)
    return done.returncode, done.stdout, results


def test_one_task_gathers_counts_checks_probes_and_says(tmp_path: Path) -> None:
    gpus = str(_sysfs(tmp_path / "gpus", 8))
    none = str(_sysfs(tmp_path / "none", 0))
    out_dir = _setup(
        tmp_path,
        {
            "gpu-host": {"demo_root": gpus},
            "no-gpu": {"demo_root": none},
            "bad-input": {"demo_root": gpus, "demo_bad": True},
            "skip-by-probe": {"demo_root": gpus, "demo_skip_on_probe": True},
        },
    )
    rc, out, results = _play(tmp_path, PLAY)
    assert rc == 2, out[-3000:]  # bad-input fails, the others go on
    pre = {host: found for host, (found,) in results.items()}
    kept = {p.stem: json.loads(p.read_text()) for p in out_dir.glob("*.json")}
    # facts were missing: gathered in the same task, and the probe saw them
    gpu = pre["gpu-host"]
    assert "ansible_os_family" in gpu["ansible_facts"]  # as setup returns them
    assert gpu["ansible_facts"]["racksmith_pci_counts"]["gpu"] == 8
    assert gpu["ansible_facts"]["racksmith_pci_counts"]["root"] == gpus
    family = gpu["ansible_facts"]["ansible_os_family"]
    assert gpu["stdout"] == f"family={family}" and gpu["rc"] == 0
    assert gpu["msg"] == f"8 GPUs under {gpus}" and not gpu.get("changed")
    assert "racksmith_skip" not in gpu
    # later tasks read what it found: the facts and the counts, and the registered probe
    assert {"os_family", "racksmith_pci_counts"} <= set(kept["gpu-host"]["facts"])
    assert kept["gpu-host"]["read"]["stdout"] == f"family={family}"
    # a skip reason from the PCI counts, as role_skip says it
    assert pre["no-gpu"]["racksmith_skip"] == {
        "role": "demo",
        "part": "all",
        "reason": "no NVIDIA GPU on the PCI bus",
    }
    assert pre["no-gpu"]["msg"] == "demo skipped: no NVIDIA GPU on the PCI bus"
    # a skip reason that reads the probe's result under the task's register name
    assert pre["skip-by-probe"]["racksmith_skip"]["reason"] == f"probe said family={family}"
    # every problem fails the task, before the probe runs
    bad = pre["bad-input"]
    assert bad["failed"] and bad["msg"] == "demo_bad is set"
    assert "stdout" not in bad and "bad-input" not in kept


def test_facts_and_counts_already_there_are_not_read_again(tmp_path: Path) -> None:
    """A host whose earlier role left the facts and the counts for the same root: nothing is
    gathered or counted again (a root the counts were not read under is counted)."""
    gpus = str(_sysfs(tmp_path / "gpus", 2))
    other = str(_sysfs(tmp_path / "other", 0))
    _setup(tmp_path, {
        "same-root": {"demo_root": gpus},
        "new-root": {"demo_root": gpus, "demo_root2": other},
    })  # fmt: skip
    # the role twice in one play; between the runs, new-root's role reads another tree
    rc, out, got = _play(tmp_path, PLAY.replace(
        "    - name: The role\n",
        "    - name: First run\n"
        "      ansible.builtin.include_role:\n"
        "        name: demo\n"
        "    - name: Another root for the second run\n"
        "      ansible.builtin.set_fact:\n"
        "        demo_root: \"{{ demo_root2 | default(demo_root) }}\"\n"
        "    - name: The role\n",
    ))  # fmt: skip
    assert rc == 0, out[-3000:]
    first, second = got["same-root"]
    assert {"ansible_os_family", "racksmith_pci_counts"} <= set(first["ansible_facts"])
    assert "ansible_facts" not in second  # nothing new: the same facts, the same root
    assert second["msg"] == f"2 GPUs under {gpus}"
    first, second = got["new-root"]
    assert set(second["ansible_facts"]) == {"racksmith_pci_counts"}  # facts kept, bus re-read
    assert second["racksmith_skip"]["reason"] == "no NVIDIA GPU on the PCI bus"
