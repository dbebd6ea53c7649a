"""A real data-parallel job that hangs: the test subject of ``racksmith diagnose hang``.

Each rank is one process of a gloo (CPU) process group: torch.distributed's own rendezvous
(``env://``: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, as torchrun sets them), a small model's
gradients all-reduced every step. At step ``--hang-step`` the rank ``--hang-rank`` stops before
the collective (it sleeps in ``wait_for_batch``, as a rank whose data loader or GPU stopped
would), so every other rank blocks inside ``all_reduce`` of that step: the situation the issue
describes. The collective timeout is long (``--timeout``), so the job stays hung while it is
diagnosed; the test kills it afterwards.

Progress: before each step's collective a rank writes the step number to
``--progress-dir/rank-N`` (the test waits until every rank reached the hang step). With
``TORCH_FR_DUMP_TEMP_FILE`` set and the flight recorder on (``TORCH_FR_BUFFER_SIZE``), a thread
writes the rank's flight-recorder dump (JSON) to ``$TORCH_FR_DUMP_TEMP_FILE<rank>`` every half
second, as PyTorch's debug server dumps periodically: a gloo rank that waits never times out
here, so nothing else would write one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist


def wait_for_batch(seconds: float) -> None:
    """Where the hung rank stays: it never reaches the step's collective."""
    time.sleep(seconds)


def dump_flight_recorder(prefix: str, rank: int) -> None:
    from torch._C._distributed_c10d import _dump_fr_trace_json

    path = Path(f"{prefix}{rank}")
    tmp = path.with_name(path.name + ".tmp")
    while True:
        tmp.write_bytes(_dump_fr_trace_json(includeCollectives=True, onlyActive=False))
        os.replace(tmp, path)
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--progress-dir", default="")
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
    if prefix:
        threading.Thread(target=dump_flight_recorder, args=(prefix, rank), daemon=True).start()
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    progress = Path(args.progress_dir) / f"rank-{rank}" if args.progress_dir else None
    for step in range(args.steps):
        loss = model(torch.randn(32, 64)).pow(2).mean()
        loss.backward()
        if rank == args.hang_rank and step == args.hang_step:
            wait_for_batch(args.timeout * 10)
        if progress:
            progress.write_text(str(step))
        for param in model.parameters():
            dist.all_reduce(param.grad)
            param.grad.zero_()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
