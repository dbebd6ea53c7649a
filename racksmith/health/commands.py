"""Run one command with a hard timeout, and always come back.

A hung GPU makes ``nvidia-smi`` hang (Xid 119/120: GSP timeouts), so every command runs in its
own process group that is killed at the timeout, and every wait afterwards is bounded too: a
process stuck in the kernel cannot be killed, and then we give up on it rather than hang with
it. Nothing here raises for a failed command: the result says what happened, and the caller
decides (fail closed).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: After a kill, how long we wait for the pipes to close before abandoning the process.
_REAP_S = 2.0


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    rc: int | None  # None when the command did not run to an exit status
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    path: str = ""  # the executable actually run (resolved on PATH)
    timed_out: bool = False
    missing: bool = False  # not found on PATH
    error: str = ""  # why it did not run, when it did not

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def describe_failure(self) -> str:
        """One line saying why this result is not usable, naming the command."""
        if self.missing:
            return f"`{self.command}`: {self.argv[0]} not found on PATH"
        if self.timed_out:
            return f"`{self.command}` timed out after {self.duration_s:.1f} s"
        if self.error:
            return f"`{self.command}` could not run: {self.error}"
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
        detail = f": {tail[0][:200]}" if tail[0] else ""
        return f"`{self.command}` exited with {self.rc}{detail}"


def run(
    argv: Sequence[str],
    timeout_s: float,
    *,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run ``argv`` (no shell) for at most ``timeout_s`` seconds."""
    argv = tuple(argv)
    search_path = (env or os.environ).get("PATH", os.defpath)
    path = shutil.which(argv[0], path=search_path) if "/" not in argv[0] else argv[0]
    if not path:
        return CommandResult(argv, None, missing=True, error="not found on PATH")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            (path, *argv[1:]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout kills its children too
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return CommandResult(argv, None, path=path, error=str(exc))
    try:
        out, err = proc.communicate(timeout=max(timeout_s, 0.01))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=_REAP_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel: abandon it, do not hang
            out, err = b"", b""
        return CommandResult(
            argv,
            None,
            _decode(out),
            _decode(err),
            time.monotonic() - start,
            path,
            timed_out=True,
        )
    return CommandResult(
        argv, proc.returncode, _decode(out), _decode(err), time.monotonic() - start, path
    )


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
