"""racksmith.core.maas_fleet run as Ansible runs a module (a subprocess with its arguments file)
against the simulator: the batch enlists and deploys, names the failed host without failing the
task, writes progress lines, returns a diff per changed host, and a rerun changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import Store

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "plugins" / "modules" / "maas_fleet.py"


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("collections")
    (root / "ansible_collections" / "racksmith").mkdir(parents=True)
    (root / "ansible_collections" / "racksmith" / "core").symlink_to(REPO)
    return root


def module(args: dict, tmp: Path, collection: Path) -> tuple[dict, str]:
    path = tmp / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))}
    done = subprocess.run(
        [sys.executable, str(MODULE), str(path)],
        capture_output=True,
        text=True,
        cwd=tmp,
        env={**env, "PYTHONPATH": str(collection)},
        timeout=120,
        check=False,
    )
    return json.loads(done.stdout), done.stdout + done.stderr


def test_batch_enlist_deploy_failure_progress_and_rerun(tmp_path, collection):
    store = Store(clock=SimClock(3000.0), seed=7)
    progress = tmp_path / "progress.jsonl"
    hosts = [{"name": f"gpu{i:02d}", "pxe_mac": f"02:5C:00:{i:02X}:01:00"} for i in range(1, 7)]
    with running(store) as server:
        base = {
            "maas_url": server.url,
            "maas_api_key": store.admin_key(),
            "poll_interval": 0.005,  # real seconds: 15 MAAS seconds at x3000
            "power_type": "manual",
            "boot_disk": {"model": "DELLBOSS*"},
            "progress_file": str(progress),
            "hosts": hosts,
            "_ansible_diff": True,
        }

        def run(**kw) -> dict:
            result, output = module({**base, **kw}, tmp_path, collection)
            assert store.admin_key() not in output
            assert not result.get("failed"), output
            return result

        enlisted = run(state="ready")
        assert enlisted["changed"] and enlisted["counts"] == {"ready": 6}
        assert len(enlisted["diff"]) == 6 and enlisted["diff"][0]["before"] == {}
        with store.lock:
            m = next(m for m in store.machines.values() if m.hostname == "gpu04")
            store.set_faults(m, ["deploy_fails"], [])
        progress.unlink()
        deployed = run(state="deployed", hwe_kernel="hwe-22.04")
        assert deployed["failed_hosts"] == ["gpu04"]
        assert deployed["counts"] == {"deployed": 5, "failed": 1}
        assert "efibootmgr" in deployed["hosts"]["gpu04"]["cause"]
        assert deployed["hosts"]["gpu01"]["machine"]["hwe_kernel"] == "hwe-22.04"
        lines = [json.loads(line) for line in progress.read_text().splitlines()]
        assert lines and all(line["phase"] == "deploy" for line in lines)
        assert [f[0] for line in lines for f in line["new_failures"]] == ["gpu04"]
        assert lines[-1]["line"].startswith("deploy: 5 deployed, 1 failed, ")
        again = run(state="deployed", hwe_kernel="hwe-22.04")
        assert not again["changed"] and again["diff"] == []
        assert again["failed_hosts"] == ["gpu04"]  # reported again, not redeployed
        assert not run(state="ready")["changed"]
        dry = run(state="deployed", _ansible_check_mode=True, redeploy_failed=True)
        assert dry["changed"] and dry["hosts"]["gpu04"]["actions"][0].startswith("would deploy")


def test_bad_arguments_fail_the_task_naming_them(tmp_path, collection):
    result, _ = module(
        {
            "maas_url": "http://127.0.0.1:1/MAAS/",
            "maas_api_key": "a:b:c",
            "state": "ready",
            "hosts": [{"name": "gpu01", "pxe_mac": "02:5c:00:01:01:00"}],
            "power_type": "manual",
        },
        tmp_path,
        collection,
    )
    assert result["failed"] and "boot_disk" in result["msg"]
    result, _ = module({"hosts": [{"name": "gpu01"}]}, tmp_path, collection)
    assert result["failed"] and "pxe_mac" in result["msg"]


PLAYBOOK = """\
- name: Deploy the batch
  hosts: servers
  gather_facts: false
  tasks:
    - name: This host's entry
      ansible.builtin.set_fact:
        entry: {name: "{{ inventory_hostname }}", pxe_mac: "{{ pxe_mac }}"}
    - name: Deploy every host at once
      racksmith.core.maas_fleet:
        state: deployed
        poll_interval: 0.04
        hosts: "{{ ansible_play_hosts | map('extract', hostvars, 'entry') | list }}"
      run_once: true
      delegate_to: localhost
      register: fleet
    - name: Fail the hosts that did not deploy
      ansible.builtin.fail:
        msg: "{{ fleet.hosts[inventory_hostname].cause }}"
      when: fleet.hosts[inventory_hostname].failed
"""


def test_progress_shows_in_plain_ansible_playbook_output(tmp_path):
    """The report callback prints the batch's counts while the task waits, and the failure by
    name as it happens, in ansible-playbook's own output."""
    store = Store(clock=SimClock(300.0), seed=7)  # deploying takes 2 s
    with running(store) as server:
        from racksmith.maas import fleet
        from racksmith.maas.auth import ApiKey, Credentials
        from racksmith.maas.client import MaasClient
        from racksmith.maas.clock import ScaledClock
        from racksmith.maas.lifecycle import WaitPolicy
        from racksmith.maas.machines import MachineSpec
        from racksmith.maas.storage import BootDiskRule

        creds = Credentials(server.url, ApiKey.parse(store.admin_key()))
        hosts = [
            fleet.FleetHost(
                f"gpu{i:02d}",
                f"02:5e:00:{i:02x}:01:00",
                MachineSpec(f"gpu{i:02d}", f"02:5e:00:{i:02x}:01:00", power_type="manual"),
            )
            for i in range(1, 5)
        ]
        enlisted = fleet.run(
            hosts,
            fleet.ready_operation(BootDiskRule.from_dict({"model": "DELLBOSS*"})),
            connect=lambda: MaasClient(creds, clock=ScaledClock(300.0)),
            policy=WaitPolicy.build(clock=ScaledClock(300.0)),
        )
        assert enlisted.failed == []
        with store.lock:
            m = next(m for m in store.machines.values() if m.hostname == "gpu03")
            store.set_faults(m, ["deploy_fails"], [])
        inventory = {"servers": {"hosts": {h.name: {"pxe_mac": h.pxe_mac.upper()} for h in hosts}}}
        (tmp_path / "inventory.json").write_text(json.dumps(inventory))
        (tmp_path / "play.yml").write_text(PLAYBOOK)
        clean = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))
        }
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "ansible-playbook"),
                "-i",
                str(tmp_path / "inventory.json"),
                str(tmp_path / "play.yml"),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={
                **clean,
                "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
                "ANSIBLE_NOCOLOR": "1",
                "MAAS_URL": server.url,
                "MAAS_API_KEY": store.admin_key(),
                "RACKSMITH_RUN_DIR": str(tmp_path / "run"),
                "RACKSMITH_PROGRESS_INTERVAL": "0.5",
                "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            },
            timeout=180,
            check=False,
        )
    out = done.stdout
    assert done.returncode == 2, out + done.stderr  # gpu03 failed; the others did not
    lines = out.splitlines()
    assert any(line.startswith("deploy: FAILED gpu03: ") and "efibootmgr" in line for line in lines)
    assert any(line.startswith("deploy: ") and "deploying" in line for line in lines), out
    assert any(line.startswith("deploy: 3 deployed, 1 failed, ") for line in lines), out
    # all printed under the batch's task: before the next task starts
    next_task = next(i for i, line in enumerate(lines) if "TASK [Fail the hosts" in line)
    shown = [i for i, line in enumerate(lines) if line.startswith("deploy: ")]
    assert shown and max(shown) < next_task, out
    assert store.admin_key() not in out
