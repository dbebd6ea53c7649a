"""Per-SKU figures: the dense bf16 peak that MFU is measured against, and the floors below
which a GPU (or a host's links) fails the load checks.

Peaks are NVIDIA's dense (not sparse) bf16 figures. Floors are set from measurements on
healthy hosts with a margin, and each says where it came from; measured figures live in
docs/health.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sku:
    name: str  # as nvidia-smi and torch.cuda.get_device_name() report it
    peak_bf16_tflops: float  # dense
    matmul_floor_tflops: float  # 8192^3 bf16 matmul on random data, per GPU
    hbm_floor_tbs: float  # device-to-device copy, bytes read + written
    p2p_floor_gbs: float  # NVLink peer copy, one direction, per GPU pair
    #: NCCL all-reduce bus bandwidth floor at the largest message, by GPUs in the host
    #: (NVLink SHARP/NVLS off: the ring/P2P figure).
    nccl_busbw_floor_gbs: dict[int, float] = field(default_factory=dict)
    ib_floor_gbps: float = 0.0  # ib_write_bw with GPUDirect, per HCA, one direction
    mfu_floor: float = 0.0  # training smoke test, median MFU after warm-up


SKUS: dict[str, Sku] = {
    # Measured on H200 hosts (docs/health.md): matmul 770-790 TFLOP/s, copy 4.1-4.3 TB/s, peer
    # copy about 395 GB/s, 2-GPU all-reduce 348 GB/s at 4 GB, smoke test MFU about 45 %.
    # P2P and IB floors are Azure's published gates (335 GB/s; 360 Gb/s for H200).
    "NVIDIA H200": Sku(
        "NVIDIA H200",
        peak_bf16_tflops=989.0,
        matmul_floor_tflops=650.0,
        hbm_floor_tbs=3.6,
        p2p_floor_gbs=335.0,
        nccl_busbw_floor_gbs={2: 300.0, 4: 300.0, 8: 340.0},
        ib_floor_gbps=360.0,
        mfu_floor=0.35,
    ),
    # H100 SXM: same compute peak, slower HBM3 (3.35 TB/s datasheet). gpu-fryer reports about
    # 730 TFLOP/s bf16; Azure gates P2P at 335 GB/s and IB at 380 Gb/s; all-reduce 8 GPUs ring
    # about 366 GB/s (reference, section 5).
    "NVIDIA H100 80GB HBM3": Sku(
        "NVIDIA H100 80GB HBM3",
        peak_bf16_tflops=989.0,
        matmul_floor_tflops=620.0,
        hbm_floor_tbs=2.5,
        p2p_floor_gbs=335.0,
        nccl_busbw_floor_gbs={2: 300.0, 4: 300.0, 8: 340.0},
        ib_floor_gbps=380.0,
        mfu_floor=0.33,
    ),
}


class UnknownSku(KeyError):
    def __str__(self) -> str:
        return (
            f"no SKU entry for GPU {self.args[0]!r}; known: {', '.join(SKUS)}. "
            "Add its peak and floors to racksmith/gpu/sku.py."
        )


def lookup(name: str) -> Sku:
    try:
        return SKUS[name]
    except KeyError:
        raise UnknownSku(name) from None


def nccl_floor(sku: Sku, gpus: int) -> float | None:
    """The floor for this many GPUs, or for the nearest smaller count we have one for."""
    known = [n for n in sorted(sku.nccl_busbw_floor_gbs) if n <= gpus]
    return sku.nccl_busbw_floor_gbs[known[-1]] if known else None
