"""Starting a worker module on every local GPU with torchrun, under the same interpreter and
with this package importable (the agent is shipped as a folder, not installed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def command(gpus: int, module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """(argv, env) for ``torchrun --standalone --nproc_per_node=GPUS -m MODULE ARGS``. The
    caller's environment is kept, NCCL and NVLink-SHARP settings included."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + env.get("PYTHONPATH", "")
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
