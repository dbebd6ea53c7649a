"""The kernel limits a lab of many test hosts depends on, checked and raised by ``lab up``.

Every test host is a booted systemd (PID 1, journald, logind, sshd...) and they all run as
root on one kernel, so per-user kernel limits are shared by the whole rack. The one that broke
first: a 30-server rack beside the 9-server demo lab, where systemd inside 10 test hosts died
with "Failed to create control group inotify object: Too many open files" because
``fs.inotify.max_user_instances`` was 128 (each booted host holds several inotify instances)
-- and the run blamed the servers' installs. So ``lab up`` computes what a rack of N servers
needs, raises what is lower (saying which, from what, to what, and why) and fails, naming the
``sysctl`` to run, when it cannot.

Needs are generous upper bounds per host measured on Debian 12 test hosts (docs/lab.md), plus
room for the controller's own use and molecule hosts on the same bridge. Nothing is ever
lowered.
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab.errors import LabError

PROC_SYS = Path("/proc/sys")
#: Test hosts beside the rack's servers that one lab may run at once (molecule scenarios).
EXTRA_HOSTS = 16


@dataclass(frozen=True)
class Limit:
    """One kernel setting: what it must at least be for ``hosts`` test hosts, and why."""

    name: str  # sysctl name, e.g. fs.inotify.max_user_instances
    base: int
    per_host: int
    why: str

    def need(self, hosts: int) -> int:
        return self.base + self.per_host * hosts

    @property
    def path(self) -> str:
        return self.name.replace(".", "/")


LIMITS = (
    Limit(
        "fs.inotify.max_user_instances",
        256,
        16,
        "systemd in each test host holds several inotify instances, all counted against root; "
        "at 128 a 30-server rack's hosts died with 'Too many open files' before sshd started",
    ),
    Limit(
        "fs.inotify.max_user_watches",
        65536,
        4096,
        "systemd, journald and udev in each test host watch files; shared by every root process",
    ),
    Limit(
        "kernel.pid_max",
        32768,
        512,
        "each test host runs a full process tree (systemd, sshd, cron, apt during configure)",
    ),
    Limit(
        "kernel.threads-max",
        32768,
        1024,
        "test hosts and the BMC/MAAS simulators' threads all count against the kernel's total",
    ),
    Limit(
        "fs.file-max",
        65536,
        4096,
        "the kernel-wide open-file ceiling for every host's journal, sockets and logs",
    ),
)

#: Open files the lab's own processes (BMC emulator with one socket per BMC, MAAS simulator,
#: supervisors) may need: raised for ``lab up`` and inherited by the daemons it starts.
NOFILE_BASE, NOFILE_PER_HOST = 4096, 64


@dataclass(frozen=True)
class Finding:
    limit: str
    current: int | None
    need: int
    why: str

    @property
    def ok(self) -> bool:
        return self.current is not None and self.current >= self.need


def check(hosts: int, read: Callable[[str], str]) -> list[Finding]:
    """Each limit's current value (None when it cannot be read) against what ``hosts`` need."""
    findings = []
    for limit in LIMITS:
        try:
            current: int | None = int(read(limit.path).split()[0])
        except (OSError, ValueError, IndexError):
            current = None
        findings.append(Finding(limit.name, current, limit.need(hosts), limit.why))
    return findings


def read_sysctl(path: str) -> str:
    return (PROC_SYS / path).read_text()


def write_sysctl(path: str, value: int) -> None:
    (PROC_SYS / path).write_text(f"{value}\n")


def ensure(
    servers: int,
    *,
    read: Callable[[str], str] = read_sysctl,
    write: Callable[[str, int], None] = write_sysctl,
    say: Callable[[str], None] = print,
    rlimits: bool = True,
) -> list[Finding]:
    """Raise every limit below what ``servers`` (+ molecule hosts) need; say why for each.
    LabError, naming each setting and the command that would fix it, for those that cannot
    be read or raised."""
    hosts = servers + EXTRA_HOSTS
    findings = check(hosts, read)
    failed: list[str] = []
    stuck: list[Finding] = []
    for f in findings:
        if f.ok:
            continue
        try:
            if f.current is None:
                raise OSError("cannot read its current value")
            write(f.limit.replace(".", "/"), f.need)
        except OSError as exc:
            now = "unreadable" if f.current is None else f.current
            failed.append(f"{f.limit} is {now} and cannot be raised to {f.need}: {exc}")
            stuck.append(f)
            continue
        say(f"[lab] raised {f.limit} from {f.current} to {f.need} ({hosts} test hosts): {f.why}")
    if rlimits:
        failed += _raise_nofile(NOFILE_BASE + NOFILE_PER_HOST * hosts, say)
    if failed:
        fix = " ".join(f"{f.limit}={f.need}" for f in stuck)
        raise LabError(
            "the kernel limits a lab of this size needs are not in place:\n  "
            + "\n  ".join(failed)
            + (f"\nraise them as root: sysctl -w {fix}" if fix else "")
        )
    return findings


def _raise_nofile(need: int, say: Callable[[str], None]) -> list[str]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            return [f"open files (ulimit -n) hard limit {hard} is below the {need} needed"]
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        say(
            f"[lab] raised open files (ulimit -n) from {soft} to {need} for the lab's daemons: "
            "the BMC emulator holds a socket per BMC and every simulator connection a file"
        )
    return []
