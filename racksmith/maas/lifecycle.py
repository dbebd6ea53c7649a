"""The machine lifecycle: commission, pin the boot disk, deploy, release, with bounded waits.

Each step looks at where the machine stands first and does only what is missing, so rerunning
a phase on finished machines changes nothing. Waits poll politely (10-15 s, jittered), give
each transitional state its own budget (maas-api.md §5), and treat three things as failure:
a failure status, a return to the state the operation started from (MAAS reverts a
commissioning whose power action failed to *New*, silently: §3), and an exhausted budget.
Every failure carries a :class:`~racksmith.maas.errors.Triage` naming the cause.

Commission, deploy and release make MAAS power the machine (on, or off after a release), so each
first takes a slot of the fleet's power pacing (:mod:`racksmith.pacing`, the same pace as every
BMC power action): a rack's commissioning is spread out instead of one burst at the fabric
manager and the BMC network. The wait for the slot may not outlast the budget of the state the
operation starts (commissioning 45 min, deploying 60, releasing 15): a longer one is refused
before anything is sent (:class:`~racksmith.maas.errors.PacingRefused`).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from racksmith import pacing
from racksmith.maas import machines as records
from racksmith.maas import triage
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import Clock
from racksmith.maas.errors import (
    BootDiskError,
    MaasConfigError,
    MaasConflict,
    MaasServerError,
    MaasTransportError,
    MachineFailed,
    MachineStateError,
    PacingRefused,
)
from racksmith.maas.machines import MachineSpec, Outcome
from racksmith.maas.model import RELEASABLE, BlockDevice, Machine, NodeStatus, expect_list
from racksmith.maas.storage import LAYOUTS, BootDiskRule

S = NodeStatus
MINUTE = 60.0

#: Client-side budgets per transitional state, in MAAS seconds (§5: commissioning 45 min,
#: deploying 60 min, releasing 15 min; MAAS has no timeout at all for disk erasing).
DEFAULT_BUDGETS: Mapping[NodeStatus, float] = {
    S.COMMISSIONING: 45 * MINUTE,
    S.TESTING: 45 * MINUTE,
    S.ALLOCATED: 10 * MINUTE,
    S.DEPLOYING: 60 * MINUTE,
    S.RELEASING: 15 * MINUTE,
    S.DISK_ERASING: 6 * 60 * MINUTE,
}
BUDGET_NAMES = {s.filter_name: s for s in DEFAULT_BUDGETS}
#: The operations that make MAAS power a machine, and the state each starts: the wait for the
#: power slot is bounded by that state's budget.
POWER_OPS: Mapping[str, NodeStatus] = {
    "commission": S.COMMISSIONING,
    "deploy": S.DEPLOYING,
    "release": S.RELEASING,
}


@dataclass(frozen=True)
class WaitPolicy:
    """How to wait: the poll interval range, per-state budgets, and whose clock."""

    poll_interval: tuple[float, float] = (10.0, 15.0)
    budgets: Mapping[NodeStatus, float] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))
    clock: Clock = field(default_factory=Clock)
    abort_on_timeout: bool = True
    progress: Callable[[Machine], None] | None = None
    #: The fleet's power pacing; None: the environment's setting when an action is sent.
    pace: pacing.Pace | None = None

    @classmethod
    def build(
        cls,
        *,
        poll_interval: float | None = None,
        budget_minutes: Mapping[str, float] | None = None,
        clock: Clock | None = None,
        progress: Callable[[Machine], None] | None = None,
        power_actions_per_minute: float | str | None = None,
    ) -> WaitPolicy:
        """From user options: one interval (jittered +-25%), budgets by state name, and the
        fleet's power pace (``power_actions_per_minute``; None: the environment's, else 20)."""
        try:
            pace = pacing.from_environment(power_actions_per_minute)
        except pacing.PacingError as exc:  # a wrong setting: said before any power action
            raise MaasConfigError(str(exc)) from None
        budgets = dict(DEFAULT_BUDGETS)
        for name, minutes in (budget_minutes or {}).items():
            if name not in BUDGET_NAMES:
                raise MaasConfigError(
                    f"no wait budget for state {name!r}; known: {sorted(BUDGET_NAMES)}"
                )
            if float(minutes) <= 0:
                raise MaasConfigError(f"wait budget for {name} must be positive minutes")
            budgets[BUDGET_NAMES[name]] = float(minutes) * MINUTE
        interval = (10.0, 15.0)
        if poll_interval is not None:
            if poll_interval <= 0:
                raise MaasConfigError("poll_interval must be positive seconds")
            interval = (poll_interval * 0.75, poll_interval * 1.25)
        return cls(
            poll_interval=interval,
            budgets=budgets,
            clock=clock or Clock(),
            progress=progress,
            pace=pace,
        )

    def next_poll(self) -> float:
        return random.uniform(*self.poll_interval)  # noqa: S311 (jitter, not crypto)

    def budget(self, status: NodeStatus) -> float:
        return self.budgets.get(status, 30 * MINUTE)


def wait_until(
    client: MaasClient,
    machine: Machine,
    *,
    phase: str,
    target: NodeStatus,
    transitional: Collection[NodeStatus],
    reverts: Collection[NodeStatus] = (),
    policy: WaitPolicy,
) -> Machine:
    """Poll until ``target``; MachineFailed on a failure state, a revert, or a spent budget."""
    clock = policy.clock
    entered = clock.monotonic()
    current = machine
    last = None
    while True:
        if current.status != last:
            entered, last = clock.monotonic(), current.status
            if policy.progress:
                policy.progress(current)
        if current.status is target:
            return current
        if current.status not in transitional:
            reverted = current.status if current.status in reverts else None
            raise MachineFailed(triage.collect(client, current, phase, reverted_to=reverted))
        spent = clock.monotonic() - entered
        budget = policy.budget(current.status)
        if spent >= budget:
            note = f"still {current.status.display} after {budget / MINUTE:.0f} min (client budget)"
            if policy.abort_on_timeout and current.status in (
                S.COMMISSIONING,
                S.DEPLOYING,
                S.DISK_ERASING,
            ):
                note += _abort(client, current)
            raise MachineFailed(triage.collect(client, current, phase, budget_note=note))
        clock.sleep(min(policy.next_poll(), budget - spent))
        current = records.read(client, current.system_id)


def _abort(client: MaasClient, machine: Machine) -> str:
    try:
        client.post(
            f"machines/{machine.system_id}/",
            {"comment": "racksmith: wait budget spent"},
            op="abort",
        )
    except (MaasConflict, MaasServerError, MaasTransportError) as exc:
        return f"; abort failed: {exc}"
    return "; racksmith aborted the operation"


def paced(machine: Machine, op: str, policy: WaitPolicy) -> float:
    """Wait for the power slot of ``op`` on ``machine``; the seconds waited. A wait longer than
    the budget of the state ``op`` starts is refused (:class:`PacingRefused`), nothing sent."""
    state = POWER_OPS[op]
    try:
        pace = policy.pace or pacing.from_environment()
        # Budgets are MAAS seconds (a simulator's run faster); the pace is real seconds.
        budget = policy.budget(state) / policy.clock.scale
        return pacing.wait_turn(
            pace, f"{op} of {machine.label} (within its {state.display} budget)", budget=budget
        )
    except pacing.PacingTimeout as exc:
        raise PacingRefused(str(exc)) from None
    except pacing.PacingError as exc:
        raise MaasConfigError(str(exc)) from None


def _post_then_read(
    client: MaasClient, machine: Machine, op: str, data: list | dict | None, policy: WaitPolicy
) -> Machine:
    """POST a state-changing op, after its power slot. If the answer is lost, re-read instead
    of repeating it."""
    paced(machine, op, policy)
    try:
        return Machine.from_json(client.post(f"machines/{machine.system_id}/", data, op=op))
    except (MaasTransportError, MaasServerError) as exc:
        if isinstance(exc, MaasServerError) and exc.status not in (502, 504):
            raise
        after = records.read(client, machine.system_id)
        if after.status == machine.status:
            raise  # nothing happened: report the original error
        return after


# -- commissioning and the boot disk -----------------------------------------------------------


@dataclass(frozen=True)
class CommissionOptions:
    enable_ssh: bool = False
    skip_bmc_config: bool = True
    testing_scripts: str | None = None  # "none" skips hardware tests

    def fields(self) -> dict[str, str]:
        data = {
            "enable_ssh": str(self.enable_ssh).lower(),
            "skip_bmc_config": str(self.skip_bmc_config).lower(),
        }
        if self.testing_scripts:
            data["testing_scripts"] = self.testing_scripts
        return data


def commission(
    client: MaasClient, machine: Machine, policy: WaitPolicy, options: CommissionOptions
) -> Machine:
    """Commission and wait for Ready; a return to the starting state is a failure."""
    origin = machine.status
    started = _post_then_read(client, machine, "commission", options.fields(), policy)
    return _wait_commissioned(client, started, policy, reverts=(origin,))


def _wait_commissioned(
    client: MaasClient, machine: Machine, policy: WaitPolicy, *, reverts=()
) -> Machine:
    return wait_until(
        client,
        machine,
        phase="commissioning",
        target=S.READY,
        transitional=(S.COMMISSIONING, S.TESTING),
        reverts=reverts,
        policy=policy,
    )


def _block_devices(client: MaasClient, machine: Machine) -> list[BlockDevice]:
    return [
        BlockDevice.from_json(d)
        for d in expect_list(
            "GET blockdevices/", client.get(f"nodes/{machine.system_id}/blockdevices/")
        )
    ]


def pin_boot_disk(
    client: MaasClient,
    machine: Machine,
    rule: BootDiskRule,
    *,
    layout: str = "flat",
    check_mode: bool = False,
) -> Outcome:
    """Point MAAS's boot disk at the rule's disk, re-apply the layout, read it back (§6)."""
    if layout not in LAYOUTS:
        raise MaasConfigError(f"storage layout {layout!r} is not one of {list(LAYOUTS)}")
    outcome = Outcome(machine=machine)
    disks = _block_devices(client, machine)
    want = rule.pick(disks, where=machine.label)
    current = machine.boot_disk
    # flat/lvm put the root partition on the boot disk only: the layout is in place when the
    # chosen disk carries partitions and no other disk does.
    layout_in_place = layout in ("blank", "custom") or (
        want.partitions > 0 and not any(d.partitions for d in disks if d.id != want.id)
    )
    if current is not None and current.id == want.id and layout_in_place:
        return outcome
    was = current.describe() if current else "none"
    if check_mode:
        outcome.did(f"would pin boot disk of {machine.label} to {want.describe()} (now {was})")
        return outcome
    if machine.status is not S.READY:
        raise MachineStateError(
            f"{machine.label} is {machine.status.display}: MAAS only changes the boot disk in Ready"
        )
    base = f"nodes/{machine.system_id}/blockdevices/{want.id}/"
    client.post(base, op="set_boot_disk", idempotent=True)
    client.post(
        f"machines/{machine.system_id}/",
        {"storage_layout": layout, "root_device": want.id},
        op="set_storage_layout",
        idempotent=True,
    )
    after = records.read(client, machine.system_id)
    if after.boot_disk is None or after.boot_disk.id != want.id:
        got = after.boot_disk.describe() if after.boot_disk else "none"
        raise BootDiskError(
            f"{machine.label}: asked MAAS to boot from {want.describe()}, it reports {got}"
        )
    outcome.machine = after
    outcome.did(
        f"pinned boot disk of {machine.label} to {want.describe()} (was {was}), layout {layout}"
    )
    return outcome


def ensure_ready(
    client: MaasClient,
    spec: MachineSpec,
    rule: BootDiskRule,
    policy: WaitPolicy,
    *,
    layout: str = "flat",
    recommission: bool = False,
    options: CommissionOptions | None = None,
    check_mode: bool = False,
) -> Outcome:
    """Enlist: the record exists, is commissioned (Ready) and boots from the pinned disk.

    Machines already past Ready (allocated, deploying, deployed) are left alone. A machine
    whose last commissioning failed is reported with its cause rather than retried, unless
    ``recommission`` asks for it; a New machine (never commissioned, or reverted) is
    commissioned.
    """
    options = options or CommissionOptions()
    outcome = records.ensure(client, spec, check_mode=check_mode)
    machine = outcome.machine
    if machine is None:  # check mode, not created yet
        outcome.actions.append(f"would commission {spec.hostname} and pin its boot disk")
        return outcome
    status = machine.status
    if status in (S.ALLOCATED, S.DEPLOYING, S.DEPLOYED, S.FAILED_DEPLOYMENT) and not recommission:
        return outcome  # past enlist: the deploy phase owns it from here
    if status is S.BROKEN and not recommission:
        raise MachineStateError(
            f"{machine.label} is Broken in MAAS "
            f"({machine.error_description or 'no reason given'}); "
            "after repair run playbooks/reprovision.yml -l HOST"
        )
    if status in (S.FAILED_COMMISSIONING, S.FAILED_TESTING) and not recommission:
        raise MachineFailed(triage.collect(client, machine, "commissioning"))
    if status in (S.RELEASING, S.DISK_ERASING):
        machine = _wait_released(client, machine, policy)
        status = machine.status
    if status in (S.COMMISSIONING, S.TESTING):
        machine = _wait_commissioned(client, machine, policy)
    elif status is S.READY and not recommission:
        pass
    elif check_mode:
        outcome.did(f"would commission {machine.label} (now {status.display})")
        return outcome
    elif status in RELEASABLE:
        machine = release(client, machine, policy).machine or machine
        machine = commission(client, machine, policy, options)
        outcome.did(f"released and recommissioned {machine.label}")
    else:
        machine = commission(client, machine, policy, options)
        outcome.did(f"commissioned {machine.label}")
    outcome.machine = machine
    return outcome.merge(pin_boot_disk(client, machine, rule, layout=layout, check_mode=check_mode))


# -- deployment ----------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class DeployOptions:
    distro_series: str = "jammy"
    hwe_kernel: str | None = None
    user_data: bytes | None = None
    comment: str | None = None

    def fields(self) -> dict[str, str]:
        data = {"distro_series": self.distro_series}
        if self.hwe_kernel:
            data["hwe_kernel"] = self.hwe_kernel
        if self.user_data is not None:
            data["user_data"] = base64.b64encode(self.user_data).decode("ascii")
        if self.comment:
            data["comment"] = self.comment
        return data


def _series_matches(machine: Machine, wanted: str) -> bool:
    return machine.distro_series.split("/")[-1] == wanted.split("/")[-1]


def deploy(
    client: MaasClient,
    machine: Machine,
    policy: WaitPolicy,
    options: DeployOptions,
    *,
    rule: BootDiskRule | None = None,
    layout: str = "flat",
    redeploy_failed: bool = False,
    check_mode: bool = False,
) -> Outcome:
    """Deploy and wait for Deployed. Never redeploys a Deployed machine (that would wipe it)."""
    outcome = Outcome(machine=machine)
    status = machine.status
    if status is S.DEPLOYED:
        if not _series_matches(machine, options.distro_series):
            outcome.warnings.append(
                f"{machine.label} runs {machine.distro_series}, not {options.distro_series}; "
                "left as is (reprovision it to change the OS)"
            )
        return outcome
    if status is S.FAILED_DEPLOYMENT and not redeploy_failed:
        raise MachineFailed(triage.collect(client, machine, "deploy"))
    if status is S.DEPLOYING:
        outcome.machine = _wait_deployed(client, machine, policy)
        return outcome
    if status not in (S.READY, S.ALLOCATED, S.FAILED_DEPLOYMENT):
        raise MachineStateError(
            f"{machine.label} is {machine.status.display}: "
            "deploy needs Ready (run the enlist phase)"
        )
    if check_mode:
        outcome.did(f"would deploy {machine.label} with {options.distro_series}")
        return outcome
    if status is S.FAILED_DEPLOYMENT:
        machine = release(client, machine, policy).machine or machine
        outcome.did(f"released {machine.label} after a failed deployment")
    if rule is not None and machine.status is S.READY:
        # Someone may have recommissioned since enlist: check the pin right before installing.
        outcome.merge(pin_boot_disk(client, machine, rule, layout=layout))
        machine = outcome.machine or machine
    started = _post_then_read(client, machine, "deploy", options.fields(), policy)
    outcome.did(
        f"deployed {machine.label} with {options.distro_series}"
        + (f" ({options.hwe_kernel})" if options.hwe_kernel else "")
    )
    outcome.machine = _wait_deployed(client, started, policy)
    return outcome


def _wait_deployed(client: MaasClient, machine: Machine, policy: WaitPolicy) -> Machine:
    return wait_until(
        client,
        machine,
        phase="deploy",
        target=S.DEPLOYED,
        transitional=(S.ALLOCATED, S.DEPLOYING),
        reverts=(S.READY,),
        policy=policy,
    )


# -- release ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseOptions:
    erase: bool = False
    secure_erase: bool = False
    quick_erase: bool = False
    comment: str | None = None
    force: bool = False

    def fields(self) -> dict[str, str]:
        data = {
            k: "true" for k in ("erase", "secure_erase", "quick_erase", "force") if getattr(self, k)
        }
        if self.comment:
            data["comment"] = self.comment
        return data

    def describe(self) -> str:
        if not self.erase:
            return "without erasing disks"
        kind = "secure" if self.secure_erase else "quick" if self.quick_erase else "full"
        return f"with {kind} disk erase"


def release(
    client: MaasClient,
    machine: Machine,
    policy: WaitPolicy,
    options: ReleaseOptions | None = None,
    *,
    check_mode: bool = False,
) -> Outcome:
    """Return the machine to Ready (optionally erasing its disks) and wait for it."""
    options = options or ReleaseOptions()
    if (options.secure_erase or options.quick_erase) and not options.erase:
        raise MaasConfigError("secure_erase/quick_erase only apply with erase: true")
    outcome = Outcome(machine=machine)
    status = machine.status
    if status is S.READY:
        return outcome
    if status in (S.RELEASING, S.DISK_ERASING):
        outcome.machine = _wait_released(client, machine, policy)
        return outcome
    if status not in RELEASABLE:
        raise MachineStateError(f"{machine.label} is {status.display}: there is nothing to release")
    if check_mode:
        outcome.did(f"would release {machine.label} ({status.display}) {options.describe()}")
        return outcome
    started = _post_then_read(client, machine, "release", options.fields(), policy)
    outcome.did(f"released {machine.label} {options.describe()}")
    outcome.machine = _wait_released(client, started, policy)
    return outcome


def _wait_released(client: MaasClient, machine: Machine, policy: WaitPolicy) -> Machine:
    return wait_until(
        client,
        machine,
        phase="release",
        target=S.READY,
        transitional=(S.RELEASING, S.DISK_ERASING),
        policy=policy,
    )
