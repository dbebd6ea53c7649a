"""The seam between the simulator and the lab's test hosts.

A deployed machine must be a reachable host in the lab (docs/contracts.md): when the simulator
deploys a machine whose PXE MAC belongs to a rack server, it boots that server's nspawn host
through :func:`racksmith.lab.hosts.boot` with the machine's user data, and reports Deployed
only once the host answers; a release or mark-broken powers the host off. Without a rack
(``--machines`` only, tests, the benchmark) :class:`NoHosts` stands in and deployments finish
on the clock alone.

A host that does not come up (its boot raises, or it has not answered within
:data:`BOOT_BOUND` seconds) is a :class:`LabFault`: the machine still ends Failed deployment,
but its event, error description and installation log say ``LAB FAULT: test host <name> did
not boot: <reason>; console log: <path>`` with the console's last lines, so the triage files
it as ``lab_fault`` and ``racksmith lab check-run`` never blames the server for it.

Power itself is *not* driven through the emulated BMC's Redfish: the simulator validates the
Redfish power parameters it is given and models BMC failure with the ``power_fails`` fault.
Keeping the simulator off the BMC emulator's TLS and session limits keeps the two lab parts
independent; the Redfish path is exercised by the discovery phase against the BMC emulator.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("racksmith.lab.maassim")

#: How long a booting host may take, once it has a boot slot, before the simulator stops
#: waiting and reports a lab fault (real seconds). The lab's own SSH bound
#: (racksmith.lab.hosts.BOOT_TIMEOUT) fits inside it with room for the disk copy and the
#: first-boot check; this one catches a boot that hangs past all of them.
BOOT_BOUND = 300.0
#: Console lines quoted in the event, the installation log and the report.
CONSOLE_LINES = 10

#: Boot slots (how many test hosts boot at once). A boot is CPU work (nspawn, systemd and
#: sshd starting, the first-boot check: about half a CPU-second each), so the queue drains at
#: the machine's CPU rate: measured on the 2-core lab machine (load 2-3), 16 boots took 9.5 s
#: two at a time, 7.3 s four at a time, and 7.0-7.1 s at eight or sixteen (each boot then
#: 3.4-5.8 s instead of 1.1 s). Two slots per CPU reach that rate with room for boots that
#: wait on I/O, and keep each boot far inside hosts.BOOT_TIMEOUT; more only stretches every
#: boot. The environment variable overrides the sizing (``auto`` keeps it), and so does
#: ``racksmith lab maas --boot-concurrency``.
BOOT_CONCURRENCY_ENV = "RACKSMITH_LAB_BOOT_CONCURRENCY"
BOOTS_PER_CPU = 2
MIN_BOOT_CONCURRENCY = 2
MAX_SIZED_BOOT_CONCURRENCY = 32  # where the sizing stops on big machines
MAX_BOOT_CONCURRENCY = 64  # more than the sizing is allowed when asked for


def machine_cpus() -> int:
    """The CPUs this process may run on (its affinity: a cpuset-limited lab sees its own)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sized_boot_concurrency(cpus: int) -> int:
    """Two boots per CPU, at least 2 (4 on the 2-core lab machine), at most 32."""
    return max(MIN_BOOT_CONCURRENCY, min(MAX_SIZED_BOOT_CONCURRENCY, BOOTS_PER_CPU * max(1, cpus)))


def parse_boot_concurrency(text: str, source: str = BOOT_CONCURRENCY_ENV) -> int | None:
    """``auto`` (or empty) -> None, the machine's sizing; else a whole number of boot slots
    in 1..MAX_BOOT_CONCURRENCY. Anything else is a ValueError naming ``source``."""
    value = text.strip().lower()
    if value in ("", "auto"):
        return None
    if not value.isdigit() or not 1 <= int(value) <= MAX_BOOT_CONCURRENCY:
        raise ValueError(
            f"{source}={text!r}: expected 'auto' or a whole number of boot slots"
            f" from 1 to {MAX_BOOT_CONCURRENCY}"
        )
    return int(value)


def boot_concurrency(explicit: int | None = None, environ=None, cpus: int | None = None) -> int:
    """The boot slots to use: ``explicit`` (the CLI flag), else $RACKSMITH_LAB_BOOT_CONCURRENCY,
    else :func:`sized_boot_concurrency` of this machine's CPUs."""
    if explicit is not None:
        return explicit
    environ = os.environ if environ is None else environ
    asked = parse_boot_concurrency(environ.get(BOOT_CONCURRENCY_ENV, ""))
    return asked if asked is not None else sized_boot_concurrency(cpus or machine_cpus())


@dataclass(frozen=True)
class LabFault:
    """A test host that did not come up: the lab failed, not the server being installed.

    The simulator reports it as MAAS would report any failed deployment (the machine ends
    Failed deployment), but with a cause that names the lab, so neither the triage nor
    ``lab check-run`` can mistake it for the server's install failure.
    """

    server: str
    reason: str
    console_log: str  # path of the host's console log ("" when unknown)
    console_tail: tuple[str, ...] = ()

    def summary(self) -> str:
        """The one line MAAS's event and the triage cause carry."""
        where = self.console_log or "(none)"
        return (
            f"LAB FAULT: test host {self.server} did not boot: {self.reason}; console log: {where}"
        )

    def log_text(self) -> str:
        """The installation log's text: the summary and the console's last lines."""
        lines = [self.summary(), f"last {len(self.console_tail)} line(s) of the host's log:"]
        return "\n".join([*lines, *(f"  {ln}" for ln in self.console_tail)]) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "reason": self.reason,
            "console_log": self.console_log,
            "console_tail": list(self.console_tail),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabFault:
        return cls(
            server=str(data.get("server", "?")),
            reason=str(data.get("reason", "unknown")),
            console_log=str(data.get("console_log", "")),
            console_tail=tuple(str(x) for x in data.get("console_tail", ())),
        )


def console_tail(path: Path, lines: int = CONSOLE_LINES) -> tuple[str, ...]:
    """The console log's last non-blank lines, or one line saying why there are none."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return (f"(console log unreadable: {exc.strerror or exc})",)
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return tuple(kept[-lines:]) or ("(console log is empty)",)


_CONSOLE_PART = re.compile(r"[;,]?\s*console log \S+:?\s*$")


def fault_from_error(server: str, exc: BaseException, console_log: Path) -> LabFault:
    """A failed boot as a lab fault. The error's first line is the reason. The lab's errors
    append a log after it: the console's (quoted from the file itself, which is whole), or
    another one, such as cloud-init's output when the user data's commands failed (quoted
    from the error, as the console does not hold it)."""
    text = [ln.rstrip() for ln in str(exc).strip().splitlines()]
    first = text[0] if text else ""
    reason = _CONSOLE_PART.sub("", first.removeprefix(f"test host {server}: ")).rstrip(":;, ")
    reason = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    other_log = [ln for ln in text[1:] if ln.strip()]
    if other_log and not _CONSOLE_PART.search(first):
        tail = tuple(other_log[-CONSOLE_LINES:])
    else:
        tail = console_tail(console_log)
    return LabFault(server, reason, str(console_log), tail)


# Called once per boot with None on success, else the lab fault.
BootDone = Callable[[LabFault | None], None]
# Boots one rack server's host and returns once it answers; raises when it cannot.
BootHost = Callable[..., None]


class NoHosts:
    """No lab hosts: every machine is purely simulated."""

    def knows(self, server: str | None) -> bool:
        return False

    def boot(self, server: str, user_data: bytes | None, done: BootDone) -> None:
        done(None)

    def shutdown(self, server: str) -> None:
        return None

    def ensure_running(self, server: str, user_data: bytes | None) -> None:
        return None


class LabHosts(NoHosts):
    """Boots and stops the rack's nspawn hosts in background threads, ``concurrency`` boots at
    a time (default :func:`boot_concurrency`: two per CPU, or $RACKSMITH_LAB_BOOT_CONCURRENCY).

    ``boot_host`` (default :func:`racksmith.lab.hosts.boot`) is the one step that touches the
    machine; tests pass one that fails or hangs. A boot that raises, or that has not returned
    ``bound`` seconds after it got its slot, is reported once, as a :class:`LabFault`.
    """

    def __init__(
        self,
        rack,
        lab_dir: Path,
        *,
        concurrency: int | None = None,
        boot_host: BootHost | None = None,
        bound: float = BOOT_BOUND,
    ):
        self.rack = rack
        self.lab_dir = lab_dir
        self.bound = bound
        self.concurrency = boot_concurrency(concurrency)
        if self.concurrency < 1:
            raise ValueError(f"boot concurrency must be at least 1, not {self.concurrency}")
        self._boot_host = boot_host
        self._slots = threading.Semaphore(self.concurrency)
        # One lock per host: a release that arrives mid-boot stops the host after the boot.
        self._host_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

    def knows(self, server: str | None) -> bool:
        return bool(server) and any(s.name == server for s in self.rack.servers)

    @staticmethod
    def _hosts():
        from racksmith.lab import hosts  # the lab helper's module; imported when first needed

        return hosts

    def console_log(self, server: str) -> Path:
        """Where the host's console (systemd's output, its journal on the console) is kept."""
        from racksmith.lab.paths import LabPaths

        return LabPaths(self.lab_dir).machine(server) / "console.log"

    def boot(self, server: str, user_data: bytes | None, done: BootDone) -> None:
        once = threading.Lock()
        reported = False

        def report(fault: LabFault | None) -> bool:
            """Deliver the boot's outcome once; False when one was delivered already."""
            nonlocal reported
            with once:
                if reported:
                    return False
                reported = True
            if fault is not None:
                log.warning("%s", fault.summary())
            done(fault)
            return True

        def hung() -> None:
            reason = f"no answer (SSH and cloud-init) within {self.bound:g}s of starting its boot"
            console = self.console_log(server)
            report(LabFault(server, reason, str(console), console_tail(console)))

        def run() -> None:
            boot_host = self._boot_host or self._hosts().boot
            with self._host_locks[server], self._slots:
                timer = threading.Timer(self.bound, hung)
                timer.daemon = True
                timer.start()
                try:
                    boot_host(
                        self.rack,
                        self.rack.server(server),
                        user_data=user_data,
                        lab_dir=self.lab_dir,
                    )
                except Exception as exc:  # any failure to come up is the lab's, named
                    report(fault_from_error(server, exc, self.console_log(server)))
                    return
                finally:
                    timer.cancel()
            if not report(None):  # came up after it was reported as a lab fault: power off
                log.warning("lab host %s answered after its lab fault; stopping it", server)
                self.shutdown(server)

        threading.Thread(target=run, name=f"boot-{server}", daemon=True).start()

    def shutdown(self, server: str) -> None:
        def run() -> None:
            with self._host_locks[server]:
                try:
                    self._hosts().shutdown(
                        self.rack, self.rack.server(server), lab_dir=self.lab_dir
                    )
                except Exception as exc:
                    log.warning("stopping lab host %s failed: %s", server, exc)

        threading.Thread(target=run, name=f"stop-{server}", daemon=True).start()

    def ensure_running(self, server: str, user_data: bytes | None) -> None:
        """After a simulator restart, a Deployed machine's host is powered on again."""
        self.boot(server, user_data, lambda error: None)
