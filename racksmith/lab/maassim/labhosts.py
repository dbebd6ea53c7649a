"""The seam between the simulator and the lab's test hosts.

A deployed machine must be a reachable host in the lab (docs/contracts.md): when the simulator
deploys a machine whose PXE MAC belongs to a rack server, it boots that server's nspawn host
through :func:`racksmith.lab.hosts.boot` with the machine's user data, and reports Deployed
only once the host answers; a release or mark-broken powers the host off. Without a rack
(``--machines`` only, tests, the benchmark) :class:`NoHosts` stands in and deployments finish
on the clock alone.

Power itself is *not* driven through the emulated BMC's Redfish: the simulator validates the
Redfish power parameters it is given and models BMC failure with the ``power_fails`` fault.
Keeping the simulator off the BMC emulator's TLS and session limits keeps the two lab parts
independent; the Redfish path is exercised by the discovery phase against the BMC emulator.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("racksmith.lab.maassim")

BootDone = Callable[[str | None], None]  # called with None on success, else the error text


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
    """Boots and stops the rack's nspawn hosts in background threads (two at a time)."""

    def __init__(self, rack, lab_dir: Path, *, concurrency: int = 2):
        self.rack = rack
        self.lab_dir = lab_dir
        self._slots = threading.Semaphore(concurrency)
        # One lock per host: a release that arrives mid-boot stops the host after the boot.
        self._host_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

    def knows(self, server: str | None) -> bool:
        return bool(server) and any(s.name == server for s in self.rack.servers)

    @staticmethod
    def _hosts():
        from racksmith.lab import hosts  # the lab helper's module; imported when first needed

        return hosts

    def boot(self, server: str, user_data: bytes | None, done: BootDone) -> None:
        def run() -> None:
            with self._host_locks[server], self._slots:
                try:
                    self._hosts().boot(
                        self.rack,
                        self.rack.server(server),
                        user_data=user_data,
                        lab_dir=self.lab_dir,
                    )
                except Exception as exc:  # any failure is the deployment's failure, named
                    log.warning("booting lab host %s failed: %s", server, exc)
                    done(f"{type(exc).__name__}: {exc}")
                    return
            done(None)

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
