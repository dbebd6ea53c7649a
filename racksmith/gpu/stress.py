"""GPU stress test: bf16 matrix products and HBM copies on random data, on every GPU at once.

Per GPU, in one thread each (so all GPUs heat up together):
1. burst rate: the median time of 8192^3 bf16 products, measured with CUDA events right
   before the burn, on a cool GPU at its highest boost clock;
2. best copy: the fastest device-to-device copy over a few sizes (bytes read + written);
3. the burn: for ``seconds``, batches of products timed with events, each followed by a
   checksum kept on the GPU, and a timed copy burst between batches;
4. steady rate: right after the burn, plain back-to-back products (no checks, no copies) for a
   few seconds: the rate PyTorch reaches on this GPU, warmed and at its power limit, in the
   same run. The burn's rate over the steady rate says how fully the stress test loads it;
5. correctness: every batch's checksum must equal the first (bit-identical: same operands,
   same kernel), the first product is compared with an fp32 product of a row slice, and the
   checksums are compared across GPUs (same seed, so the same operands everywhere).

Meanwhile the caller samples ``nvidia-smi -q -x`` for clock events under load. torch is
imported inside the functions so this module imports on a machine without it.
"""

from __future__ import annotations

import statistics
import threading
import time

from .rules import GpuStress

N = 8192
STEADY_S = 3.0
COPY_SIZES_MIB = (1024, 4096)


def _timed(torch, work, reps: int) -> list[float]:
    """Seconds each of ``reps`` calls of ``work()`` took on the GPU, timed with events."""
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return times


def _matmul_rate(torch, a, b, out, reps: int) -> float:
    """Median seconds per product."""
    return statistics.median(_timed(torch, lambda: torch.matmul(a, b, out=out), reps))


def _matmul_loop(torch, a, b, out, seconds: float, per_batch: int = 20) -> float:
    """TFLOP/s of back-to-back products for about ``seconds``, timed with events."""

    def batch() -> None:
        for _ in range(per_batch):
            torch.matmul(a, b, out=out)

    total, count = 0.0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        total += _timed(torch, batch, 1)[0]
        count += per_batch
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1] * count / total / 1e12


def _copy_rate(torch, dst, src, reps: int) -> float:
    """Median TB/s of dst.copy_(src), counting bytes read plus bytes written."""
    nbytes = 2 * src.numel() * src.element_size()
    return nbytes / statistics.median(_timed(torch, lambda: dst.copy_(src), reps)) / 1e12


def stress_one(index: int, seconds: float, seed: int, results: dict, checksums: dict) -> None:
    import torch

    torch.cuda.set_device(index)
    gen = torch.Generator(device=f"cuda:{index}").manual_seed(seed)
    a = torch.randn(N, N, device=index, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(N, N, device=index, dtype=torch.bfloat16, generator=gen)
    c = torch.empty(N, N, device=index, dtype=torch.bfloat16)
    flops = 2.0 * N**3

    for _ in range(5):  # warm-up: cuBLAS handle, heuristics, clocks
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize(index)
    ref_tflops = flops / _matmul_rate(torch, a, b, c, 30) / 1e12

    # correctness of the first product against fp32 on a slice of rows
    rows = 256
    ref = (a[:rows].float() @ b.float()).double()
    got = c[:rows].double()
    max_rel_err = float((got - ref).norm() / ref.norm())
    del ref, got

    copy_best = 0.0
    big = None
    for mib in COPY_SIZES_MIB:
        elems = mib * 2**20 // 2
        src = torch.randn(elems, device=index, dtype=torch.bfloat16, generator=gen)
        dst = torch.empty_like(src)
        dst.copy_(src)
        copy_best = max(copy_best, _copy_rate(torch, dst, src, 10))
        big = (dst, src)
    dst, src = big

    first = c.float().sum(dim=1)
    consistent = torch.ones((), dtype=torch.bool, device=index)
    mm_time = copy_time = 0.0
    mm_count = copy_count = batches = 0
    per_batch, copies_per_burst = 50, 10
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_batch):
            torch.matmul(a, b, out=c)
        end.record()
        check = c.float().sum(dim=1)
        consistent &= (check == first).all()
        cstart, cend = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        cstart.record()
        for _ in range(copies_per_burst):
            dst.copy_(src)
        cend.record()
        cend.synchronize()
        mm_time += start.elapsed_time(end) / 1000
        copy_time += cstart.elapsed_time(cend) / 1000
        mm_count += per_batch
        copy_count += copies_per_burst
        batches += 1
    steady_tflops = _matmul_loop(torch, a, b, c, STEADY_S)
    copy_bytes = 2 * src.numel() * src.element_size() * copy_count
    checksums[index] = first.cpu()
    results[index] = GpuStress(
        index=index,
        name=torch.cuda.get_device_name(index),
        ref_tflops=ref_tflops,
        steady_tflops=steady_tflops,
        tflops=flops * mm_count / mm_time / 1e12 if mm_time else float("nan"),
        ref_copy_tbs=copy_best,
        copy_tbs=copy_bytes / copy_time / 1e12 if copy_time else float("nan"),
        batches=batches,
        self_consistent=bool(consistent.item()),
        max_rel_err=max_rel_err,
        disagreement=0.0,
    )


def run(gpus: list[int], seconds: float, *, seed: int = 1234) -> list[GpuStress]:
    """Stress every GPU in ``gpus`` at once; returns one measurement per GPU (a GPU whose
    thread failed is missing, and the caller reports that)."""
    results: dict[int, GpuStress] = {}
    checksums: dict = {}
    errors: dict[int, str] = {}

    def target(index: int) -> None:
        try:
            stress_one(index, seconds, seed, results, checksums)
        except Exception as exc:  # reported by the caller as a missing GPU
            errors[index] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 300)
    if errors:
        raise RuntimeError("; ".join(f"GPU {i}: {e}" for i, e in sorted(errors.items())))
    base = checksums.get(gpus[0]) if gpus else None
    out = []
    for index in sorted(results):
        r = results[index]
        other = checksums[index]
        diff = float(((other - base).abs().max() / base.abs().max().clamp_min(1e-30)).item())
        out.append(GpuStress(**{**r.__dict__, "disagreement": diff}))
    return out
