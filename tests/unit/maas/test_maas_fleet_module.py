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
