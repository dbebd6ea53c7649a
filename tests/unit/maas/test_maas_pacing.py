"""MAAS's power actions are paced (issue 21 item 7): commission, deploy and release each take a
slot of the fleet's one power pace (racksmith.pacing) before the request reaches MAAS, also
when a batch sends them from many threads at once; a wait for the slot longer than the budget
of the state the operation starts is refused before anything is sent, without taking the slot.

The times are the simulator's own: when its HTTP server logged each request (real seconds)."""

from __future__ import annotations

import dataclasses
import logging
import re
from itertools import pairwise

import pytest

from racksmith import pacing
from racksmith.maas import ansible as maas_ansible
from racksmith.maas import fleet, lifecycle
from racksmith.maas.errors import MaasConfigError, PacingRefused
from racksmith.maas.lifecycle import DeployOptions, ReleaseOptions, WaitPolicy
from racksmith.maas.model import NodeStatus
from racksmith.maas.storage import BootDiskRule

BOSS = BootDiskRule.from_dict({"model": "DELLBOSS*"})

#: 60 a minute: a slot every second (real time, whatever the simulator's speed).
FAST = 60.0
_OP = re.compile(r'"POST /MAAS/api/2\.0/machines/(\w+)/\?op=(commission|deploy|release) ')


def sent(caplog) -> dict[str, list[float]]:
    """When the simulator served each power-sending POST, by op (from its request log)."""
    out: dict[str, list[float]] = {}
    for record in caplog.records:
        match = _OP.search(record.getMessage())
        if match:
            out.setdefault(match.group(2), []).append(record.created)
    return {op: sorted(times) for op, times in out.items()}


def paced(policy, tmp_path, per_minute=FAST, *, default_budgets=False):
    """The conftest's policy (roomy budgets, the simulator's clock) with a pace of its own;
    ``default_budgets``: MAAS's own budgets (commissioning 45 min = 0.9 s at x3000)."""
    return dataclasses.replace(
        policy,
        pace=pacing.Pace(per_minute, tmp_path / "pace"),
        **({"budgets": dict(lifecycle.DEFAULT_BUDGETS)} if default_budgets else {}),
    )


@pytest.fixture
def served(caplog):
    caplog.set_level(logging.DEBUG, logger="racksmith.lab.maassim")
    return caplog


def test_a_batch_commissions_deploys_and_releases_one_slot_apart(
    sim, fleet_host, policy, tmp_path, served
):
    """Four hosts in flight at once (maas_fleet's threads): MAAS receives their commission,
    deploy and release requests a second apart, not in one burst."""
    roomy = policy
    policy = paced(roomy, tmp_path)
    hosts = [fleet_host(n) for n in range(1, 5)]
    for op in (fleet.ready_operation(BOSS), fleet.deploy_operation(DeployOptions())):
        run = fleet.run(hosts, op, connect=sim.client, policy=policy)
        assert run.failed == [], run.results
    for h in hosts:
        with sim.client() as c:
            machine = lifecycle.records.find(c, mac=h.pxe_mac)
            lifecycle.release(c, machine, policy, ReleaseOptions())
    times = sent(served)
    assert {op: len(t) for op, t in times.items()} == {"commission": 4, "deploy": 4, "release": 4}
    for op, stamps in times.items():
        gaps = [b - a for a, b in pairwise(stamps)]
        # a slot every second; the log line is written once the request is served, so allow
        # for one request's service time on this loaded machine
        assert min(gaps) >= 0.6, (op, gaps)
    # and without pacing the same batch arrives together: the gaps above are the pacing's
    unpaced = paced(roomy, tmp_path, 0.0)
    served.clear()
    more = [fleet_host(n) for n in range(5, 9)]
    assert (
        fleet.run(more, fleet.ready_operation(BOSS), connect=sim.client, policy=unpaced).failed
        == []
    )
    burst = sent(served)["commission"]
    assert burst[-1] - burst[0] < 3 * 0.6, burst


def test_a_wait_past_the_budget_is_refused_before_anything_is_sent(
    sim, fleet_host, client, policy, tmp_path, served
):
    """One a minute, and someone just took the slot: the next is 60 s away, longer than the
    commissioning budget (45 MAAS minutes = 0.9 s at this simulator's speed). The machine's
    record is created (no power action), its commissioning is never requested, and the refused
    wait leaves the pace as it was."""
    policy = paced(policy, tmp_path, 1.0, default_budgets=True)
    taken = pacing.take_slot(policy.pace)
    with pytest.raises(PacingRefused, match=r"commission of gpu01 .*would hold it 60s.*not sent"):
        lifecycle.ensure_ready(client, fleet_host(1).spec, BOSS, policy)
    assert "commission" not in sent(served)
    (machine,) = sim.store.machines.values()
    assert machine.state is NodeStatus.NEW
    assert float(policy.pace.state_file.read_text()) == pytest.approx(taken, abs=1e-5)


def test_a_refusal_fails_that_host_of_the_batch_with_the_reason(
    sim, fleet_host, policy, tmp_path, served
):
    """In a batch the refusal is the host's failure, named; the hosts whose slot fitted go on."""
    # One a minute: the first host's slot is now, every other one's a minute away, far past
    # the commissioning budget (45 MAAS minutes = 0.9 s at this simulator's speed): refused.
    policy = paced(policy, tmp_path, 1.0, default_budgets=True)
    run = fleet.run(
        [fleet_host(1), fleet_host(2), fleet_host(3)],
        fleet.ready_operation(BOSS),
        connect=sim.client,
        policy=policy,
    )
    refused = {name: r.msg for name, r in run.results.items() if r.failed}
    assert len(refused) == 2 and len(sent(served)["commission"]) == 1
    assert all("power pacing (1/min)" in m and "not sent" in m for m in refused.values())


def test_the_setting_reaches_the_policy_from_the_module_and_is_checked(monkeypatch):
    base = {"poll_interval": None, "wait_budgets": {}}
    assert maas_ansible.policy({**base, "power_actions_per_minute": 6.0}).pace.interval == 10.0
    monkeypatch.setenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE", "30")
    assert maas_ansible.policy({**base, "power_actions_per_minute": None}).pace.interval == 2.0
    with pytest.raises(MaasConfigError, match="RACKSMITH_POWER_ACTIONS_PER_MINUTE"):
        maas_ansible.policy({**base, "power_actions_per_minute": -1.0})
    monkeypatch.setenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE", "often")
    with pytest.raises(MaasConfigError, match="'often'"):
        WaitPolicy.build()
