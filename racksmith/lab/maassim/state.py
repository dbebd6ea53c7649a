"""The simulated MAAS region: machines and their lifecycle, events, tags, users, faults.

The lifecycle follows maas-api.md §3: admin-created machines commission, deploy passes
through Allocated to Deploying, abort is asynchronous, release goes through Releasing or Disk
erasing, and every state change is checked against MAAS's transition table (409
``Invalid transition: A -> B.``). Time-driven steps are *operations* with a due time on the
accelerated clock; :meth:`Store.advance` completes whatever is due (with the events a real
region would log on the way) at the start of each request, so the state is exact whenever
anyone looks. Faults turn an operation's outcome into the failures the field sees.

Everything lives behind one lock and is saved (debounced) to a JSON file, mode 0600 because
it holds API keys and BMC passwords, so a restarted simulator has the same machines and keys.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import string
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from racksmith.lab.maassim import hardware
from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.errors import ApiError, conflict, field_errors, forbidden, not_found
from racksmith.lab.maassim.labhosts import LabFault, NoHosts
from racksmith.lab.maassim.oauth import NonceStore, User
from racksmith.maas.model import RELEASABLE
from racksmith.maas.model import NodeStatus as S

log = logging.getLogger("racksmith.lab.maassim")

#: Simulated seconds each operation takes (a GPU server's POST makes the real ones long).
DURATIONS = {
    "commissioning": 300.0,
    "deploying": 600.0,
    "releasing": 30.0,
    "erase_quick": 120.0,
    "erase_secure": 600.0,
    "erase_full": 1800.0,
    "abort": 10.0,
    "power_revert": 20.0,
}

#: Faults the simulator acts on (racksmith.lab.spec.KNOWN_FAULTS); others are not MAAS's.
MAAS_FAULTS = frozenset(
    {"commission_fails", "deploy_fails", "power_fails", "maas_busy", "create_504", "deploy_timeout"}
)

#: node_status.py NODE_TRANSITIONS, the part racksmith meets (maas-api.md §3).
TRANSITIONS: dict[S, frozenset[S]] = {
    S.NEW: frozenset({S.COMMISSIONING, S.TESTING, S.READY, S.BROKEN, S.MISSING, S.RETIRED}),
    S.COMMISSIONING: frozenset({S.READY, S.FAILED_COMMISSIONING, S.NEW, S.TESTING, S.BROKEN}),
    S.READY: frozenset({S.COMMISSIONING, S.ALLOCATED, S.TESTING, S.BROKEN}),
    S.ALLOCATED: frozenset({S.DEPLOYING, S.READY, S.RELEASING, S.DISK_ERASING, S.BROKEN}),
    S.DEPLOYING: frozenset({S.DEPLOYED, S.FAILED_DEPLOYMENT, S.ALLOCATED, S.RELEASING, S.BROKEN}),
    S.DEPLOYED: frozenset({S.RELEASING, S.DISK_ERASING, S.READY, S.BROKEN, S.TESTING}),
    S.FAILED_DEPLOYMENT: frozenset({S.RELEASING, S.READY, S.ALLOCATED, S.BROKEN, S.TESTING}),
    S.RELEASING: frozenset(
        {S.READY, S.FAILED_DEPLOYMENT, S.RELEASING_FAILED, S.FAILED_DISK_ERASING}
    ),
    S.DISK_ERASING: frozenset({S.READY, S.FAILED_DISK_ERASING, S.RELEASING, S.BROKEN}),
    S.BROKEN: frozenset({S.COMMISSIONING, S.READY, S.DEPLOYED, S.RELEASING, S.DISK_ERASING}),
    S.FAILED_COMMISSIONING: frozenset({S.COMMISSIONING, S.TESTING, S.BROKEN}),
    S.FAILED_TESTING: frozenset({S.COMMISSIONING, S.TESTING, S.BROKEN, S.READY}),
    S.FAILED_DISK_ERASING: frozenset({S.RELEASING, S.DISK_ERASING, S.BROKEN}),
    S.RELEASING_FAILED: frozenset({S.RELEASING, S.BROKEN}),
    S.MISSING: frozenset({S.COMMISSIONING, S.NEW, S.BROKEN}),
}
COMMISSIONABLE = frozenset(
    {S.NEW, S.READY, S.FAILED_COMMISSIONING, S.FAILED_TESTING, S.BROKEN, S.MISSING}
)
LEVELS = {"AUDIT": 0, "DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
DISTROS = {"jammy": "ubuntu/jammy", "noble": "ubuntu/noble"}
KERNELS = {"jammy": ("ga-22.04", "hwe-22.04"), "noble": ("ga-24.04", "hwe-24.04")}

BMC_REVERT = (
    "Failed to query node's BMC",
    "({user}) - Aborting COMMISSIONING and reverting to {prev}. Unable to power control the node. "
    "Please check power credentials.",
)
COMMISSION_FAILURE = (
    "Script result",
    "maas-lshw failed: exit status 1 (lshw: PCI 0000:c1:00.0: config space not readable; "
    "device fell off the bus)",
)
CURTIN_FAILURE_LOG = """\
curtin: Installation started. (23.1.1)
start: cmd-install/stage-partitioning/builtin/cmd-block-meta: curtin command block-meta
finish: cmd-install/stage-partitioning/builtin/cmd-block-meta: SUCCESS: curtin command block-meta
start: cmd-install/stage-extract/builtin/cmd-extract: curtin command extract
finish: cmd-install/stage-extract/builtin/cmd-extract: SUCCESS: curtin command extract
start: cmd-install/stage-curthooks/builtin/cmd-curthooks: curtin command curthooks
Running command ['unshare', '--fork', '--pid', '--', 'chroot', '/tmp/tmp3x8kq0/target', \
'grub-install', '--target=x86_64-efi', '--efi-directory=/boot/efi', '--bootloader-id=ubuntu', \
'--recheck', '--no-nvram'] with allowed return codes [0] (capture=False)
Installing for x86_64-efi platform.
grub-install: error: efibootmgr failed to register the boot entry: No space left on device.
finish: cmd-install/stage-curthooks/builtin/cmd-curthooks: FAIL: curtin command curthooks
Unexpected error while running command.
Command: ['unshare', '--fork', '--pid', '--', 'chroot', '/tmp/tmp3x8kq0/target', 'grub-install']
Exit code: 1
"""


def _token(n: int) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


@dataclass
class SimMachine:
    system_id: str
    hostname: str
    architecture: str = "amd64/generic"
    status: int = int(S.NEW)
    previous_status: int = int(S.NEW)
    owner: str | None = None
    description: str = ""
    power_type: str = ""
    power_parameters: dict[str, str] = field(default_factory=dict)
    power_state: str = "off"
    macs: list[str] = field(default_factory=list)
    interface_ids: list[int] = field(default_factory=list)
    pool: str = "default"
    zone: str = "default"
    domain: str = "maas"
    min_hwe_kernel: str = ""
    osystem: str = ""
    distro_series: str = ""
    hwe_kernel: str = ""
    user_data: str = ""
    error_description: str = ""
    locked: bool = False
    tags: list[str] = field(default_factory=list)
    model: str = ""
    seed: str = ""
    lab_server: str | None = None
    ip: str | None = None
    faults: list[str] = field(default_factory=list)
    fault_state: dict[str, int] = field(default_factory=dict)
    commissioned: bool = False
    block_devices: list[dict[str, Any]] = field(default_factory=list)
    boot_disk_id: int | None = None
    storage_layout: str = ""
    op: dict[str, Any] | None = None
    logs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimMachine:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def state(self) -> S:
        return S(self.status)


class Store:
    """All simulator state. Call methods with ``store.lock`` held (the server does)."""

    def __init__(
        self,
        *,
        clock: SimClock | None = None,
        path: Path | None = None,
        rack=None,
        hosts=None,
        seed: int | None = None,
    ):
        self.lock = threading.RLock()
        self.clock = clock or SimClock()
        self.path = path
        self.rack = rack
        self.hosts = hosts or NoHosts()
        self.rng = random.Random(seed)  # noqa: S311 (simulation, not crypto)
        self.nonces = NonceStore()
        self.machines: dict[str, SimMachine] = {}
        self.events: list[dict[str, Any]] = []
        self.events_by_node: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        self.tags: dict[str, dict[str, str]] = {}
        self.users: dict[str, User] = {}
        self.pools = {"default": "Default pool"}
        self.zones = {"default": "Default zone"}
        self.config: dict[str, Any] = {"node_timeout": 30, "maas_name": "racksmith-lab"}
        self.counters: Counter[str] = Counter()
        self.http_faults: list[dict[str, Any]] = []
        self.stats: Counter[str] = Counter()
        self._dirty = False
        self._generation = 0  # bumped by every change
        self._saved_generation = -1  # the newest generation on disk
        self._save_lock = threading.RLock()  # one writer of the file (and its .tmp) at a time
        self._stop = threading.Event()
        self.key_source: Path | None = None  # where an adopted admin key came from
        if path is not None and path.exists():
            self._load(path)
        if not self.users:
            self.add_user("admin", superuser=True)
            self.add_user("operator", superuser=False)
        self.dirty()

    # -- persistence ----------------------------------------------------------------------

    def dirty(self) -> None:
        self._dirty = True
        self._generation += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "version": 1,
            "clock": self.clock.now(),
            "machines": [asdict(m) for m in self.machines.values()],
            "events": self.events,
            "tags": self.tags,
            "users": [asdict(u) for u in self.users.values()],
            "pools": self.pools,
            "zones": self.zones,
            "config": self.config,
            "counters": dict(self.counters),
        }

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"cannot read MAAS simulator state {path}: {exc}") from exc
        self.clock = SimClock(self.clock.speed, start=float(data.get("clock", 0.0)))
        for raw in data.get("machines", []):
            machine = SimMachine.from_dict(raw)
            self.machines[machine.system_id] = machine
        self.events = list(data.get("events", []))
        for event in self.events:
            self.events_by_node[event["node"]].append(event)
        self.tags = dict(data.get("tags", {}))
        self.users = {u["username"]: User(**u) for u in data.get("users", [])}
        self.pools = dict(data.get("pools", self.pools))
        self.zones = dict(data.get("zones", self.zones))
        self.config.update(data.get("config", {}))
        self.counters.update(data.get("counters", {}))

    def save(self) -> None:
        if self.path is None:
            return
        with self._save_lock:
            with self.lock:
                text = json.dumps(self.snapshot())
                generation = self._generation
                self._dirty = False
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
            tmp.replace(self.path)
            self._saved_generation = max(self._saved_generation, generation)

    def persist(self) -> None:
        """Save now if anything changed since the last save: the server calls this before it
        answers, so a change it has acknowledged survives the simulator being killed (the
        debounced saver alone left a one-second window). Concurrent callers share one write."""
        if self.path is None:
            return
        with self.lock:
            wanted = self._generation
        if self._saved_generation >= wanted:
            return
        with self._save_lock:
            if self._saved_generation < wanted:
                self.save()

    def start_saver(self, interval: float = 1.0) -> None:
        """Save at most once per ``interval`` while something changed."""

        def loop() -> None:
            while not self._stop.wait(interval):
                if self._dirty:
                    try:
                        self.save()
                    except OSError as exc:
                        log.error("cannot save simulator state: %s", exc)

        if self.path is not None:
            threading.Thread(target=loop, name="maassim-saver", daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self.save()

    # -- users -----------------------------------------------------------------------------

    def add_user(self, username: str, *, superuser: bool) -> User:
        user = User(username, _token(18), _token(18), _token(32), superuser)
        self.users[username] = user
        return user

    def admin_key(self) -> str:
        return self.users["admin"].api_key

    def set_admin_key(self, key: str) -> None:
        """Adopt an API key issued elsewhere (the lab writes one to secrets/maas.env)."""
        parts = key.strip().split(":")
        if len(parts) != 3 or not all(parts):
            raise ValueError("the admin API key must be consumer_key:token_key:token_secret")
        self.users["admin"] = User("admin", *parts, is_superuser=True)
        self.dirty()

    # -- events ----------------------------------------------------------------------------

    def emit(
        self, m: SimMachine, level: str, type_: str, description: str = "", user: str = ""
    ) -> None:
        self.counters["event"] += 1
        event = {
            "id": self.counters["event"],
            "node": m.system_id,
            "hostname": m.hostname,
            "username": user,
            "level": level,
            "created": time.strftime("%a, %d %b. %Y %H:%M:%S", time.gmtime(self.clock.wall())),
            "type": type_,
            "description": description,
        }
        self.events.append(event)
        self.events_by_node[m.system_id].append(event)
        self.dirty()

    def status_message(self, m: SimMachine) -> str:
        events = self.events_by_node.get(m.system_id)
        if not events:
            return ""
        last = events[-1]
        return f"{last['type']} - {last['description']}" if last["description"] else last["type"]

    def query_events(
        self,
        *,
        nodes,
        hostnames,
        macs,
        level: str,
        limit: int,
        after: int | None,
        before: int | None,
    ) -> list[dict[str, Any]]:
        threshold = LEVELS[level]
        wanted = set(nodes)
        wanted |= {m.system_id for m in self.machines.values() if m.hostname in set(hostnames)}
        wanted |= {m.system_id for m in self.machines.values() if set(m.macs) & set(macs)}
        pool = (
            [e for sid in wanted for e in self.events_by_node.get(sid, [])]
            if (nodes or hostnames or macs)
            else self.events
        )
        selected = [
            e
            for e in pool
            if LEVELS.get(e["level"], 20) >= threshold
            and (after is None or e["id"] > after)
            and (before is None or e["id"] < before)
        ]
        selected.sort(key=lambda e: e["id"], reverse=True)
        if after is not None:  # tailing: the events right after `after`, still newest first
            selected = selected[-limit:]
        return selected[:limit]

    # -- machines --------------------------------------------------------------------------

    def get(self, system_id: str) -> SimMachine:
        machine = self.machines.get(system_id)
        if machine is None:
            raise not_found("Machine")
        return machine

    def by_mac(self, mac: str) -> SimMachine | None:
        return next((m for m in self.machines.values() if mac in m.macs), None)

    def new_system_id(self) -> str:
        alphabet = string.ascii_lowercase + string.digits
        while True:
            system_id = "".join(self.rng.choice(alphabet) for _ in range(6))
            if system_id not in self.machines:
                return system_id

    def set_status(self, m: SimMachine, new: S, *, user: str = "") -> None:
        old = m.state
        if new is old:
            return
        if new not in TRANSITIONS.get(old, frozenset()):
            raise conflict(f"Invalid transition: {old.display} -> {new.display}.")
        m.previous_status = int(old)
        m.status = int(new)
        self.emit(
            m, "INFO", "Node changed status", f"From '{old.display}' to '{new.display}'", user
        )

    def create_machine(
        self,
        *,
        hostname: str | None,
        macs: list[str],
        architecture: str,
        power_type: str,
        power_parameters: dict[str, str],
        commission: bool,
        user: User | None,
        extra: dict[str, str],
    ) -> SimMachine:
        system_id = self.new_system_id()
        server = next(
            (s for s in (self.rack.servers if self.rack else ()) if s.pxe_mac in macs), None
        )
        machine = SimMachine(
            system_id=system_id,
            hostname=hostname or self._random_hostname(),
            architecture=architecture,
            power_type=power_type,
            power_parameters=dict(power_parameters),
            macs=list(macs),
            model=server.model if server else "",
            seed=f"lab-{server.index}" if server else f"mac-{macs[0]}",
            lab_server=server.name if server else None,
            faults=sorted(set(server.faults) & MAAS_FAULTS) if server else [],
        )
        for key in ("description", "pool", "zone", "domain", "min_hwe_kernel"):
            if extra.get(key):
                setattr(machine, key, extra[key])
        for _ in macs:
            self.counters["interface"] += 1
            machine.interface_ids.append(self.counters["interface"])
        self.machines[system_id] = machine
        who = user.username if user else ""
        self.emit(
            machine,
            "INFO",
            "Enlisted" if user is None else "Created",
            f"Machine {machine.hostname} created",
            who,
        )
        if user is not None and user.is_superuser and commission:
            self.start_commissioning(machine, user)
        return machine

    def _random_hostname(self) -> str:
        words = ("able", "bold", "calm", "deep", "fair", "keen", "neat", "wise")
        animals = ("koala", "otter", "lynx", "heron", "yak", "ibis", "wren", "mole")
        while True:
            name = f"{self.rng.choice(words)}-{self.rng.choice(animals)}-{self.rng.randrange(100)}"
            if not any(m.hostname == name for m in self.machines.values()):
                return name

    def enlist_ready(self, count: int) -> None:
        """``--machines N``: commissioned, Ready machines named sim-0001... (idempotent)."""
        admin = self.users["admin"]
        for i in range(1, count + 1):
            name = f"sim-{i:04d}"
            if any(m.hostname == name for m in self.machines.values()):
                continue
            mac = f"52:54:00:{(i >> 16) & 255:02x}:{(i >> 8) & 255:02x}:{i & 255:02x}"
            machine = self.create_machine(
                hostname=name,
                macs=[mac],
                architecture="amd64/generic",
                power_type="redfish",
                power_parameters={
                    "power_address": f"127.0.0.1:{20000 + i}",
                    "power_user": "root",
                    "power_pass": _token(12),
                    "node_id": "System.Embedded.1",
                },
                commission=False,
                user=admin,
                extra={},
            )
            self._discover_hardware(machine)
            self.set_status(machine, S.READY, user="admin")

    # -- operations (state changes that take time) ------------------------------------------

    def _start(
        self,
        m: SimMachine,
        kind: str,
        duration: float,
        outcome: str = "ok",
        script: list[tuple[float, str, str, str]] = (),
        **extra: Any,
    ) -> None:
        now = self.clock.now()
        self.counters["op"] += 1
        m.op = {
            "kind": kind,
            "started": now,
            "due": now + duration,
            "outcome": outcome,
            "token": self.counters["op"],
            "script": [[now + frac * duration, lvl, typ, desc] for frac, lvl, typ, desc in script],
            **extra,
        }
        self.dirty()

    def start_commissioning(self, m: SimMachine, user: User, params: dict | None = None) -> None:
        if m.state not in COMMISSIONABLE:
            raise conflict(f"Invalid transition: {m.state.display} -> Commissioning.")
        if not m.power_type:
            raise ApiError(
                500, "Unconfigured power type. Please configure the power type and try again."
            )
        prev = m.state
        self.set_status(m, S.COMMISSIONING, user=user.username)
        m.owner = user.username
        m.error_description = ""
        self.emit(m, "AUDIT", "Node", f"Started commissioning on '{m.hostname}'.", user.username)
        if "power_fails" in m.faults:
            revert = BMC_REVERT[1].format(user=user.username, prev=prev.display.upper())
            self._start(
                m,
                "commissioning",
                DURATIONS["power_revert"],
                "revert",
                prev=int(prev),
                final=[("ERROR", BMC_REVERT[0], revert)],
            )
            return
        outcome = "fail" if "commission_fails" in m.faults else "ok"
        self._start(
            m,
            "commissioning",
            DURATIONS["commissioning"],
            outcome,
            prev=int(prev),
            script=[
                (0.02, "INFO", "Powering on", ""),
                (0.10, "INFO", "PXE Request", "commissioning"),
                (0.20, "INFO", "Loading ephemeral", ""),
                (0.30, "INFO", "Gathering information", ""),
            ],
        )
        m.power_state = "on"

    def start_deploying(
        self, m: SimMachine, user: User, *, distro: str, kernel: str, user_data: str, comment: str
    ) -> None:
        if m.state is S.READY:
            self.set_status(m, S.ALLOCATED, user=user.username)
            m.owner = user.username
        elif m.state is S.ALLOCATED:
            if m.owner != user.username and not user.is_superuser:
                raise forbidden()
        else:
            raise conflict(f"Can't deploy a machine that is in the '{m.state.display}' state")
        self.set_status(m, S.DEPLOYING, user=user.username)
        m.osystem, m.distro_series, m.hwe_kernel = "ubuntu", distro, kernel
        m.user_data = user_data
        m.ip = self._address(m)
        m.power_state = "on"
        if comment:
            self.emit(m, "AUDIT", "Node", f"Deploying: {comment}", user.username)
        if "deploy_timeout" in m.faults:
            outcome = "hang"
        elif "deploy_fails" in m.faults:
            outcome = "fail"
        else:
            outcome = "ok"
        boots = outcome == "ok" and self.hosts.knows(m.lab_server)
        self._start(
            m,
            "deploying",
            DURATIONS["deploying"],
            outcome,
            boot="pending" if boots else "none",
            script=[
                (0.02, "INFO", "Powering on", ""),
                (0.08, "INFO", "PXE Request", "installation"),
                (0.15, "INFO", "Node installation", "'curtin' curtin command install"),
                (0.60, "INFO", "Configuring OS", ""),
                (0.80, "INFO", "Rebooting", ""),
            ],
        )
        if boots:
            token = m.op["token"]
            self.hosts.boot(
                m.lab_server,
                self.decoded_user_data(m),
                lambda error: self._boot_done(m.system_id, token, error),
            )

    def _boot_done(self, system_id: str, token: int, fault: LabFault | None) -> None:
        with self.lock:
            m = self.machines.get(system_id)
            if m is None or not m.op or m.op.get("token") != token:
                # Released or aborted meanwhile: the host must not stay up.
                if m is not None and m.state not in (S.DEPLOYING, S.DEPLOYED) and m.lab_server:
                    self.hosts.shutdown(m.lab_server)
                return
            m.op["boot"] = "done" if fault is None else "failed"
            if fault is not None:
                m.op["lab_fault"] = fault.to_dict()
            self.dirty()

    @staticmethod
    def decoded_user_data(m: SimMachine) -> bytes | None:
        """As the metadata server serves it: base64-decoded if valid, else raw (§2.3)."""
        import base64
        import binascii

        if not m.user_data:
            return None
        try:
            return base64.b64decode(m.user_data, validate=False)
        except (binascii.Error, ValueError):
            return m.user_data.encode()

    def _address(self, m: SimMachine) -> str:
        if m.lab_server and self.rack is not None:
            return self.rack.server(m.lab_server).ip
        if m.ip:
            return m.ip
        self.counters["ip"] += 1
        n = self.counters["ip"]
        return f"10.{(n // 62500) % 250}.{(n // 250) % 250}.{n % 250 + 2}"

    def release(
        self, m: SimMachine, user: User, *, erase: bool, secure: bool, quick: bool, comment: str
    ) -> None:
        if m.state in (S.READY, S.RELEASING):
            return
        if m.state not in RELEASABLE:
            raise conflict(
                f"Machine cannot be released in its current state ('{m.state.display}')."
            )
        if m.owner and m.owner != user.username and not user.is_superuser:
            raise forbidden()
        if comment:
            self.emit(m, "AUDIT", "Node", f"Releasing: {comment}", user.username)
        self._power_off(m)
        if erase:
            kind = "erase_secure" if secure else "erase_quick" if quick else "erase_full"
            self.set_status(m, S.DISK_ERASING, user=user.username)
            self._start(m, "erasing", DURATIONS[kind], "ok", erase=kind)
        else:
            self.set_status(m, S.RELEASING, user=user.username)
            self._start(m, "releasing", DURATIONS["releasing"])

    def _power_off(self, m: SimMachine) -> None:
        if m.power_state == "on" and m.lab_server and self.hosts.knows(m.lab_server):
            self.hosts.shutdown(m.lab_server)
        m.power_state = "off"

    def abort(self, m: SimMachine, user: User) -> None:
        targets = {
            S.COMMISSIONING: S.NEW,
            S.DEPLOYING: S.ALLOCATED,
            S.DISK_ERASING: S.FAILED_DISK_ERASING,
            S.TESTING: S(m.previous_status),
        }
        if m.state not in targets or (m.op and m.op["kind"] == "abort"):
            raise conflict(
                f"Cannot abort in current state: node {m.system_id} is in state {m.state.display}."
            )
        self.emit(
            m, "AUDIT", "Node", f"Aborted '{m.state.display}' on '{m.hostname}'.", user.username
        )
        # Asynchronous, like MAAS: the state changes once the power-off went through.
        self._start(m, "abort", DURATIONS["abort"], to=int(targets[m.state]))

    def mark_broken(self, m: SimMachine, user: User, comment: str) -> None:
        if m.owner is not None and m.owner != user.username:
            raise forbidden()  # test_mark_broken_requires_ownership: even an admin
        if not user.is_superuser and m.owner is None:
            raise forbidden()
        if m.state in RELEASABLE:
            self._power_off(m)
        self.set_status(m, S.BROKEN, user=user.username)
        m.op = None
        m.owner = None
        m.error_description = comment
        self.emit(m, "INFO", "Marking node broken", comment, user.username)

    def mark_fixed(self, m: SimMachine, user: User) -> None:
        if not user.is_superuser:
            raise forbidden()
        if m.state is not S.BROKEN:
            raise conflict("Can't mark a non-broken node as 'Ready'.")
        target = S.DEPLOYED if S(m.previous_status) is S.DEPLOYED else S.READY
        self.set_status(m, target, user=user.username)
        m.error_description = ""
        self.emit(m, "INFO", "Marking node fixed", "", user.username)

    # -- storage ---------------------------------------------------------------------------

    def _discover_hardware(self, m: SimMachine) -> None:
        """Recreate the block devices in this boot's random order; default layout on the
        lowest id, which is where MAAS would install if nobody pins the boot disk."""
        disks = hardware.enumerate_disks(m.seed, m.model, self.rng)
        devices = []
        for disk in disks:
            self.counters["block_device"] += 1
            devices.append({**disk, "id": self.counters["block_device"], "partitions": []})
        m.block_devices = devices
        m.boot_disk_id = devices[0]["id"] if devices else None
        m.commissioned = True
        self.apply_layout(m, "flat", m.boot_disk_id)

    def apply_layout(self, m: SimMachine, layout: str, root_id: int | None) -> None:
        for dev in m.block_devices:
            dev["partitions"] = []
        m.storage_layout = layout
        root = next((d for d in m.block_devices if d["id"] == root_id), None)
        if root is None or layout in ("blank", "custom"):
            return
        efi = 536_870_912
        rest = root["size"] - efi - 1_048_576
        if layout == "lvm":
            root["partitions"] = [("fat32", "/boot/efi", efi), ("lvm-pv", "", rest)]
        else:
            root["partitions"] = [("fat32", "/boot/efi", efi), ("ext4", "/", rest)]
        self.dirty()

    # -- the clock ---------------------------------------------------------------------------

    def advance(self) -> None:
        """Complete whatever is due; MAAS's status monitor times out hung operations."""
        now = self.clock.now()
        timeout = float(self.config.get("node_timeout", 30)) * 60
        for m in self.machines.values():
            op = m.op
            if not op:
                continue
            while op["script"] and op["script"][0][0] <= now:
                _, level, type_, desc = op["script"].pop(0)
                self.emit(m, level, type_, desc)
            # Normal operations finish well inside node_timeout; a hung one is failed by the
            # status monitor. A lab host still booting is real time, so it is waited for.
            if op["outcome"] == "hang":
                if now - op["started"] > timeout:
                    self._time_out(m, op)
            elif now >= op["due"] and op.get("boot") != "pending":
                self._finish(m, op)

    def _time_out(self, m: SimMachine, op: dict[str, Any]) -> None:
        minutes = int(float(self.config.get("node_timeout", 30)))
        failed = S.FAILED_DEPLOYMENT if op["kind"] == "deploying" else S.FAILED_COMMISSIONING
        name = "Deploying" if op["kind"] == "deploying" else "Commissioning"
        m.op = None
        message = f"Node operation '{name}' timed out after {minutes} minutes."
        self.emit(m, "ERROR", "Node operation timed out", message)
        m.error_description = message
        self.set_status(m, failed)

    def _finish(self, m: SimMachine, op: dict[str, Any]) -> None:
        m.op = None
        kind, outcome = op["kind"], op["outcome"]
        if kind == "commissioning":
            if outcome == "revert":
                for level, type_, desc in op.get("final", ()):
                    self.emit(m, level, type_, desc)
                m.power_state = "unknown"
                self.set_status(m, S(op["prev"]))
                m.owner = None
            elif outcome == "fail":
                self.emit(m, "ERROR", *COMMISSION_FAILURE)
                m.logs["current-commissioning"] = f"{COMMISSION_FAILURE[1]}\n"
                m.power_state = "off"
                self.set_status(m, S.FAILED_COMMISSIONING)
                m.owner = None
            else:
                self._discover_hardware(m)
                m.logs["current-commissioning"] = "All commissioning scripts passed.\n"
                m.power_state = "off"
                self.set_status(m, S.READY)
                m.owner = None
        elif kind == "deploying":
            fault = _lab_fault(m, op)
            if fault is not None:
                self._fail_lab_fault(m, fault)
            elif outcome == "fail":
                detail = (
                    "grub-install: error: efibootmgr failed to register the boot "
                    "entry: No space left on device."
                )
                m.logs["current-installation"] = CURTIN_FAILURE_LOG
                self.emit(
                    m,
                    "ERROR",
                    "Node installation failure",
                    f"'curtin' curtin command install: {detail}",
                )
                m.error_description = (
                    "Installation failed (refer to the installation log for more information)."
                )
                self.set_status(m, S.FAILED_DEPLOYMENT)
            else:
                m.logs["current-installation"] = (
                    "curtin: Installation started. (23.1.1)\n"
                    "finish: cmd-install: SUCCESS: curtin command install\n"
                    "cloud-init requested user data\n"
                )
                self.set_status(m, S.DEPLOYED)
        elif kind in ("releasing", "erasing"):
            if kind == "erasing":
                self.emit(
                    m,
                    "INFO",
                    "Disk erasing",
                    f"{op['erase'].removeprefix('erase_')} erase complete",
                )
            m.owner = None
            m.ip = None
            m.osystem = m.distro_series = m.hwe_kernel = m.user_data = ""
            m.logs.pop("current-installation", None)
            self.set_status(m, S.READY)
        elif kind == "abort":
            target = S(op["to"])
            if target is S.NEW:
                m.owner = None
            m.power_state = "off"
            self.set_status(m, target)
        self.dirty()

    def _fail_lab_fault(self, m: SimMachine, fault: LabFault) -> None:
        """The machine's test host never came up: Failed deployment, as MAAS would end it,
        but every text (event, error description, installation log) names the lab."""
        m.logs["current-installation"] = fault.log_text()
        self.emit(m, "ERROR", "Lab fault", fault.summary())
        m.error_description = fault.summary()
        self.set_status(m, S.FAILED_DEPLOYMENT)

    # -- faults ------------------------------------------------------------------------------

    def take_machine_fault(self, m: SimMachine, fault: str, times: int = 1) -> bool:
        """True the first ``times`` times a one-shot fault is consulted."""
        if fault not in m.faults or m.fault_state.get(fault, 0) >= times:
            return False
        m.fault_state[fault] = m.fault_state.get(fault, 0) + 1
        self.dirty()
        return True

    def add_http_fault(self, **rule: Any) -> None:
        rule.setdefault("count", 1)
        self.http_faults.append(rule)

    def take_http_fault(self, method: str, path: str, op: str | None) -> dict[str, Any] | None:
        for rule in self.http_faults:
            if rule.get("method") and rule["method"] != method:
                continue
            if rule.get("path") and rule["path"] not in path:
                continue
            if rule.get("op") and rule["op"] != op:
                continue
            rule["count"] -= 1
            if rule["count"] <= 0:
                self.http_faults.remove(rule)
            return rule
        return None

    def set_faults(self, m: SimMachine, add: list[str], remove: list[str]) -> None:
        unknown = sorted(set(add) - MAAS_FAULTS)
        if unknown:
            raise field_errors(
                {"add": [f"unknown fault(s) {unknown}; known: {sorted(MAAS_FAULTS)}"]}
            )
        m.faults = sorted((set(m.faults) | set(add)) - set(remove))
        for fault in remove:
            m.fault_state.pop(fault, None)
        self.dirty()

    def resume_hosts(self) -> None:
        """After a restart: Deployed machines' hosts are powered on again (idempotent boot)."""
        for m in self.machines.values():
            if m.state is S.DEPLOYED and self.hosts.knows(m.lab_server):
                self.hosts.ensure_running(m.lab_server, self.decoded_user_data(m))


def _lab_fault(m: SimMachine, op: dict[str, Any]) -> LabFault | None:
    """The lab fault a deployment's boot recorded (a state file written before lab faults had
    their own record carries ``failed: <text>``: still the lab's, with the text as reason)."""
    boot = str(op.get("boot", "none"))
    if not boot.startswith("failed"):
        return None
    if isinstance(op.get("lab_fault"), dict):
        return LabFault.from_dict(op["lab_fault"])
    reason = boot.removeprefix("failed").removeprefix(": ") or "unknown"
    return LabFault(m.lab_server or m.hostname, reason, "")


@contextlib.contextmanager
def locked(store: Store):
    with store.lock:
        store.advance()
        yield store
