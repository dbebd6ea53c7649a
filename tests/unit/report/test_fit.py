"""The fit rule exists once: racksmith.health.golden.judge decides, and the health role (through
the racksmith.core.health_fit filter), the golden set and the run report all agree with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.health.golden import judge

REPO = Path(__file__).resolve().parents[3]
RUN = REPO / "tests" / "fixtures" / "h200-x2-run"
QUICK = json.loads((RUN / "quick.json").read_text())
LOAD = json.loads((RUN / "load-report.json").read_text())
LOAD_BAD = json.loads((RUN / "run1-load-report.json").read_text())
QUICK_BAD = {**QUICK, "verdict": "NOT FIT", "reasons": ["FAIL pcie [GPU 1]: link x4 (wants x16)"]}


@pytest.mark.parametrize(
    ("quick", "load", "kwargs", "fit", "first_reason"),
    [
        (QUICK, LOAD, {}, True, None),
        (QUICK, LOAD_BAD, {}, False, "load: "),
        (QUICK, None, {}, False, "load checks: no report"),
        (
            QUICK,
            None,
            {"load_why_not": "the run was cut short"},
            False,
            "load checks: the run was cut short",
        ),
        (QUICK, None, {"load_required": False, "load_why_not": "lab host has no GPU"}, True, None),
        (
            QUICK,
            None,
            {"load_required": False, "load_error": "load checks did not complete: x"},
            False,
            "load checks did not complete: x",
        ),
        (QUICK_BAD, None, {}, False, "quick: FAIL pcie [GPU 1]"),
        (None, None, {}, False, "quick checks: no report (host unreachable"),
        (
            {},
            None,
            {"quick_error": "health agent did not run: boom"},
            False,
            "health agent did not run: boom",
        ),
        ({"reasons": []}, None, {"load_required": False}, False, "quick: no verdict"),
        (
            QUICK,
            LOAD,
            {"failure": "unreachable: ssh timed out"},
            False,
            "failed before validation: unreachable: ssh timed out",
        ),
    ],
)
def test_judge(quick, load, kwargs, fit, first_reason):
    fitness = judge(quick, load, **kwargs)
    assert fitness.fit is fit
    assert fitness.verdict == ("FIT" if fit else "NOT FIT")
    if first_reason is None:
        assert fitness.reasons == ()
    else:
        assert fitness.reasons[0].startswith(first_reason), fitness.reasons


def test_load_state_says_why_it_is_absent():
    assert judge(QUICK, None, load_required=False, load_why_not="lab").load == "not required: lab"
    assert judge(QUICK, None).load == "not run"
    assert judge(QUICK, LOAD_BAD).load == "NOT FIT"


def test_filter_rejects_a_report_that_is_not_a_mapping():
    sys.path.insert(0, str(REPO / "plugins" / "filter"))
    try:
        from ansible.errors import AnsibleFilterError
        from fit import FilterModule
    finally:
        sys.path.pop(0)
    health_fit = FilterModule().filters()["health_fit"]
    assert health_fit(QUICK, LOAD)["verdict"] == "FIT"
    with pytest.raises(AnsibleFilterError, match="quick report must be a dict"):
        health_fit("FIT")


# One host per case, through the role's own verdict tasks, then the golden set, then the report.
_CASES = {
    "fit-full": {"quick": "quick.json", "load": "load-report.json"},
    "fit-lab": {"quick": "quick.json", "required": False, "skip": "lab host has no GPU"},
    "bad-load": {"quick": "quick.json", "load": "run1-load-report.json"},
    "no-load": {"quick": "quick.json"},
    "bad-quick": {"quick": "bad-quick.json"},
    "no-agent": {"quick_error": "health agent did not run: exec format error"},
}

_PLAYBOOK = """
- name: validate (the role's verdict tasks)
  hosts: all
  gather_facts: false
  tags: [validate]
  tasks:
    - name: Reports the quick and load steps would have fetched
      ansible.builtin.set_fact:
        health_quick: "{{ lookup('file', fetch ~ '/' ~ inventory_hostname ~ '/quick.json')
                          | from_json if case.quick is defined else {} }}"
        health_quick_error: "{{ case.quick_error | default('') }}"
        health_load: "{{ lookup('file', fetch ~ '/' ~ inventory_hostname ~ '/load-report.json')
                         | from_json if case.load is defined else {} }}"
        health_load_error: ""
        health_load_required: "{{ case.required | default(true) }}"
        health_load_skip_reason: "{{ case.skip | default('') }}"
        health_load_why_not: the quick checks did not pass
    - name: The role's verdict
      ansible.builtin.include_tasks: {verdict}
      vars:
        health_fetch_dir: "{{ fetch }}"
        health_profile: h200-x2-vm
    - name: As validate.yml records it
      ansible.builtin.set_fact:
        racksmith_health_verdict: "{{ health_verdict_said.golden_entry.verdict }}"
        racksmith_health_reasons: "{{ health_verdict_said.golden_entry.reasons }}"
        health_golden_entry: "{{ health_verdict_said.golden_entry }}"

- name: validate (the golden set)
  hosts: localhost
  gather_facts: false
  tags: [validate]
  tasks:
    - name: Verdicts the role gave
      ansible.builtin.copy:
        dest: "{{ fetch }}/verdicts.json"
        content: "{{ dict(groups['all'] | zip(groups['all'] | map('extract', hostvars,
                     'health_verdict_said'))) | to_nice_json }}"
        mode: "0644"
    - name: Golden set, as validate.yml writes it (from the entries; nothing judged again)
      ansible.builtin.copy:
        dest: "{{ run }}/{{ item.key }}"
        content: "{{ item.value }}"
        mode: "0644"
      loop: "{{ dict(groups['all'] | zip(groups['all'] | map('extract', hostvars)))
                | racksmith.core.golden_inputs | racksmith.core.golden_set(run_id='t')
                | racksmith.core.golden_files | dict2items }}"
"""


def test_role_golden_set_and_report_give_one_verdict(tmp_path):
    fetch, run = tmp_path / "fetch", tmp_path / "run"
    inventory = {"all": {"hosts": {}}}
    for host, case in _CASES.items():
        folder = fetch / host
        folder.mkdir(parents=True)
        if case.get("quick") == "bad-quick.json":
            (folder / "quick.json").write_text(json.dumps(QUICK_BAD))
        elif case.get("quick"):
            (folder / "quick.json").write_text((RUN / case["quick"]).read_text())
        if case.get("load"):
            (folder / "load-report.json").write_text((RUN / case["load"]).read_text())
        inventory["all"]["hosts"][host] = {"case": case}
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))
    verdict = REPO / "roles" / "health" / "tasks" / "verdict.yml"
    (tmp_path / "play.yml").write_text(_PLAYBOOK.replace("{verdict}", str(verdict)))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        RACKSMITH_RUN_DIR=str(run),
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    )
    proc = subprocess.run(
        [
            "ansible-playbook",
            str(tmp_path / "play.yml"),
            "-i",
            str(tmp_path / "inventory.json"),
            "-c",
            "local",
            "-e",
            f"fetch={fetch} run={run}",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]

    said = json.loads((fetch / "verdicts.json").read_text())
    role = {host: result["golden_entry"] for host, result in said.items()}
    # the line the role says, as the debug task it replaced said it (shown without -v)
    assert said["fit-lab"]["msg"] == "fit-lab: FIT (profile " + QUICK["profile"]["name"] + ")"
    assert said["bad-quick"]["msg"] == (
        "bad-quick: NOT FIT (profile "
        + QUICK["profile"]["name"]
        + ") "
        + "; ".join(role["bad-quick"]["reasons"])
    )
    assert said["no-agent"]["msg"] == (
        "no-agent: NOT FIT (profile h200-x2-vm) health agent did not run: exec format error"
    )
    assert "fit-lab: FIT (profile " in proc.stdout
    golden = json.loads((run / "golden-set.json").read_text())
    report = json.loads((run / "report.json").read_text())
    fit = {"fit-full", "fit-lab"}
    assert {h for h, v in role.items() if v["fit"]} == fit
    assert set(golden["golden"]) == fit
    assert set(report["golden"]) == fit
    for host in _CASES:
        # the same reasons, word for word, from the role and from the golden set
        assert role[host]["reasons"] == golden["hosts"][host]["reasons"], host
        assert report["hosts"][host]["result"] == ("GOLDEN" if host in fit else "NOT_FIT"), host
    assert golden["hosts"]["fit-lab"]["load"] == "not required: lab host has no GPU"
    assert role["no-load"]["reasons"] == ["load checks: the quick checks did not pass"]
