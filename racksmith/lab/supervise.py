"""A tiny restart wrapper for systemd-nspawn: ``python -m racksmith.lab.supervise``.

A ``systemctl reboot`` inside an nspawn host makes systemd-nspawn exit with code 133 and the
host would be gone; ``systemd-nspawn@.service`` restarts on that code, and so does this
wrapper (there is no systemd on the controller to do it). The wrapper is the PID the lab
records: SIGTERM to it is forwarded once to nspawn (a clean poweroff of the host), escalated
to a second SIGTERM (nspawn's forced stop) and then SIGKILL if the host does not go down.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from racksmith.lab import cgroup
from racksmith.lab.proc import ProcRecord, start_time

REBOOT_EXIT = 133
#: More restarts than this within a minute means a boot loop, not reboots.
MAX_RESTARTS_PER_MINUTE = 5


class _Stop:
    requested = False


def _supervise(
    argv: Sequence[str], child_pidfile: Path | None, grace: float, cgroup_name: str | None
) -> int:
    groups = cgroup.enter(cgroup_name) if cgroup_name else []
    try:
        return _loop(argv, child_pidfile, grace)
    finally:
        cgroup.leave(groups)
        cgroup.remove(groups)


def _loop(argv: Sequence[str], child_pidfile: Path | None, grace: float) -> int:
    stop = _Stop()
    child: subprocess.Popen | None = None

    def on_signal(signum: int, _frame: object) -> None:
        stop.requested = True
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    restarts: list[float] = []
    while True:
        child = subprocess.Popen(list(argv))
        if child_pidfile:
            # A full record (with start time), so cleanup can stop an nspawn this wrapper
            # left behind if the wrapper itself was killed, and never a recycled PID.
            record = ProcRecord(child.pid, start_time(child.pid) or 0, tuple(argv))
            child_pidfile.write_text(record.to_json())
        rc = _wait(child, stop, grace)
        if stop.requested or rc != REBOOT_EXIT:
            return rc
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < 60] + [now]
        if len(restarts) > MAX_RESTARTS_PER_MINUTE:
            print(f"supervise: {len(restarts)} reboots within a minute; giving up", flush=True)
            return rc
        print("supervise: host rebooted (exit 133); starting it again", flush=True)


#: How often a waiting wrapper looks at a stop request (the child's exit wakes it at once).
STOP_CHECK_SECONDS = 0.5


def _wait(child: subprocess.Popen, stop: _Stop, grace: float) -> int:
    """Wait for the child; once a stop is requested, escalate if it ignores the request.

    The wait sleeps in the kernel on a pidfd: ``Popen.wait(timeout=...)`` polls every 50 ms,
    and a 64-server lab runs 64 of these wrappers on the controller's two cores.
    """
    escalation = [(grace, signal.SIGTERM), (5.0, signal.SIGKILL)]
    deadline: float | None = None
    with _exit_watch(child.pid) as exited:
        while True:
            exited(STOP_CHECK_SECONDS)
            rc = child.poll()
            if rc is not None:
                return rc
            if not stop.requested:
                continue
            now = time.monotonic()
            if deadline is None:
                deadline = now + escalation[0][0]
            elif now >= deadline and escalation:
                _, sig = escalation.pop(0)
                child.send_signal(sig)
                deadline = now + (escalation[0][0] if escalation else 5.0)


@contextlib.contextmanager
def _exit_watch(pid: int):
    """``exited(timeout)`` returns when process ``pid`` exits or ``timeout`` seconds pass.

    A pidfd (Linux 5.3+) becomes readable when the process exits; without one, a plain sleep.
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield time.sleep
        return
    try:
        yield lambda timeout: select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m racksmith.lab.supervise")
    parser.add_argument("--child-pidfile", type=Path)
    parser.add_argument("--grace", type=float, default=15.0, help="seconds before forcing")
    parser.add_argument("--cgroup", help="run in cgroup racksmith/NAME (one per host)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("no command given")
    return _supervise(command, ns.child_pidfile, ns.grace, ns.cgroup)


if __name__ == "__main__":
    sys.exit(main())
