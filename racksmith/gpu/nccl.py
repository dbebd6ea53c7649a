"""Single-node NCCL all-reduce bus bandwidth, recording the algorithm and transport NCCL chose.

``launch()`` starts one process per GPU with torchrun (``python -m racksmith.gpu.nccl`` is
the worker) and NCCL's debug log switched on (INIT, GRAPH, TUNING) into per-process files;
``parse_log()`` reads the version, transports (``via P2P/CUMEM``...) and the algorithm per
message size out of it. The algorithm matters because bus bandwidth depends on it: with
NVLink SHARP (NVLS) an 8-GPU H200 all-reduce reaches about 473 GB/s, a ring about 366, so a
figure means little without the algorithm beside it.

busbw = algbw x 2 (n - 1) / n (nccl-tests' definition for all-reduce).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import time
from pathlib import Path

from . import torchrun
from .rules import NcclInfo, NcclPoint

SIZES = (8 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30)

_VERSION = re.compile(r"NCCL version ([\w.+-]+)")
_VIA = re.compile(r"via (\S+)")
_ALGO = re.compile(r"AllReduce: (\d+) Bytes -> Algo (\w+) proto (\w+)")
_NVLS_OFF = re.compile(
    r"NVLS multicast support is not available|NCCL_NVLS_ENABLE set by environment to 0"
)
_NVLS_CHANNELS = re.compile(r"(\d+) nvls channels")


def parse_log(text: str) -> tuple[NcclInfo, dict[int, str]]:
    """(what NCCL chose, {message bytes: "ALGO/PROTO"}) from an NCCL_DEBUG=INFO log."""
    version = _VERSION.search(text)
    transports = sorted({m.group(1).rstrip(",") for m in _VIA.finditer(text)})
    per_size: dict[int, str] = {}
    for match in _ALGO.finditer(text):
        per_size[int(match.group(1))] = f"{match.group(2)}/{match.group(3)}"
    algorithms = sorted({v.split("/")[0] for v in per_size.values()})
    channels = [int(m.group(1)) for m in _NVLS_CHANNELS.finditer(text)]
    if channels:
        nvls: bool | None = any(channels)
    elif _NVLS_OFF.search(text):
        nvls = False
    else:
        nvls = None
    return (
        NcclInfo(version.group(1) if version else "", tuple(transports), tuple(algorithms), nvls),
        per_size,
    )


def worker(out: str, sizes: tuple[int, ...]) -> None:
    """One rank. Rank 0 writes the measurements to ``out``."""
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, ranks = dist.get_rank(), dist.get_world_size()
    points = []
    for nbytes in sizes:
        x = torch.full((nbytes // 4,), float(rank + 1), device="cuda", dtype=torch.float32)
        dist.all_reduce(x)
        ok = torch.tensor(
            [bool((x == ranks * (ranks + 1) / 2).all())], device="cuda", dtype=torch.int32
        )
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        iters = 20 if nbytes <= (1 << 30) else 10
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        elapsed = torch.tensor([(time.perf_counter() - start) / iters], device="cuda")
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        points.append(
            {"bytes": nbytes, "seconds": float(elapsed.item()), "correct": bool(ok.item())}
        )
        del x
    version = torch.cuda.nccl.version()
    version = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    if rank == 0:
        Path(out).write_text(
            json.dumps(
                {
                    "ranks": ranks,
                    "points": points,
                    "nccl": version,
                    "device": torch.cuda.get_device_name(0),
                },
                indent=1,
            )
        )
    dist.destroy_process_group()


def launch(
    gpus: int,
    workdir: Path,
    *,
    sizes: tuple[int, ...] = SIZES,
    timeout_s: float = 600,
    echo=None,
):
    """Run the worker on ``gpus`` GPUs; returns (points, ranks, info, per-size algorithms,
    log path). torchrun's output goes to ``nccl-torchrun.log`` in ``workdir`` (and each line to
    ``echo`` when given), NCCL's debug log to ``nccl-debug.log``. Raises RuntimeError with the
    tail of the output when torchrun fails."""
    workdir.mkdir(parents=True, exist_ok=True)
    for old in glob.glob(str(workdir / "nccl-debug.*.log")):
        os.unlink(old)
    out = workdir / "nccl-result.json"
    out.unlink(missing_ok=True)
    argv, env = torchrun.command(
        gpus, "racksmith.gpu.nccl", "--out", str(out), "--sizes", ",".join(map(str, sizes))
    )
    env.update(
        NCCL_DEBUG="INFO",
        NCCL_DEBUG_SUBSYS="INIT,GRAPH,TUNING,ENV",
        NCCL_DEBUG_FILE=str(workdir / "nccl-debug.%h.%p.log"),
    )
    run_log = workdir / "nccl-torchrun.log"
    rc = torchrun.run_logged(
        argv, env, run_log, timeout_s, what=f"NCCL all-reduce on {gpus} GPUs", echo=echo
    )
    if rc != 0 or not out.is_file():
        raise RuntimeError(
            f"torchrun NCCL all-reduce exited with {rc} (log {run_log}): {torchrun.tail(run_log)}"
        )
    data = json.loads(out.read_text())
    log_text = "".join(
        Path(p).read_text(errors="replace")
        for p in sorted(glob.glob(str(workdir / "nccl-debug.*.log")))
    )
    log_path = workdir / "nccl-debug.log"
    log_path.write_text(log_text)
    info, per_size = parse_log(log_text)
    if not info.version:
        info = NcclInfo(data.get("nccl", ""), info.transports, info.algorithms, info.nvls)
    points = [NcclPoint(p["bytes"], p["seconds"], p["correct"]) for p in data["points"]]
    return points, data["ranks"], info, per_size, log_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="NCCL all-reduce worker (run under torchrun)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args(argv)
    worker(args.out, tuple(int(s) for s in args.sizes.split(",")))


if __name__ == "__main__":
    main()
