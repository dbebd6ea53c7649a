"""The batch (racksmith.maas.fleet) against the simulator: every host in flight at once with one
shared polling loop, the single-host budgets and triage, failures mid-batch, a limit on hosts in
flight, progress lines, and a rerun that changes nothing."""

from __future__ import annotations

import logging
import re
import threading

import pytest

from racksmith.maas import fleet
from racksmith.maas.errors import MaasConfigError
from racksmith.maas.fleet import Progress
from racksmith.maas.lifecycle import DeployOptions, WaitPolicy
from racksmith.maas.storage import BootDiskRule

BOSS = BootDiskRule.from_dict({"model": "DELLBOSS*"})


class Clients:
    """The ``connect`` factory: one fresh client per call, counting what they all sent."""

    def __init__(self, sim):
        self.sim = sim
        self.made: list = []
        self.lock = threading.Lock()

    def __call__(self):
        c = self.sim.client()
        with self.lock:
            self.made.append(c)
        return c

    def requests(self) -> int:
        return sum(c.requests_sent for c in self.made)


def batch(sim, hosts, operation, policy, **kw):
    clients = Clients(sim)
    seen: list[Progress] = []
    run = fleet.run(hosts, operation, connect=clients, policy=policy, progress=seen.append, **kw)
    return run, clients, seen


def fault(sim, name, *faults):
    with sim.store.lock:
        m = next(m for m in sim.store.machines.values() if m.hostname == name)
        sim.store.set_faults(m, list(faults), [])


def test_enlist_and_deploy_all_at_once_then_rerun_changes_nothing(sim, fleet_host, policy):
    hosts = [fleet_host(n) for n in range(1, 13)]
    enlist, _, _ = batch(sim, hosts, fleet.ready_operation(BOSS), policy, phase="enlist")
    assert enlist.failed == [] and all(r.changed for r in enlist.results.values())
    assert {r.machine["status_name"] for r in enlist.results.values()} == {"Ready"}
    assert {r.machine["boot_disk"]["model"] for r in enlist.results.values()} == {"DELLBOSS VD"}

    deploy, clients, seen = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), policy)
    assert deploy.failed == []
    assert {r.machine["status_name"] for r in deploy.results.values()} == {"Deployed"}
    assert all(r.actions[-1].startswith("deployed gpu") for r in deploy.results.values())
    # The waits shared the loop's reads: many rounds, yet each host sent only its own few
    # calls (find, block devices, deploy, ...), not one GET per round as a lone wait does.
    assert deploy.batch_reads >= 3
    per_host = (clients.requests() - deploy.batch_reads) / len(hosts)
    assert per_host < 12, per_host
    assert seen[-1].counts == {"deployed": 12}
    assert any(p.counts.get("deploying") for p in seen)

    again, clients, _ = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), policy)
    assert not again.changed and again.failed == []
    assert all(r.actions == [] for r in again.results.values())
    assert clients.requests() - again.batch_reads <= len(hosts)  # one find per host
    enlist_again, _, _ = batch(sim, hosts, fleet.ready_operation(BOSS), policy)
    assert not enlist_again.changed


def test_failures_mid_batch_are_named_once_and_do_not_stop_the_others(sim, fleet_host, policy):
    hosts = [fleet_host(n) for n in range(1, 9)]
    batch(sim, hosts, fleet.ready_operation(BOSS), policy)
    fault(sim, "gpu03", "deploy_fails")
    fault(sim, "gpu06", "deploy_timeout")
    run, _, seen = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), policy)
    assert sorted(run.failed) == ["gpu03", "gpu06"]
    broken = run.results["gpu03"]
    assert "efibootmgr failed to register the boot entry" in broken.cause
    assert broken.triage["status_name"] == "Failed deployment"
    assert any("grub-install" in line for line in broken.triage["log_tail"])
    assert "timed out after 30 minutes" in run.results["gpu06"].cause
    named = [name for p in seen for name, _ in p.new_failures]
    assert sorted(named) == ["gpu03", "gpu06"]  # each failure reported once, when it happened
    assert seen[-1].counts == {"deployed": 6, "failed": 2}
    assert "6 deployed, 2 failed" in seen[-1].line()
    # The rerun reports the failures again (not retried: that would wipe the evidence) and
    # leaves the deployed hosts alone.
    again, _, _ = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), policy)
    assert sorted(again.failed) == ["gpu03", "gpu06"] and not again.changed
    assert "efibootmgr" in again.results["gpu03"].cause


def test_client_budget_cuts_the_shared_wait_short_and_aborts(sim, fleet_host, policy):
    hosts = [fleet_host(n) for n in range(1, 4)]
    batch(sim, hosts, fleet.ready_operation(BOSS), policy)
    for name in ("gpu01", "gpu02", "gpu03"):
        fault(sim, name, "deploy_timeout")
    tight = WaitPolicy.build(clock=policy.clock, budget_minutes={"deploying": 5})
    run, _, _ = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), tight)
    assert sorted(run.failed) == ["gpu01", "gpu02", "gpu03"]
    for result in run.results.values():
        assert "still Deploying after 5 min (client budget)" in result.cause
        assert "aborted" in result.cause


def test_max_in_flight_bounds_the_hosts_installing_together(sim, fleet_host, policy):
    hosts = [fleet_host(n) for n in range(1, 7)]
    batch(sim, hosts, fleet.ready_operation(BOSS), policy)
    run, _, seen = batch(
        sim, hosts, fleet.deploy_operation(DeployOptions()), policy, max_in_flight=2
    )
    assert run.failed == []
    busy = [sum(n for s, n in p.counts.items() if s not in ("queued", "deployed")) for p in seen]
    assert max(busy) <= 2
    assert any(p.counts.get("queued", 0) >= 3 for p in seen)


def test_unknown_machine_and_bad_batches_fail_closed(sim, fleet_host, policy):
    run, _, _ = batch(sim, [fleet_host(1)], fleet.deploy_operation(DeployOptions()), policy)
    assert run.failed == ["gpu01"]
    assert "run the enlist phase first" in run.results["gpu01"].msg
    with pytest.raises(MaasConfigError, match="more than once"):
        fleet.run(
            [fleet_host(1), fleet_host(1)],
            fleet.deploy_operation(DeployOptions()),
            connect=sim.client,
            policy=policy,
        )
    with pytest.raises(MaasConfigError, match="max_in_flight"):
        fleet.run(
            [fleet_host(1)],
            fleet.deploy_operation(DeployOptions()),
            connect=sim.client,
            policy=policy,
            max_in_flight=0,
        )
    assert "calvin" not in repr(fleet_host(1))


def test_progress_line():
    line = Progress(
        "deploy", {"deploying": 212, "deployed": 180, "failed": 8}, [], 14 * 60 + 32, 400
    ).line()
    assert line == "deploy: 212 deploying, 180 deployed, 8 failed, 0:14:32"
    assert (
        Progress("enlist", {"ready": 3}, [], 3725, 3).line() == "enlist: 3 ready, 0 failed, 1:02:05"
    )


#: A read of one machine in the simulator's request log (not the list, not an ``?op=``).
_MACHINE_GET = re.compile(r'"GET /MAAS/api/2\.0/machines/(\w+)/ ')


def test_when_the_shared_read_fails_hosts_read_their_own_machine(
    sim, fleet_host, policy, monkeypatch, caplog
):
    hosts = [fleet_host(n) for n in range(1, 5)]
    batch(sim, hosts, fleet.ready_operation(BOSS), policy)
    with sim.client() as reader:  # one failed batch read: those machines are simply left out
        sim.store.add_http_fault(status=500, path="/machines/", method="GET")
        assert fleet._read_all(reader, ["abc", "def"]) == ({}, 0)
    monkeypatch.setattr(fleet, "_read_all", lambda client, ids: ({}, 0))  # MAAS lists nothing
    caplog.set_level(logging.DEBUG, logger="racksmith.lab.maassim")
    run, _, _ = batch(sim, hosts, fleet.deploy_operation(DeployOptions()), policy)
    assert run.failed == [] and run.batch_reads == 0
    assert {r.machine["status_name"] for r in run.results.values()} == {"Deployed"}
    # each host polled its own machine instead (counted per machine in the simulator's log,
    # so a loaded machine polling fewer times cannot fail it, and a host that never read its
    # own machine can)
    read = {m.group(1) for r in caplog.records if (m := _MACHINE_GET.search(r.getMessage()))}
    assert read >= {r.machine["system_id"] for r in run.results.values()}
