"""Daemons the lab starts, recorded by PID so that teardown stops exactly those and nothing else.

There is no systemd on the controller (PID 1 is a minimal init), so the lab starts its
daemons itself. Each gets a record ``{pid, start, argv}`` where ``start`` is the kernel's
start time of that PID: a record whose PID was reused by an unrelated process no longer
matches and is treated as dead, so we never signal a stranger.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab.errors import LabError


@dataclass(frozen=True)
class ProcRecord:
    pid: int
    start: int  # /proc/PID/stat field 22 (clock ticks since boot): PID reuse detector
    argv: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "start": self.start, "argv": list(self.argv)})

    @classmethod
    def from_json(cls, text: str) -> ProcRecord:
        data = json.loads(text)
        return cls(pid=int(data["pid"]), start=int(data["start"]), argv=tuple(data["argv"]))


def parse_start_time(stat: str) -> int:
    """Field 22 of ``/proc/PID/stat``; the command name (field 2) may contain spaces."""
    after_comm = stat[stat.rindex(")") + 2 :].split()
    return int(after_comm[19])  # fields 3.. start at index 0, so field 22 is index 19


def start_time(pid: int) -> int | None:
    try:
        return parse_start_time(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def alive(record: ProcRecord) -> bool:
    """True while the recorded process (same PID *and* same start time) exists."""
    started = start_time(record.pid)
    if started != record.start:
        return False
    # A zombie still has a stat entry; it is not running.
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{record.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return False


def read_record(pidfile: Path) -> ProcRecord | None:
    try:
        return ProcRecord.from_json(pidfile.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running(pidfile: Path) -> ProcRecord | None:
    """The live process recorded in ``pidfile``, or None (a stale record is removed)."""
    record = read_record(pidfile)
    if record and alive(record):
        return record
    pidfile.unlink(missing_ok=True)
    return None


def start_daemon(
    argv: Sequence[str],
    *,
    pidfile: Path,
    logfile: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ProcRecord:
    """Start ``argv`` in its own session (detached from our terminal) and record its PID."""
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as log:
        try:
            child = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=dict(env) if env is not None else None,
                cwd=cwd,
            )
        except OSError as exc:
            raise LabError(f"cannot start {argv[0]}: {exc}") from exc
    started = start_time(child.pid)
    record = ProcRecord(pid=child.pid, start=started or 0, argv=tuple(argv))
    tmp = pidfile.with_suffix(".tmp")
    tmp.write_text(record.to_json())
    tmp.replace(pidfile)
    _forget(child)
    return record


def _forget(child: subprocess.Popen) -> None:
    """Let the daemon outlive this Popen object without a ResourceWarning.

    The daemon is reaped by whoever outlives it (init, once we exit); within a long-lived
    process (the MAAS simulator) a background waiter reaps it so it never lingers as a zombie.
    """
    threading.Thread(target=child.wait, daemon=True).start()


def stop(pidfile: Path, *, timeout: float = 20.0) -> bool:
    """Stop the recorded process: SIGTERM, wait, then SIGKILL its process group.

    Returns True when something was stopped. Only a process matching the record is signalled;
    the process group is killed only when the recorded PID still leads it (we started it with
    a new session), so a recycled PID or group is never touched.
    """
    record = read_record(pidfile)
    if record is None or not alive(record):
        pidfile.unlink(missing_ok=True)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(record):
        time.sleep(0.1)
    if alive(record):
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(record.pid) == record.pid:
                os.killpg(record.pid, signal.SIGKILL)
            else:
                os.kill(record.pid, signal.SIGKILL)
        kill_deadline = time.monotonic() + 5
        while time.monotonic() < kill_deadline and alive(record):
            time.sleep(0.05)
    pidfile.unlink(missing_ok=True)
    return True


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _hex_addr(host: str) -> tuple[str, str]:
    """``/proc/net/tcp`` and ``tcp6`` spell an IPv4 address as little-endian hex words."""
    packed = socket.inet_aton(host)
    v4 = packed[::-1].hex().upper()
    v6 = "00000000000000000000FFFF" + packed.hex().upper()  # ::ffff:a.b.c.d
    v6 = "".join(bytes.fromhex(v6[i : i + 8])[::-1].hex().upper() for i in range(0, 32, 8))
    return v4, v6


def parse_listeners(table: str, host: str, port: int) -> set[int]:
    """Socket inodes LISTENing on ``host:port`` (or a wildcard address) in a /proc/net/tcp*
    table. Pure, so the matching rules are unit-tested."""
    v4, v6 = _hex_addr(host)
    wanted = {v4, "00000000", v6, "0" * 32}
    found: set[int] = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != "0A":  # 0A = TCP_LISTEN
            continue
        address, _, hexport = fields[1].partition(":")
        if int(hexport, 16) == port and address in wanted:
            found.add(int(fields[9]))
    return found


def listeners(host: str, port: int) -> set[int]:
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            found |= parse_listeners(Path(table).read_text(), host, port)
    return found


def socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def process_tree(pid: int) -> set[int]:
    """``pid`` and all its descendants (a daemon may serve from a child process)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, pp in parents.items() if pp == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return tree


def listener_owner(host: str, port: int) -> int | None:
    """PID of some process holding a listening socket on ``host:port``, if any."""
    wanted = listeners(host, port)
    if not wanted:
        return None
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and socket_inodes(int(entry.name)) & wanted:
            return int(entry.name)
    return None


def owns_listener(record: ProcRecord, host: str, port: int) -> bool:
    wanted = listeners(host, port)
    return any(socket_inodes(pid) & wanted for pid in process_tree(record.pid)) if wanted else False


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def ensure_port_free(host: str, port: int, *, what: str) -> None:
    """Refuse to start a daemon whose port another process holds: it would fail to bind, and a
    readiness probe would be answered by the stranger."""
    owner = listener_owner(host, port)
    if owner is not None:
        raise LabError(
            f"{host}:{port} (for {what}) is already taken by pid {owner}"
            f" ({_cmdline(owner)}); stop that process or change the port in the rack file"
        )


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def wait_for_port(
    host: str,
    port: int,
    *,
    timeout: float,
    what: str,
    record: ProcRecord | None = None,
    logfile: Path | None = None,
) -> None:
    """Wait until ``host:port`` accepts connections from the recorded daemon (not a stranger
    that happens to hold the port); fail early if the daemon died.

    On failure the error carries the daemon's log tail, because "did not come up" alone never
    tells anyone what to fix.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(host, port) and (record is None or owns_listener(record, host, port)):
            return
        if record is not None and not alive(record):
            tail = log_tail(logfile) if logfile else ""
            raise LabError(f"{what} exited before {host}:{port} answered; log tail:\n{tail}")
        time.sleep(0.2)
    tail = log_tail(logfile) if logfile else ""
    raise LabError(
        f"{what} did not answer on {host}:{port} within {timeout:.0f}s; log tail:\n{tail}"
    )


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock, so concurrent callers (threads of the MAAS simulator,
    two labs building the same image) serialise on shared state instead of racing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(argv: Sequence[str], *, check: bool = True, input: bytes | None = None) -> str:
    """Run a short command; a failure raises LabError with the command and its stderr."""
    try:
        done = subprocess.run(list(argv), input=input, capture_output=True, check=False)
    except OSError as exc:
        raise LabError(f"cannot run {argv[0]}: {exc}") from exc
    if check and done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip()
        raise LabError(f"`{' '.join(argv)}` failed (rc {done.returncode}): {err}")
    return done.stdout.decode(errors="replace")
