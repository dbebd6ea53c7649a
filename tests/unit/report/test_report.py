"""The rack report: phase outcomes, final results, redaction, and the Ansible callback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.report import RunReport

REPO = Path(__file__).resolve().parents[3]


def make_report() -> RunReport:
    return RunReport(run_id="r1", run_dir="/tmp/r1", started="2026-11-30T00:00:00Z")


def test_phase_state_takes_the_worst_status():
    report = make_report()
    for status in ("ok", "changed", "skipped"):
        report.record("h1", "configure", status)
    assert report.hosts["h1"].phases["configure"].state == "changed"
    report.record("h1", "configure", "failed", "apt said no")
    assert report.hosts["h1"].phases["configure"].state == "failed"
    assert report.hosts["h1"].result == "FAILED:configure"


def test_only_first_failure_message_is_kept_and_whitespace_folded():
    report = make_report()
    report.record("h1", "deploy", "failed", "first\n   line")
    report.record("h1", "deploy", "failed", "second")
    assert report.hosts["h1"].phases["deploy"].reason == "first line"


def test_unknown_status_is_rejected():
    with pytest.raises(ValueError, match="bogus"):
        make_report().record("h1", "deploy", "bogus")


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # a health fact alone decides nothing: only the golden set does (issue 24)
        ({"racksmith_health_verdict": "FIT"}, "INCOMPLETE"),
        ({"racksmith_quarantine_reason": "7 of 8 GPUs"}, "QUARANTINED"),
        ({"racksmith_failed_phase": "deploy", "racksmith_failure_reason": "x"}, "FAILED:deploy"),
        ({}, "INCOMPLETE"),
    ],
)
def test_result_follows_host_facts(facts, expected):
    report = make_report()
    report.record("h1", "discover", "ok")
    report.annotate("h1", facts)
    assert report.hosts["h1"].result == expected


@pytest.mark.parametrize(("verdict", "expected"), [("FIT", "GOLDEN"), ("NOT FIT", "NOT_FIT")])
def test_result_follows_the_golden_set(verdict, expected):
    report = make_report()
    report.record("h1", "discover", "ok")
    report.annotate("h1", {"racksmith_health_verdict": "FIT"})  # the golden set wins
    report.attach_golden({"hosts": {"h1": {"verdict": verdict, "reasons": []}}})
    assert report.hosts["h1"].result == expected


def test_text_table_lists_every_host_with_reasons_and_json_matches():
    report = make_report()
    report.record("a", "discover", "ok")
    report.record("b", "discover", "unreachable", "BMC 10.0.0.2:443 timed out")
    report.attach_golden({"hosts": {"a": {"verdict": "FIT", "reasons": []}}})
    text = report.render_text()
    assert "a  " in text and "GOLDEN" in text
    assert "b: discover: BMC 10.0.0.2:443 timed out" in text
    data = json.loads(report.to_json())
    assert data["hosts"]["b"]["result"] == "FAILED:discover"
    assert data["summary"] == {"FAILED:discover": 1, "GOLDEN": 1}


def test_callback_writes_report_in_its_own_run_dir_without_secrets(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        """
- name: preflight
  hosts: localhost
  gather_facts: false
  tags: [preflight]
  tasks:
    - name: a controller-side check (site.yml's preflight, discovery summary, golden set)
      ansible.builtin.debug:
        msg: controller ok
- name: discover
  hosts: all
  gather_facts: false
  tags: [discover]
  tasks:
    - name: fail one host with a secret in the message
      ansible.builtin.fail:
        msg: "BMC refused {{ lookup('env', 'RACKSMITH_BMC_PASSWORD') }}"
      when: inventory_hostname == 'b'
    - name: quarantine another
      ansible.builtin.set_fact:
        racksmith_quarantine_reason: "expected 8 GPUs, BMC reports 7 (Video.Slot.1-1)"
      when: inventory_hostname == 'c'
- name: validate
  hosts: all:!b:!c
  gather_facts: false
  tags: [validate]
  tasks:
    - name: verdict (what the health role's golden_entry gives a FIT host)
      ansible.builtin.set_fact:
        racksmith_health_verdict: FIT
        health_golden_entry: >-
          {{ {'verdict': 'FIT'} | racksmith.core.golden_entry(host=inventory_hostname,
             fitness=({'verdict': 'FIT'} | racksmith.core.health_fit(load_required=false))) }}
- name: golden set
  hosts: localhost
  gather_facts: false
  tags: [validate]
  tasks:
    - name: write it as validate.yml does
      ansible.builtin.copy:
        dest: "{{ lookup('env', 'RACKSMITH_RUN_DIR') }}/{{ item.key }}"
        content: "{{ item.value }}"
        mode: "0644"
      loop: "{{ {'a': hostvars['a']} | racksmith.core.golden_inputs
                | racksmith.core.golden_set | racksmith.core.golden_files | dict2items }}"
"""
    )
    run_dir = tmp_path / "run"
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        RACKSMITH_RUN_DIR=str(run_dir),
        RACKSMITH_BMC_PASSWORD="pw-that-must-not-leak",
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    )
    proc = subprocess.run(
        ["ansible-playbook", str(playbook), "-i", "a,b,c,", "-c", "local"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr  # host b failed
    assert "RACKSMITH REPORT" in proc.stdout
    data = json.loads((run_dir / "report.json").read_text())
    assert {h: r["result"] for h, r in data["hosts"].items()} == {
        "a": "GOLDEN",
        "b": "FAILED:discover",
        "c": "QUARANTINED",
    }  # the controller is none of the hosts (it was listed as INCOMPLETE)
    assert data["controller"]["result"] == "OK"
    assert data["controller"]["phases"]["preflight"]["ok"] == 1
    assert data["hosts"]["c"]["triage"]["cause"] == "gpu_missing"
    assert data["hosts"]["b"]["triage"]["ticket"] == "tickets/b.md"
    written = [run_dir / n for n in ("report.json", "report.txt", "report.html", "report.prom")]
    written += sorted((run_dir / "tickets").iterdir())
    assert [p.name for p in written[4:]] == ["b.json", "b.md", "c.json", "c.md"]
    for path in written:
        assert "pw-that-must-not-leak" not in path.read_text(), path
    history = (tmp_path / "history.jsonl").read_text().splitlines()
    assert len(history) == 1 and json.loads(history[0])["hosts"]["a"] == {"result": "GOLDEN"}


def test_phase_verdict_wins_over_task_counts_and_reasons_are_not_repeated():
    report = make_report()
    report.record("bmc-1", "discover", "ok")
    report.annotate(
        "bmc-1",
        {"racksmith_failed_phase": "discover", "racksmith_failure_reason": "401 from BMC"},
    )
    report.record("q1", "discover", "changed")
    report.annotate(
        "q1",
        {
            "racksmith_quarantine_reason": "7 of 8 GPUs",
            "racksmith_failed_phase": "discover",
            "racksmith_failure_reason": "7 of 8 GPUs",
        },
    )
    assert report.hosts["bmc-1"].cell("discover") == "FAILED"
    assert report.hosts["bmc-1"].cell("deploy") == "-"
    assert report.hosts["q1"].reasons == ["quarantined: 7 of 8 GPUs"]
    assert "FAILED" in report.render_text().splitlines()[1 + 1]


def test_a_reason_quoted_inside_another_is_listed_once():
    report = make_report()
    report.record("h1", "deploy", "failed", "h1: deploy failed: curtin: no space")
    facts = {"racksmith_failed_phase": "deploy", "racksmith_failure_reason": "curtin: no space"}
    report.annotate("h1", facts)
    assert report.hosts["h1"].reasons == ["deploy: curtin: no space"]


def test_annotate_keeps_bmc_identity_and_maas_triage_redacted(monkeypatch):
    monkeypatch.setenv("MAAS_API_KEY", "consumer:token-that-must-not-leak:secret")
    report = make_report()
    report.annotate(
        "h1",
        {
            "racksmith_failed_phase": "deploy",
            "racksmith_failure_reason": "deploy failed",
            "redfish_service_tag": "ABC1234",
            "redfish_bmc": "10.1.0.7:443",
            "redfish_gpus": [{"id": "GPU1"}, {"id": "GPU2"}],
            "redfish_nics": "not a list",
            "racksmith_maas_deploy": {
                "failed": True,
                "triage": {
                    "cause": "curtin failed",
                    "status_name": "Failed deployment",
                    "events": ["ERROR token-that-must-not-leak rejected"],
                    "log_tail": ["a", "b"],
                },
            },
        },
    )
    rec = report.hosts["h1"]
    assert rec.facts == {"service_tag": "ABC1234", "bmc": "10.1.0.7:443", "gpu_count": 2}
    assert rec.maas["cause"] == "curtin failed" and rec.maas["status"] == "Failed deployment"
    assert "token-that-must-not-leak" not in json.dumps(rec.maas)
    data = json.loads(report.to_json())
    assert data["hosts"]["h1"]["maas"]["log_tail"] == ["a", "b"]
    assert RunReport.from_dict(data).hosts["h1"].maas == rec.maas


def test_every_host_of_a_phase_is_listed_when_its_tasks_run_once(tmp_path):
    """A phase whose decisions run once for all its hosts (run_once: discover's judgements,
    enlist's batch) gives the other hosts no result of their own; the report still lists each
    host of the play (issue 25), with no result counted for it."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        """
- name: discover
  hosts: all
  gather_facts: false
  tags: [discover]
  tasks:
    - name: judge every server at once
      ansible.builtin.debug:
        msg: judged
      run_once: true
"""
    )
    run_dir = tmp_path / "run"
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        RACKSMITH_RUN_DIR=str(run_dir),
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    )
    proc = subprocess.run(
        ["ansible-playbook", str(playbook), "-i", "a,b,c,", "-c", "local", "--limit", "a,b"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hosts = json.loads((run_dir / "report.json").read_text())["hosts"]
    assert sorted(hosts) == ["a", "b"]  # c is outside --limit: not in the play
    assert hosts["a"]["phases"]["discover"]["ok"] == 1
    assert hosts["b"]["phases"] == {}  # judged with a, no result of its own
