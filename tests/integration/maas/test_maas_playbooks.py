"""enlist.yml and deploy.yml against the simulator (a separate process) through the real
modules and inventory plugin: idempotent reruns, injected failures named, check mode, the MAAS
inventory's SSH targets, reprovision of one host, and no secret anywhere in the output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.machines import MachineSpec, ensure

pytestmark = pytest.mark.slow


def plain(value):
    """ansible-inventory marks plugin data untrusted: {"__ansible_unsafe": v} -> v."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def precreate_with_fault(rack, name: str, fault: str) -> None:
    """The machine exists before enlisting (as after an earlier run), carrying a fault."""
    host = rack.hosts[name]
    creds = Credentials(rack.sim.url, ApiKey.parse(rack.sim.key))
    with MaasClient(creds) as client:
        spec = MachineSpec(
            hostname=name,
            pxe_mac=host["redfish_pxe_mac"],
            power_parameters={
                "power_address": host["redfish_bmc"],
                "power_user": "root",
                "power_pass": "x",
            },
        )
        machine = ensure(client, spec).machine
    rack.sim.api("POST", "sim/faults/", data={"machine": machine.system_id, "add": fault})


def test_enlist_and_deploy_rerun_and_failures(rack):
    good = [rack.add(i) for i in (1, 2, 3)]
    bad_deploy, bad_power = rack.add(4), rack.add(5)
    precreate_with_fault(rack, bad_deploy, "deploy_fails")
    precreate_with_fault(rack, bad_power, "power_fails")

    first = rack.playbook("enlist.yml")
    stats = rack.recap(first.stdout)
    assert all(stats[h]["changed"] >= 1 and stats[h]["failed"] == 0 for h in good), first.stdout
    assert stats[bad_power]["failed"] == 1
    assert "reverted to New" in first.stdout and "Please check power credentials" in first.stdout
    assert stats[bad_deploy]["failed"] == 0  # its problem shows at deploy

    deploy = rack.playbook("deploy.yml")
    stats = rack.recap(deploy.stdout)
    assert all(stats[h]["failed"] == 0 for h in good), deploy.stdout
    assert stats[bad_deploy]["failed"] == 1
    assert "efibootmgr failed to register the boot entry" in deploy.stdout
    assert "pick up the deployed machines as SSH targets" in deploy.stdout

    inventory = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-inventory"),
            "-i",
            str(rack.tmp / "inventory"),
            "--list",
        ],
        cwd=rack.tmp,
        env=rack.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    data = plain(json.loads(inventory.stdout))
    assert sorted(data["maas_deployed"]["hosts"]) == sorted(good)
    hostvars = data["_meta"]["hostvars"]
    for name in good:
        assert hostvars[name]["ansible_host"].startswith("10.")
        assert hostvars[name]["ansible_user"] == "ubuntu"
        assert hostvars[name]["maas_boot_disk"]["model"] == "DELLBOSS VD"
        assert hostvars[name]["redfish_pxe_mac"]  # merged with the "Redfish" inventory host
    assert bad_deploy in data["maas_status_failed_deployment"]["hosts"]
    assert bad_power in data["maas_status_new"]["hosts"]
    assert set(good) <= set(data["maas_tag_racksmith_test"]["hosts"])

    # A second run changes nothing for the healthy hosts and names the same causes again.
    again_enlist = rack.playbook("enlist.yml")
    again_deploy = rack.playbook("deploy.yml")
    for run in (again_enlist, again_deploy):
        stats = rack.recap(run.stdout)
        assert all(stats[h]["changed"] == 0 and stats[h]["failed"] == 0 for h in good), run.stdout
    assert "efibootmgr failed" in again_deploy.stdout


def test_check_mode_changes_nothing(rack):
    names = [rack.add(i) for i in (6, 7)]
    run = rack.playbook("enlist.yml", "--check", "-v")
    stats = rack.recap(run.stdout)
    assert all(stats[n]["failed"] == 0 and stats[n]["changed"] == 1 for n in names), run.stdout
    assert "would create" in run.stdout
    creds = Credentials(rack.sim.url, ApiKey.parse(rack.sim.key))
    with MaasClient(creds) as client:
        assert client.get("machines/") == []


def test_reprovision_needs_a_limit_and_redeploys_one_host(rack):
    first, second = rack.add(8), rack.add(9)
    assert rack.playbook("enlist.yml").returncode == 0
    assert rack.playbook("deploy.yml").returncode == 0
    refused = rack.playbook("reprovision.yml", "--tags", "enlist,deploy")
    assert refused.returncode != 0 and "select them explicitly" in refused.stdout
    # configure/validate belong to other phases (their roles' `always` tasks need real hosts)
    unguarded = rack.playbook("reprovision.yml", "--tags", "enlist,deploy", "--skip-tags", "always")
    assert unguarded.returncode != 0 and "select them explicitly" in unguarded.stdout
    run = rack.playbook(
        "reprovision.yml",
        "-l",
        f"{first},localhost",
        "--tags",
        "enlist,deploy",
        "--skip-tags",
        "always",
    )
    assert run.returncode == 0, run.stdout
    assert "will be released with quick disk erase" in run.stdout
    stats = rack.recap(run.stdout)
    assert stats[first]["changed"] >= 3  # release, recommission+pin, deploy
    assert second not in stats


def test_no_secret_in_output_results_or_caches(rack):
    """-vvv output, the run directory and the fact cache never hold the MAAS key or the BMC
    password: not on success, not on a failed deployment, not when MAAS echoes the token key
    back in a 401 body."""
    rack.add(10)
    bad = rack.add(11)
    cache = rack.tmp / "inventory-cache"
    rack.maas_inventory = {
        "cache": True,
        "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(cache),
    }
    precreate_with_fault(rack, bad, "deploy_fails")
    outputs = []
    for playbook in ("enlist.yml", "deploy.yml"):
        run = rack.playbook(playbook, "-vvv")
        outputs += [run.stdout, run.stderr]
    key = ApiKey.parse(rack.sim.key)
    wrong = f"{key.consumer_key}:WrongTokenKey0123:{key.token_secret}"
    refused = rack.playbook("enlist.yml", "-vvv", env={"MAAS_API_KEY": wrong})
    assert "Invalid access token" in refused.stdout
    outputs += [refused.stdout, refused.stderr]
    assert any(cache.iterdir()), "the inventory cache was not written"
    files = [
        p
        for d in (rack.tmp / "run", rack.tmp / "facts", cache)
        if d.exists()
        for p in d.rglob("*")
        if p.is_file()
    ]
    assert files, "the run left no report to check"
    texts = outputs + [p.read_text(errors="replace") for p in files]
    secrets = (*key.secrets(), "WrongTokenKey0123", rack.bmc_password)
    leaks = [(s[:4] + "...", i) for s in secrets for i, text in enumerate(texts) if s in text]
    assert leaks == []


def test_deploy_records_the_quarantine_as_a_maas_tag_for_job_slices(rack):
    """The prepare job's quarantine reaches AWX slices through MAAS (docs/awx.md section 8):
    deploy.yml tags exactly the run's quarantined machines, the slices' MAAS inventory
    (quarantine_tag) reads them as group quarantine, and a later run without that quarantine
    takes the tag off again."""
    hosts = [rack.add(i) for i in (1, 2, 3)]
    assert rack.playbook("enlist.yml").returncode == 0
    assert rack.playbook("deploy.yml").returncode == 0
    carried = rack.tmp / "carry.yml"  # the quarantine as the run decided it (here: given)
    carried.write_text(
        "all:\n  children:\n    quarantine:\n      hosts:\n"
        f"        {hosts[1]}: {{racksmith_quarantine_reason: BMC clock off}}\n"
    )
    tag = ["-v", "-e", "racksmith_maas_quarantine_tag=racksmith-quarantine"]
    tagged = rack.playbook("deploy.yml", "-i", str(carried), *tag)
    assert tagged.returncode == 0, tagged.stdout[-3000:]
    assert f"tag racksmith-quarantine on {hosts[1]}" in tagged.stdout

    slices = rack.tmp / "slices"
    slices.mkdir()
    (slices / "maas.yml").write_text(
        "plugin: racksmith.core.maas\nquarantine_tag: racksmith-quarantine\n"
    )
    listing = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(slices), "--list"],
        cwd=rack.tmp,
        env=rack.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    data = plain(json.loads(listing.stdout))
    assert data["quarantine"]["hosts"] == [hosts[1]]
    assert (
        "MAAS tag racksmith-quarantine"
        in (data["_meta"]["hostvars"][hosts[1]]["racksmith_quarantine_reason"])
    )

    again = rack.playbook("deploy.yml", *tag)  # repaired: no quarantine this time
    assert again.returncode == 0 and f"take racksmith-quarantine off {hosts[1]}" in again.stdout
    listing = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(slices), "--list"],
        cwd=rack.tmp,
        env=rack.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "quarantine" not in plain(json.loads(listing.stdout))


def test_a_rerun_costs_one_result_per_host_and_a_host_without_inputs_fails_with_why(rack):
    """Issue 25: each phase builds its batch once (racksmith.core.maas_fleet_batch) and keeps
    one task per host (racksmith.core.maas_outcome), so a rerun that changes nothing costs one
    task result per host, plus the batch's two run-once results on the first. A host that
    lacks an input is left out of the batch and fails with the reason, recorded for the
    report; the others go on."""
    no_disk = rack.add(19)  # first of the play: the batch's run-once tasks run on it
    rack.hosts[no_disk]["racksmith_maas_boot_disk"] = ""
    good = [rack.add(i) for i in (20, 21, 22)]
    lacking = rack.add(23)
    del rack.hosts[lacking]["redfish_bmc"]
    first = rack.playbook("enlist.yml")
    stats = rack.recap(first.stdout)
    assert all(stats[h]["failed"] == 0 for h in good), first.stdout
    report = json.loads((rack.tmp / "run" / "report.json").read_text())["hosts"]
    for name in (no_disk, lacking):
        assert stats[name]["failed"] == 1 and stats[name]["rescued"] == 1, first.stdout
        assert f"{name}: enlisting needs redfish_pxe_mac and redfish_bmc" in first.stdout
        reasons = report[name]["reasons"]
        assert any("enlisting needs redfish_pxe_mac" in r for r in reasons), report[name]
    assert rack.playbook("deploy.yml", "-l", ",".join(good)).returncode == 0

    for playbook in ("enlist.yml", "deploy.yml"):
        run = rack.playbook(playbook, "-l", ",".join(good))
        stats = rack.recap(run.stdout)
        assert all(stats[h]["changed"] == 0 and stats[h]["failed"] == 0 for h in good), run.stdout
        assert run.stdout.count("msg: nothing to do") == len(good), run.stdout
        # the first host also holds the run-once batch results (and deploy's later plays skip)
        assert [stats[h]["ok"] for h in good] == [3, 1, 1], run.stdout
