"""The Done-when of issue 3, end to end: ``ansible-inventory --graph`` on the lab inventory file
against a running emulated rack, and ``playbooks/discover.yml`` on top of it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FAULT_RACK = HERE / "rack-faults.yml"


def _unsafe_as_plain(obj: dict):
    """ansible-inventory --list writes untrusted strings as {"__ansible_unsafe": value}."""
    return obj["__ansible_unsafe"] if set(obj) == {"__ansible_unsafe"} else obj


def _listing(rack) -> dict:
    done = rack.run("ansible-inventory", "-i", str(rack.inventory), "--list")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout, object_hook=_unsafe_as_plain)


def _host_of(listing: dict, port: int) -> str:
    return next(
        h
        for h, v in listing["_meta"]["hostvars"].items()
        if v["redfish_bmc"] == f"127.0.0.1:{port}"
    )


def test_lab_rack_graph(running_rack):
    """inventory/lab/rack.yml as shipped: healthy hosts with facts, faulty BMCs by group."""
    graph = running_rack.run("ansible-inventory", "-i", str(running_rack.inventory), "--graph")
    assert graph.returncode == 0, graph.stderr
    print(graph.stdout)
    listing = _listing(running_rack)
    hostvars = listing["_meta"]["hostvars"]
    for bmc in running_rack.state["bmcs"]:
        host = _host_of(listing, bmc["port"])
        facts = hostvars[host]
        in_ok = host in listing["bmc_ok"]["hosts"]
        if "bmc_unreachable" in bmc["faults"]:
            assert (
                host in listing["bmc_unreachable"]["hosts"] and "refused" in facts["redfish_error"]
            )
        elif "bmc_auth_failed" in bmc["faults"]:
            assert host in listing["bmc_auth_failed"]["hosts"] and "401" in facts["redfish_error"]
        else:
            assert in_ok and facts["redfish_error"] is None
            assert host == facts["redfish_service_tag"].lower() and host in graph.stdout
            assert facts["redfish_pxe_mac"].startswith("02:5a:"), (bmc["model"], facts)
            gpus = {"r750-h100pcie": 1, "hpe-dl385g10p": 0}.get(bmc["model"], 8)
            expected = gpus - 1 if "missing_gpu" in bmc["faults"] else gpus
            assert len(facts["redfish_gpus"]) == expected, (bmc["model"], facts["redfish_gpus"])


@pytest.mark.parametrize("running_rack", [FAULT_RACK], indirect=True)
def test_every_fault_in_its_group_with_a_reason(running_rack):
    listing = _listing(running_rack)
    hostvars = listing["_meta"]["hostvars"]
    expected = {
        "ok01": ("bmc_ok", None),
        "ok02": ("bmc_ok", None),
        "gpu03": ("bmc_ok", None),  # the BMC is fine; triage quarantines it
        "flaky04": ("bmc_ok", None),  # 503 RAC0218 twice, then a session: backoff rode it out
        "nics05": ("bmc_ok", None),  # empty EthernetInterfaces: MACs from NetworkDeviceFunctions
        "clock06": ("bmc_ok", None),
        "dead07": ("bmc_unreachable", r"refused"),
        "auth08": ("bmc_auth_failed", r"HTTP 401"),
        "slow09": ("bmc_timeout", r"no answer"),
        "hang10": ("bmc_timeout", r"no answer"),
        "busy11": ("bmc_unreachable", r"RAC0218"),
        "reset12": ("bmc_unreachable", r"reset"),
        "bad13": ("bmc_malformed", r"not a JSON object"),
        "empty14": ("bmc_malformed", r"Systems collection is empty"),
    }
    for name, (group, reason) in expected.items():
        host = _host_of(listing, running_rack.port(name))
        assert host in listing[group]["hosts"], (name, group)
        error = hostvars[host]["redfish_error"]
        assert (error is None) if reason is None else re.search(reason, error), (name, error)


@pytest.mark.parametrize("running_rack", [FAULT_RACK], indirect=True)
def test_discover_playbook_quarantines_and_fixes_clocks(running_rack):
    done = running_rack.run(
        "ansible-playbook",
        "-i",
        str(running_rack.inventory),
        "playbooks/discover.yml",
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    listing = _listing(running_rack)
    missing = _host_of(listing, running_rack.port("gpu03"))
    summary = " ".join(report["plays"][-1]["tasks"][-1]["hosts"]["localhost"]["msg"].split())
    assert f"{missing}: expected 8 GPUs, BMC reports 7" in summary
    assert "5 server(s) go on" in summary
    # a BMC that refuses to have its clock set is quarantined with that reason, not enlisted
    locked = _host_of(listing, running_rack.port("clock15"))
    refused = rf"{locked}: BMC clock could not be checked or set: .*HTTP 400"
    assert re.search(refused, summary), summary
    assert "RAC0218" in summary and "HTTP 401" in summary  # failed BMCs listed with reasons
    stats = report["stats"]
    assert all(s["failures"] == 0 and s["unreachable"] == 0 for s in stats.values())
    # the skewed BMC clock was corrected through Redfish: read it back with the CLI
    check = running_rack.run(
        "racksmith",
        "redfish",
        "clock",
        "--bmc",
        f"127.0.0.1:{running_rack.port('clock06')}",
        "--env-file",
        str(running_rack.lab_dir / "secrets" / "bmc.env"),
        "--ca-bundle",
        str(running_rack.lab_dir / "ca" / "ca.pem"),
    )
    assert check.returncode == 0, check.stderr
    assert abs(json.loads(check.stdout)["before"]["skew_seconds"]) <= 5


MODULES_PLAYBOOK = """\
- name: Drive the redfish_* modules the way playbooks do
  hosts: bmc_ok
  gather_facts: false
  vars:
    conn: &conn
      bmc: "{{ redfish_bmc }}"
      ca_bundle: "{{ redfish_connection.ca_bundle }}"
      credentials_file: "{{ redfish_connection.credentials_file }}"
  tasks:
    - name: Check mode says it would power on, and changes nothing
      redfish_power: {<<: *conn, state: "on", poll: 0.2}
      check_mode: true
      delegate_to: localhost
      vars: {ansible_python_interpreter: "{{ ansible_playbook_python }}"}
      register: dry
    - name: Power on for real
      redfish_power: {<<: *conn, state: "on", poll: 0.2, wait: 20}
      delegate_to: localhost
      vars: {ansible_python_interpreter: "{{ ansible_playbook_python }}"}
      register: first
    - name: Power on again is a no-op
      redfish_power: {<<: *conn, state: "on", poll: 0.2}
      delegate_to: localhost
      vars: {ansible_python_interpreter: "{{ ansible_playbook_python }}"}
      register: second
    - name: One-time PXE with an explicit password (must never be shown)
      redfish_boot:
        bmc: "{{ redfish_bmc }}"
        ca_bundle: "{{ redfish_connection.ca_bundle }}"
        username: root
        password: "{{ lookup('env', 'BMC_PASSWORD_FOR_TEST') }}"
      delegate_to: localhost
      vars: {ansible_python_interpreter: "{{ ansible_playbook_python }}"}
      register: boot
    - name: Say what happened
      ansible.builtin.assert:
        that:
          - dry is changed and dry.after == 'Off'
          - first is changed and first.after == 'On'
          - second is not changed
          - boot is changed and boot.after.target == 'Pxe'
"""


def test_modules_changed_check_mode_and_no_log(running_rack, tmp_path):
    password = dict(
        line.split("=", 1)
        for line in (running_rack.lab_dir / "secrets" / "bmc.env").read_text().split()
    )["RACKSMITH_BMC_PASSWORD"]
    playbook = tmp_path / "modules.yml"
    playbook.write_text(MODULES_PLAYBOOK)
    done = running_rack.run(
        "ansible-playbook",
        "-vvv",
        "-i",
        str(running_rack.inventory),
        str(playbook),
        BMC_PASSWORD_FOR_TEST=password,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert "ok=5" in done.stdout and "failed=0" in done.stdout
    assert password not in done.stdout + done.stderr  # no_log, even at -vvv
