"""Many machines at once: every host's operation in flight together, one polling loop for all.

The Ansible modules run one machine per worker, so with ``forks=64`` a 400-host deploy goes in
waves, each as long as its slowest install. This module runs the *same* lifecycle functions
(:func:`racksmith.maas.lifecycle.deploy`, :func:`~racksmith.maas.lifecycle.ensure_ready`) for
a whole batch from one controller process, so how many hosts install at once is a setting
(``max_in_flight``, default all), not a side effect of ``forks``.

How it composes the lifecycle without copying it: each host's operation runs in its own thread
with its own client (a :class:`~racksmith.maas.client.MaasClient` is not shared between
threads), and with a :class:`~racksmith.maas.lifecycle.WaitPolicy` whose clock is a
:class:`_HostClock`. When ``wait_until`` sleeps between polls, that clock parks the thread
until the batch's one polling loop has read *every* waiting machine with one
``GET machines/?id=...`` (per 100 machines); the host's next ``GET machines/{id}/`` is then
answered from that read. So the per-state budgets, the revert and failure checks, the triage
and the idempotent "look first" logic are exactly the single-host code; only the polls are
shared. A sleep that a budget cuts short (the last one before a budget is spent) wakes on its
own and reads the machine itself, so a budget is never overrun waiting for the loop.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, cast

from racksmith.maas import lifecycle, machines
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import Clock
from racksmith.maas.errors import MaasConfigError, MaasError, MachineFailed, MachineStateError
from racksmith.maas.machines import MachineSpec, Outcome
from racksmith.maas.model import Machine, expect_list
from racksmith.maas.storage import BootDiskRule

#: Machines per batched ``GET machines/?id=...`` (keeps the query string near 1-2 KB).
READ_CHUNK = 100
_MACHINE_PATH = re.compile(r"^machines/([^/?]+)/$")


@dataclass(frozen=True)
class FleetHost:
    """One host of a batch: its inventory name, PXE MAC and (to enlist it) its record spec."""

    name: str
    pxe_mac: str
    spec: MachineSpec | None = None
    #: Per-host deploy user data (cloud-init), when it differs per host.
    user_data: bytes | None = None

    def __repr__(self) -> str:  # spec holds the BMC password; user data may hold keys
        return f"FleetHost(name={self.name!r}, pxe_mac={self.pxe_mac!r})"


@dataclass
class HostResult:
    """What happened to one host: the lifecycle's Outcome, or the failure and its cause."""

    name: str
    failed: bool = False
    changed: bool = False
    actions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    machine: dict[str, Any] | None = None
    msg: str = ""
    cause: str | None = None
    triage: dict[str, Any] | None = None

    @property
    def state(self) -> str:
        """The word the progress line counts this host under once it is finished."""
        if self.failed:
            return "failed"
        status = (self.machine or {}).get("status_name") or "done"
        return str(status).lower()

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Progress:
    """A snapshot for the operator: hosts per state, failures since the last one, time spent."""

    phase: str
    counts: Mapping[str, int]
    new_failures: Sequence[tuple[str, str]]
    elapsed: float
    total: int
    #: The batch's last snapshot: every host has finished.
    final: bool = False

    def line(self) -> str:
        """``deploy: 212 deploying, 180 deployed, 8 failed, 0:14:32`` (busiest state first,
        failed always shown)."""
        counts = dict(self.counts)
        failed = counts.pop("failed", 0)
        parts = [f"{n} {state}" for state, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))]
        parts.append(f"{failed} failed")
        secs = int(self.elapsed)
        parts.append(f"{secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}")
        return f"{self.phase}: {', '.join(parts)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "counts": dict(self.counts),
            "new_failures": [list(f) for f in self.new_failures],
            "elapsed": round(self.elapsed, 1),
            "total": self.total,
            "final": self.final,
            "line": self.line(),
        }


#: One host's operation: given its own client and wait policy, do the single-host lifecycle step.
Operation = Callable[[MaasClient, lifecycle.WaitPolicy, FleetHost], Outcome]


def deploy_operation(
    options: lifecycle.DeployOptions,
    *,
    rule: BootDiskRule | None = None,
    layout: str = "flat",
    redeploy_failed: bool = False,
    check_mode: bool = False,
) -> Operation:
    """The deploy phase for one host, as ``maas_deploy`` does it (find by PXE MAC, then
    :func:`lifecycle.deploy`); a host's own ``user_data`` replaces the batch's."""

    def op(client: MaasClient, policy: lifecycle.WaitPolicy, host: FleetHost) -> Outcome:
        machine = machines.find(client, mac=host.pxe_mac)
        if machine is None:
            raise MachineStateError(
                f"no MAAS machine has PXE MAC {host.pxe_mac}: run the enlist phase first"
            )
        opts = options
        if host.user_data is not None:
            opts = dataclasses.replace(options, user_data=host.user_data)
        return lifecycle.deploy(
            client,
            machine,
            policy,
            opts,
            rule=rule,
            layout=layout,
            redeploy_failed=redeploy_failed,
            check_mode=check_mode,
        )

    return op


def ready_operation(
    rule: BootDiskRule,
    *,
    layout: str = "flat",
    recommission: bool = False,
    options: lifecycle.CommissionOptions | None = None,
    check_mode: bool = False,
) -> Operation:
    """The enlist phase for one host, as ``maas_machine state=ready`` does it."""

    def op(client: MaasClient, policy: lifecycle.WaitPolicy, host: FleetHost) -> Outcome:
        if host.spec is None:
            raise MaasConfigError(f"{host.name}: enlisting needs the machine's record spec")
        return lifecycle.ensure_ready(
            client,
            host.spec,
            rule,
            policy,
            layout=layout,
            recommission=recommission,
            options=options,
            check_mode=check_mode,
        )

    return op


# -- the shared polling loop ----------------------------------------------------------------------


class _Rounds:
    """The batch's polling rounds: hosts park here between polls; the loop wakes them."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self._cond = threading.Condition()
        self._round = 0
        self._waiting: Counter[str] = Counter()
        self._snapshot: dict[str, dict[str, Any]] = {}

    def park(self, system_id: str | None, seconds: float) -> dict[str, Any] | None:
        """Wait for the next round (at most ``seconds`` of MAAS time); the machine's JSON from
        that round, or None when the wait ran out first or the round did not read it."""
        deadline = self.clock.monotonic() + seconds
        with self._cond:
            start = self._round
            if system_id:
                self._waiting[system_id] += 1
            try:
                while self._round == start:
                    left = (deadline - self.clock.monotonic()) / self.clock.scale
                    if left <= 0:
                        return None
                    self._cond.wait(left)
                return self._snapshot.get(system_id) if system_id else None
            finally:
                if system_id:
                    self._waiting[system_id] -= 1
                    if not self._waiting[system_id]:
                        del self._waiting[system_id]

    def waiting(self) -> list[str]:
        with self._cond:
            return sorted(self._waiting)

    def advance(self, snapshot: dict[str, dict[str, Any]]) -> None:
        with self._cond:
            self._snapshot = snapshot
            self._round += 1
            self._cond.notify_all()


class _HostClient:
    """One host's client as the lifecycle sees it: the real client, except that the read of
    its machine right after a shared round is answered from that round (and it learns which
    machine is its host's from the paths the lifecycle uses)."""

    def __init__(self, real: MaasClient):
        self._real = real
        self.system_id: str | None = None
        self.fresh: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        match = _MACHINE_PATH.match(path)
        if match:
            self.system_id = match.group(1)
            if (
                method == "GET"
                and self.fresh is not None
                and not kwargs.get("op")
                and not kwargs.get("params")
            ):
                answer, self.fresh = self.fresh, None
                return answer
        self.fresh = None
        answer = self._real.call(method, path, **kwargs)
        if path == "machines/" and isinstance(answer, dict) and answer.get("system_id"):
            self.system_id = str(answer["system_id"])  # a machine just created
        elif path == "machines/" and isinstance(answer, list) and len(answer) == 1:
            self.system_id = str(answer[0].get("system_id") or "") or None  # found by MAC
        return answer

    def get(self, path: str, params: Any = None, *, op: str | None = None) -> Any:
        return self.call("GET", path, op=op, params=params, idempotent=True)

    def post(self, path: str, data: Any = None, *, op: str | None = None, **kwargs: Any) -> Any:
        return self.call("POST", path, op=op, data=data, **kwargs)

    def put(self, path: str, data: Any = None) -> Any:
        return self.call("PUT", path, data=data, idempotent=True)

    def delete(self, path: str) -> Any:
        return self.call("DELETE", path, idempotent=True)


class _HostClock(Clock):
    """The wait policy's clock for one host: time as the batch's, sleeps parked on the rounds."""

    def __init__(self, base: Clock, rounds: _Rounds, client: _HostClient):
        self.base, self.rounds, self.client = base, rounds, client
        self.scale = base.scale

    def monotonic(self) -> float:
        return self.base.monotonic()

    def wall(self) -> float:
        return self.base.wall()

    def sleep(self, seconds: float) -> None:
        self.client.fresh = self.rounds.park(self.client.system_id, seconds)


class _Tracker:
    """Where each host stands, for the progress line; thread-safe."""

    def __init__(self, hosts: Iterable[FleetHost]):
        self._lock = threading.Lock()
        self.state = {h.name: "queued" for h in hosts}
        self._failures: list[tuple[str, str]] = []

    def saw(self, name: str, machine: Machine) -> None:
        with self._lock:
            self.state[name] = machine.status.display.lower()

    def set(self, name: str, state: str) -> None:
        with self._lock:
            self.state[name] = state

    def finished(self, result: HostResult) -> None:
        with self._lock:
            self.state[result.name] = result.state
            if result.failed:
                self._failures.append((result.name, result.cause or result.msg))

    def snapshot(self) -> tuple[Counter[str], list[tuple[str, str]]]:
        with self._lock:
            failures, self._failures = self._failures, []
            return Counter(self.state.values()), failures


# -- the batch -------------------------------------------------------------------------------------


@dataclass
class FleetRun:
    """The batch's result: one :class:`HostResult` per host, and what the loop did."""

    results: dict[str, HostResult]
    rounds: int = 0
    batch_reads: int = 0
    elapsed: float = 0.0

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.results.values())

    @property
    def failed(self) -> list[str]:
        return [name for name, r in self.results.items() if r.failed]


def run(
    hosts: Sequence[FleetHost],
    operation: Operation,
    *,
    connect: Callable[[], MaasClient],
    policy: lifecycle.WaitPolicy,
    phase: str = "deploy",
    max_in_flight: int | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> FleetRun:
    """Run ``operation`` for every host at once (at most ``max_in_flight`` together; None: all)
    and wait for all of them with one polling loop, jittered like a single wait.

    ``connect`` makes one client per host thread and one for the loop. ``progress`` is called
    after every round with the counts per state and the hosts that failed since the last call.
    A host's failure never stops the others; its :class:`HostResult` carries the named cause.
    """
    names = [h.name for h in hosts]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise MaasConfigError(f"hosts named more than once in the batch: {', '.join(dupes)}")
    if max_in_flight is not None and max_in_flight < 1:
        raise MaasConfigError("max_in_flight must be at least 1 (or unset: all hosts)")
    if not hosts:
        return FleetRun(results={})
    clock = policy.clock
    rounds = _Rounds(clock)
    tracker = _Tracker(hosts)
    # Each host's waits sleep "forever" (longer than any round) unless a budget cuts the sleep
    # short: they wake when the loop has read their machine.
    parked = policy.poll_interval[1] * 4

    def one(host: FleetHost) -> HostResult:
        tracker.set(host.name, "starting")
        real = connect()
        proxy = _HostClient(real)
        user_progress = policy.progress

        def saw(machine: Machine) -> None:
            tracker.saw(host.name, machine)
            if user_progress:
                user_progress(machine)

        host_policy = dataclasses.replace(
            policy,
            clock=_HostClock(clock, rounds, proxy),
            poll_interval=(parked, parked),
            progress=saw,
        )
        try:
            outcome = operation(cast(MaasClient, proxy), host_policy, host)
            result = HostResult(
                name=host.name,
                changed=outcome.changed,
                actions=list(outcome.actions),
                warnings=list(outcome.warnings),
                machine=outcome.machine.summary() if outcome.machine else None,
            )
        except MachineFailed as exc:
            result = HostResult(
                name=host.name,
                failed=True,
                msg=real.redact(str(exc)),
                cause=real.redact(exc.triage.cause),
                triage=exc.triage.as_dict(),
            )
        except MaasError as exc:
            result = HostResult(name=host.name, failed=True, msg=real.redact(str(exc)))
        except Exception as exc:  # a bug must fail this host, named, not the whole batch
            result = HostResult(
                name=host.name,
                failed=True,
                msg=real.redact(f"internal error: {type(exc).__name__}: {exc}"),
            )
        finally:
            real.close()
        tracker.finished(result)
        return result

    started = clock.monotonic()
    run_ = FleetRun(results={})
    reader = connect()
    workers = min(len(hosts), max_in_flight or len(hosts))
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fleet") as pool:
            pending: set[Future[HostResult]] = {pool.submit(one, h) for h in hosts}
            while pending:
                # One jittered poll interval (or less, once every host is done), then one round.
                done, pending = wait(pending, timeout=policy.next_poll() / clock.scale)
                for fut in done:
                    result = fut.result()
                    run_.results[result.name] = result
                snapshot, reads = _read_all(reader, rounds.waiting())
                run_.batch_reads += reads
                rounds.advance(snapshot)
                run_.rounds += 1
                if progress:
                    counts, failures = tracker.snapshot()
                    elapsed = clock.monotonic() - started
                    progress(Progress(phase, counts, failures, elapsed, len(hosts), not pending))
    finally:
        reader.close()
    run_.elapsed = clock.monotonic() - started
    run_.results = {h.name: run_.results[h.name] for h in hosts}
    return run_


def _read_all(client: MaasClient, system_ids: list[str]) -> tuple[dict[str, dict[str, Any]], int]:
    """Every waiting machine, ``READ_CHUNK`` per request. A failed read leaves those machines
    out: their hosts then read their own machine (the single-host path, with its retries)."""
    snapshot: dict[str, dict[str, Any]] = {}
    reads = 0
    for i in range(0, len(system_ids), READ_CHUNK):
        chunk = system_ids[i : i + READ_CHUNK]
        try:
            answer = expect_list("GET machines/", client.get("machines/", {"id": chunk}))
        except MaasError:
            continue
        reads += 1
        for item in answer:
            if isinstance(item, dict) and item.get("system_id") in chunk:
                snapshot[str(item["system_id"])] = item
    return snapshot, reads
