"""Run one command with a hard timeout, and always come back.

A hung GPU makes ``nvidia-smi`` hang (Xid 119/120: GSP timeouts), so every command runs in its
own process group that is killed at the timeout, and every wait afterwards is bounded too: a
process stuck in the kernel cannot be killed, and then we give up on it rather than hang with
it. Nothing here raises for a failed command: the result says what happened, and the caller
decides (fail closed).

Output is read in chunks under a cap on bytes and on lines (``yes`` installed as
``nvidia-smi`` once filled the agent's memory in under two seconds): a command that passes
either cap is killed and its result is a failure saying which cap, which makes its checks
UNKNOWN. The caps default to far more than any real tool prints and can be set per call or for
the whole agent with ``RACKSMITH_HEALTH_MAX_OUTPUT_BYTES`` / ``RACKSMITH_HEALTH_MAX_OUTPUT_LINES``.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: After a kill, how long we wait for the pipes to close before abandoning the process.
_REAP_S = 2.0
#: Caps on one command's output (stdout and stderr together). A full nvidia-smi -q -x of eight
#: GPUs is well under 1 MiB and a large kernel ring buffer about 150,000 lines.
DEFAULT_MAX_BYTES = 64 << 20
DEFAULT_MAX_LINES = 500_000
MAX_BYTES_ENV = "RACKSMITH_HEALTH_MAX_OUTPUT_BYTES"
MAX_LINES_ENV = "RACKSMITH_HEALTH_MAX_OUTPUT_LINES"
_CHUNK = 65536


def output_caps(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(max bytes, max lines): the defaults, or the settings in ``environ`` (the environment the
    commands run with, which the agent takes from its own).
    A setting that is not a positive whole number is ignored (the default stays)."""
    environ = os.environ if environ is None else environ
    caps = []
    for name, default in ((MAX_BYTES_ENV, DEFAULT_MAX_BYTES), (MAX_LINES_ENV, DEFAULT_MAX_LINES)):
        text = environ.get(name, "")
        caps.append(int(text) if text.isdigit() and int(text) > 0 else default)
    return caps[0], caps[1]


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
    capped: str = ""  # which output cap stopped it ("" when none did)

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
        if self.capped:
            return f"`{self.command}` was stopped: its output passed {self.capped}"
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
    max_bytes: int | None = None,
    max_lines: int | None = None,
) -> CommandResult:
    """Run ``argv`` (no shell) for at most ``timeout_s`` seconds, reading at most ``max_bytes``
    bytes and ``max_lines`` lines of output (defaults: :func:`output_caps`)."""
    default_bytes, default_lines = output_caps(env)
    max_bytes = max_bytes or default_bytes
    max_lines = max_lines or default_lines
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
    out, err, stop = _collect(proc, start + max(timeout_s, 0.01), max_bytes, max_lines)
    if stop:
        _kill_group(proc)
        _reap(proc)
        return CommandResult(
            argv,
            None,
            _decode(out),
            _decode(err),
            time.monotonic() - start,
            path,
            timed_out=stop == "timeout",
            capped="" if stop == "timeout" else stop,
        )
    return CommandResult(
        argv, proc.returncode, _decode(out), _decode(err), time.monotonic() - start, path
    )


def _collect(
    proc: subprocess.Popen, deadline: float, max_bytes: int, max_lines: int
) -> tuple[bytes, bytes, str]:
    """Read both pipes until they close and the process exits, the deadline passes
    (``"timeout"``) or a cap is passed (the cap, in words)."""
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    size = lines = 0
    stop = ""
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and not stop:
            left = deadline - time.monotonic()
            if left <= 0:
                stop = "timeout"
                break
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buffers[key.fd] += chunk
                size += len(chunk)
                lines += chunk.count(b"\n")
                if size > max_bytes:
                    stop = f"the cap of {max_bytes} bytes ({MAX_BYTES_ENV})"
                elif lines > max_lines:
                    stop = f"the cap of {max_lines} lines ({MAX_LINES_ENV})"
    if not stop:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:  # pipes closed, process still running
            stop = "timeout"
    out, err = (bytes(buffer) for buffer in buffers.values())  # stdout, stderr
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    return out, err, stop


def _reap(proc: subprocess.Popen) -> None:
    """Collect the killed process; one stuck in the kernel is abandoned, not waited for."""
    try:
        proc.wait(timeout=_REAP_S)
    except subprocess.TimeoutExpired:
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")
