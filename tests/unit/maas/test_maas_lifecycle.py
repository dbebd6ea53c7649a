"""Lifecycle operations against the simulator: idempotent enlist, boot-disk pinning after
every commissioning, deploy, release, quarantine, and every injected failure named."""

from __future__ import annotations

import pytest

from racksmith.maas import lifecycle, machines
from racksmith.maas.errors import MaasConfigError, MachineFailed, MachineStateError
from racksmith.maas.lifecycle import DeployOptions, ReleaseOptions, WaitPolicy
from racksmith.maas.machines import MachineSpec
from racksmith.maas.model import NodeStatus
from racksmith.maas.storage import BootDiskRule

BOSS = BootDiskRule.from_dict({"model": "DELLBOSS*"})


def spec(n: int = 1, **kw) -> MachineSpec:
    params = {
        "power_address": f"127.0.0.1:{8442 + n}",
        "power_user": "root",
        "power_pass": "calvin",
    }
    params.update(kw.pop("power", {}))
    return MachineSpec(
        hostname=f"gpu{n:02d}", pxe_mac=f"02:5A:00:{n:02X}:01:00", power_parameters=params, **kw
    )


def fault(sim, system_id, name):
    with sim.store.lock:
        sim.store.set_faults(sim.store.get(system_id), [name], [])


def enlisted(client, policy, n=1, **kw):
    return lifecycle.ensure_ready(client, spec(n, **kw), BOSS, policy).machine


def test_enlist_creates_commissions_pins_and_rerun_changes_nothing(sim, client, policy):
    first = lifecycle.ensure_ready(client, spec(tags=("h200", "rack-a")), BOSS, policy)
    assert first.changed
    assert first.machine.status is NodeStatus.READY
    assert first.machine.boot_disk.model == "DELLBOSS VD"
    assert set(first.machine.tag_names) == {"h200", "rack-a"}
    assert any(a.startswith("created gpu01") for a in first.actions)
    again = lifecycle.ensure_ready(client, spec(tags=("h200", "rack-a")), BOSS, policy)
    assert (again.changed, again.actions) == (False, [])
    assert len(sim.store.machines) == 1


def test_pin_fixes_the_default_disk_and_survives_recommissioning(sim, client, policy):
    """Across commissionings the lowest-id disk (MAAS's default) is often a data NVMe; the
    rule always lands the OS on the BOSS volume, with its layout re-applied there."""
    machine = enlisted(client, policy)
    wrong_defaults = 0
    for _ in range(6):
        outcome = lifecycle.ensure_ready(client, spec(), BOSS, policy, recommission=True)
        pinned = outcome.machine
        assert pinned.boot_disk.model == "DELLBOSS VD"
        disks = client.get(f"nodes/{machine.system_id}/blockdevices/")
        lowest = min(disks, key=lambda d: d["id"])
        wrong_defaults += lowest["model"] != "DELLBOSS VD"
        partitioned = [d["model"] for d in disks if d["partitions"]]
        assert partitioned == ["DELLBOSS VD"]
        assert (
            any("pinned boot disk" in a for a in outcome.actions)
            or lowest["model"] == "DELLBOSS VD"
        )
    assert wrong_defaults > 0, "the simulator never put a data disk first; the test proves nothing"


def test_ambiguous_or_unmatched_rule_fails_closed(sim, client, policy):
    machine = enlisted(client, policy)
    from racksmith.maas.errors import BootDiskError

    with pytest.raises(BootDiskError, match="8 disks match"):
        lifecycle.pin_boot_disk(
            client, machine, BootDiskRule.from_dict({"model": "Dell Ent NVMe*"})
        )
    with pytest.raises(BootDiskError, match="no disk matches"):
        lifecycle.pin_boot_disk(client, machine, BootDiskRule.from_dict({"serial": "nope"}))
    tie = BootDiskRule.from_dict({"model": "Dell Ent NVMe*", "tie_break": "serial"})
    outcome = lifecycle.pin_boot_disk(client, machine, tie)
    serials = sorted(
        d["serial"]
        for d in client.get(f"nodes/{machine.system_id}/blockdevices/")
        if d["model"].startswith("Dell Ent")
    )
    assert outcome.machine.boot_disk.serial == serials[0]


def test_update_only_what_changed(sim, client, policy):
    enlisted(client, policy)
    same = machines.ensure(client, spec())
    assert not same.changed
    moved = machines.ensure(client, spec(power={"power_pass": "new-password"}))
    assert moved.changed and moved.actions == [f"updated {moved.machine.label}: power parameters"]
    assert "new-password" not in " ".join(moved.actions)
    sid = moved.machine.system_id
    assert client.get(f"machines/{sid}/", op="power_parameters")["power_pass"] == "new-password"
    assert not machines.ensure(client, spec(power={"power_pass": "new-password"})).changed


def test_check_mode_changes_nothing(sim, client, policy):
    planned = lifecycle.ensure_ready(client, spec(), BOSS, policy, check_mode=True)
    assert planned.changed and planned.actions[0].startswith("would create gpu01")
    assert sim.store.machines == {}
    enlisted(client, policy)
    before = client.get("machines/")
    plan = lifecycle.deploy(
        client,
        machines.find(client, mac="02:5a:00:01:01:00"),
        policy,
        DeployOptions(),
        check_mode=True,
    )
    assert plan.actions == [f"would deploy {plan.machine.label} with jammy"]
    assert [m["status"] for m in client.get("machines/")] == [m["status"] for m in before]


def test_deploy_with_kernel_and_user_data_then_rerun_is_unchanged(sim, client, policy):
    machine = enlisted(client, policy)
    options = DeployOptions(hwe_kernel="hwe-22.04", user_data=b"#cloud-config\nruncmd: [true]\n")
    done = lifecycle.deploy(client, machine, policy, options, rule=BOSS)
    assert done.changed and done.machine.status is NodeStatus.DEPLOYED
    assert done.machine.hwe_kernel == "hwe-22.04" and done.machine.ip_addresses
    stored = sim.store.get(machine.system_id)
    assert sim.store.decoded_user_data(stored) == b"#cloud-config\nruncmd: [true]\n"
    again = lifecycle.deploy(client, done.machine, policy, options, rule=BOSS)
    assert not again.changed
    other = lifecycle.deploy(client, done.machine, policy, DeployOptions(distro_series="noble"))
    assert not other.changed and "left as is" in other.warnings[0]
    assert not lifecycle.ensure_ready(client, spec(), BOSS, policy).changed  # enlist leaves it


def test_power_failure_revert_is_a_failure_with_the_bmc_event(sim, client, policy):
    made = machines.ensure(client, spec()).machine
    fault(sim, made.system_id, "power_fails")
    with pytest.raises(MachineFailed) as exc:
        lifecycle.ensure_ready(client, spec(), BOSS, policy)
    cause = exc.value.triage.cause
    assert cause.startswith("commissioning reverted to New without a failure status")
    assert "Unable to power control the node. Please check power credentials." in cause
    assert exc.value.triage.status_name == "New"


def test_commissioning_failure_is_named_and_not_retried_silently(sim, client, policy):
    made = machines.ensure(client, spec()).machine
    fault(sim, made.system_id, "commission_fails")
    with pytest.raises(MachineFailed) as exc:
        lifecycle.ensure_ready(client, spec(), BOSS, policy)
    assert "maas-lshw failed" in exc.value.triage.cause
    posts = sim.store.stats["POST 200"]
    with pytest.raises(MachineFailed, match="maas-lshw failed"):
        lifecycle.ensure_ready(client, spec(), BOSS, policy)  # reported, not recommissioned
    assert sim.store.stats["POST 200"] == posts


def test_deployment_failure_names_the_installer_error(sim, client, policy):
    machine = enlisted(client, policy)
    fault(sim, machine.system_id, "deploy_fails")
    with pytest.raises(MachineFailed) as exc:
        lifecycle.deploy(client, machine, policy, DeployOptions())
    triage = exc.value.triage
    assert triage.status_name == "Failed deployment"
    assert "efibootmgr failed to register the boot entry: No space left on device" in triage.cause
    assert any("grub-install" in line for line in triage.log_tail)
    assert any("Node installation failure" in e for e in triage.events)
    failed = machines.read(client, machine.system_id)
    with pytest.raises(MachineFailed):  # a rerun reports the failure, it does not redeploy
        lifecycle.deploy(client, failed, policy, DeployOptions())
    with sim.store.lock:
        sim.store.set_faults(sim.store.get(machine.system_id), [], ["deploy_fails"])
    redone = lifecycle.deploy(client, failed, policy, DeployOptions(), redeploy_failed=True)
    assert redone.machine.status is NodeStatus.DEPLOYED
    assert redone.actions[0].startswith("released")


def test_maas_node_timeout_and_client_budget(sim, client, policy):
    machine = enlisted(client, policy)
    fault(sim, machine.system_id, "deploy_timeout")
    with pytest.raises(MachineFailed, match="timed out after 30 minutes"):
        lifecycle.deploy(client, machine, policy, DeployOptions())
    second = enlisted(client, policy, n=2)
    fault(sim, second.system_id, "deploy_timeout")
    tight = WaitPolicy.build(clock=policy.clock, budget_minutes={"deploying": 5})
    with pytest.raises(MachineFailed) as exc:
        lifecycle.deploy(client, second, tight, DeployOptions())
    assert "still Deploying after 5 min (client budget)" in exc.value.triage.cause
    assert "aborted" in exc.value.triage.cause


def test_create_504_and_busy_region_are_absorbed(sim, client, policy):
    sim.store.add_http_fault(status=504, path="/machines/", method="POST", after=True)
    outcome = machines.ensure(client, spec())
    assert outcome.changed and outcome.machine.hostname == "gpu01"
    assert len(sim.store.machines) == 1  # the POST succeeded behind the 504; no duplicate
    fault(sim, outcome.machine.system_id, "maas_busy")
    ready = lifecycle.ensure_ready(client, spec(), BOSS, policy)
    assert ready.machine.status is NodeStatus.READY


def test_release_with_erase_and_mark_broken(sim, client, policy):
    machine = enlisted(client, policy)
    deployed = lifecycle.deploy(client, machine, policy, DeployOptions()).machine
    plan = lifecycle.release(
        client, deployed, policy, ReleaseOptions(erase=True, quick_erase=True), check_mode=True
    )
    assert plan.actions == [f"would release {deployed.label} (Deployed) with quick disk erase"]
    released = lifecycle.release(
        client, deployed, policy, ReleaseOptions(erase=True, quick_erase=True)
    )
    assert released.machine.status is NodeStatus.READY
    assert not lifecycle.release(client, released.machine, policy).changed
    broken = machines.mark_broken(client, released.machine, "missing GPU 3 (quarantine)")
    assert broken.machine.status is NodeStatus.BROKEN
    assert broken.machine.error_description == "missing GPU 3 (quarantine)"
    assert not machines.mark_broken(client, broken.machine, "missing GPU 3 (quarantine)").changed
    with pytest.raises(MachineStateError, match="Broken in MAAS"):
        lifecycle.ensure_ready(client, spec(), BOSS, policy)
    fixed = lifecycle.ensure_ready(client, spec(), BOSS, policy, recommission=True)
    assert fixed.machine.status is NodeStatus.READY


def test_spec_validation():
    with pytest.raises(MaasConfigError, match="not a usable MAC"):
        spec(pxe_mac="nope") if False else MachineSpec(hostname="a", pxe_mac="nope")
    with pytest.raises(MaasConfigError, match="power_pass"):
        MachineSpec(
            hostname="a",
            pxe_mac="02:00:00:00:00:01",
            power_parameters={"power_address": "x", "power_user": "u"},
        )
    safe = MachineSpec(
        hostname="a",
        pxe_mac="02-00-00-00-00-0A",
        power_parameters={"power_address": "x", "power_user": "u", "power_pass": "pw"},
    )
    assert safe.pxe_mac == "02:00:00:00:00:0a"
    assert "pw" not in repr(safe)
