"""Starting a worker module on every local GPU with torchrun, under the same interpreter and
with this package importable (the agent is shipped as a folder, not installed), and running it
with its output in a log file, never on our stdout (``--json`` prints only the report there).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

#: NVLink multicast (NVLS, NVLink SHARP) off in NCCL, PyTorch and NVSHMEM, whatever the
#: caller's environment says: the NCCL floors in ``sku.py`` are the ring figures measured with
#: it off, and on a shared host a program using it can take the GPUs out of service.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

#: After the launcher exits, how long its output may take to drain (a grandchild that still
#: holds the pipe is killed with the rest of the process group).
_DRAIN_S = 10.0


def command(gpus: int, module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """(argv, env) for ``torchrun --standalone --nproc_per_node=GPUS -m MODULE ARGS``. The
    caller's environment is kept (NCCL settings such as ``NCCL_IB_HCA`` included), except that
    NVLink multicast is always off (``MULTICAST_OFF``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(MULTICAST_OFF)
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={gpus}",
        "-m",
        module,
        *args,
    ]
    return argv, env


def run_logged(
    argv: list[str],
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    *,
    what: str,
    echo: Callable[[str], None] | None = None,
) -> int:
    """Run ``argv`` with its stdout and stderr written to ``log_path`` (and each line passed to
    ``echo`` as it arrives), in its own process group, killed whole at ``timeout_s``. Returns
    the exit status; raises RuntimeError naming ``what`` and the log when it ran past the
    timeout (a worker that hangs without printing is caught too: the wait, not the output,
    sets the clock)."""
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if echo:
                    echo(line.rstrip("\n"))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait(timeout=_DRAIN_S)
            reader.join(timeout=_DRAIN_S)
            raise RuntimeError(
                f"{what} ran past {timeout_s:g} s and was killed; its output is in {log_path}"
            ) from None
        reader.join(timeout=_DRAIN_S)
        _kill_group(proc.pid)  # leftovers of the group, if any, hold no GPU after we return
        reader.join(timeout=_DRAIN_S)
    return rc


def tail(log_path: Path, chars: int = 2000) -> str:
    """The end of a log, for an error message."""
    try:
        return log_path.read_text(errors="replace")[-chars:]
    except OSError as exc:
        return f"(log {log_path} unreadable: {exc.strerror})"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
