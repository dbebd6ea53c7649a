"""NVLink peer bandwidth between every ordered pair of GPUs: a 1 GiB device-to-device copy
from GPU i to GPU j, repeated and timed with both devices synchronised (the copy engages
both), after checking that the pair has peer access at all."""

from __future__ import annotations

import time

from .rules import PeerCopy

SIZE_BYTES = 1 << 30
REPS = 10


def run(gpus: list[int]) -> list[PeerCopy]:
    import torch

    out = []
    for src in gpus:
        for dst in gpus:
            if src == dst:
                continue
            access = bool(torch.cuda.can_device_access_peer(src, dst))
            a = torch.randn(SIZE_BYTES // 2, device=src, dtype=torch.bfloat16)
            b = torch.empty(SIZE_BYTES // 2, device=dst, dtype=torch.bfloat16)
            for _ in range(3):
                b.copy_(a)
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            start = time.perf_counter()
            for _ in range(REPS):
                b.copy_(a)
            torch.cuda.synchronize(src)
            torch.cuda.synchronize(dst)
            seconds = (time.perf_counter() - start) / REPS
            intact = bool(torch.equal(b.to(src), a))
            out.append(PeerCopy(src, dst, SIZE_BYTES / seconds / 1e9, access, intact))
            del a, b
    return out
