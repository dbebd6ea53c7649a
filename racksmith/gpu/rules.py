"""Verdict rules for the load checks: measurements in, check results out. Pure Python (no
torch), so every rule is unit-tested on recorded measurements.

Rules, from the reference: a GPU fails below its SKU's floor or more than 10 % behind the
best GPU of its host (gpu-fryer's parity rule); results must agree across GPUs and with a
higher-precision reference (gpu-burn's correctness rule); error counters and clock-event
reasons are re-read after load, and anything that grew or throttled fails.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from racksmith.health.checks.gpu import clock_findings, per_gpu
from racksmith.health.outcome import CheckResult, Finding, fail, ok, unknown, warn
from racksmith.health.parsers.smi_xml import SmiLog

from .sku import Sku, nccl_floor

#: A GPU more than this far behind the best GPU of its host fails (gpu-fryer).
BEHIND_BEST = 0.10
#: bf16 products against an fp32 reference land between 1e-3 and 1e-2 (METHOD.md).
MAX_REL_ERR = 2e-2
#: Checksums of the same product on two GPUs of one SKU; gpu-burn flags > 1e-3.
MAX_DISAGREEMENT = 1e-3
#: Sustained under this share of the same GPU's burst rate means it slows under load more than
#: its power cap explains (an H200 at 700 W sustains about 90 % of its cool burst rate).
SUSTAINED_WARN = 0.80


@dataclass(frozen=True)
class GpuStress:
    index: int
    name: str
    ref_tflops: float  # burst: median of timed products right before the burn, GPU cool
    tflops: float  # sustained over the burn
    ref_copy_tbs: float  # best device-to-device copy before the burn (read + write)
    copy_tbs: float  # sustained copy during the burn
    batches: int
    self_consistent: bool  # every batch gave bit-identical checksums
    max_rel_err: float  # vs an fp32 product of the same operands (a row slice)
    disagreement: float  # max relative difference of its checksums vs GPU 0's
    steady_tflops: float = float("nan")  # plain products right after the burn, GPU warm

    @property
    def label(self) -> str:
        return f"GPU {self.index}"


def stress(gpus: Sequence[GpuStress], sku: Sku, seconds: float) -> CheckResult:
    title = "GPU stress: bf16 matmul and HBM copy on random data"
    if not gpus:
        return CheckResult("stress", title, (unknown("no GPU measurements"),))
    findings: list[Finding] = []
    best_tflops = max(g.tflops for g in gpus)
    best_copy = max(g.copy_tbs for g in gpus)
    metrics: dict[str, float] = {}
    for g in gpus:
        metrics[f'stress_tflops{{gpu="{g.index}"}}'] = round(g.tflops, 1)
        metrics[f'burst_tflops{{gpu="{g.index}"}}'] = round(g.ref_tflops, 1)
        if math.isfinite(g.steady_tflops):
            metrics[f'steady_tflops{{gpu="{g.index}"}}'] = round(g.steady_tflops, 1)
        metrics[f'copy_tbs{{gpu="{g.index}"}}'] = round(g.copy_tbs, 3)
        metrics[f'best_copy_tbs{{gpu="{g.index}"}}'] = round(g.ref_copy_tbs, 3)
        remedy = (
            "Check the GPU's clocks, power and cooling (clock events); swap it with a GPU of "
            "a healthy host to see whether the fault follows the GPU."
        )
        if not (math.isfinite(g.tflops) and math.isfinite(g.copy_tbs)) or g.batches < 2:
            findings.append(unknown(f"too few measurements ({g.batches} batches)", subject=g.label))
            continue
        if g.tflops < sku.matmul_floor_tflops:
            findings.append(
                fail(
                    f"bf16 matmul {g.tflops:.0f} TFLOP/s < floor {sku.matmul_floor_tflops:.0f}",
                    remedy,
                    g.label,
                )
            )
        elif g.tflops < (1 - BEHIND_BEST) * best_tflops:
            findings.append(
                fail(
                    f"bf16 matmul {g.tflops:.0f} TFLOP/s is more than 10% behind the best GPU "
                    f"of this host ({best_tflops:.0f})",
                    remedy,
                    g.label,
                )
            )
        if g.copy_tbs < sku.hbm_floor_tbs:
            findings.append(
                fail(
                    f"HBM copy {g.copy_tbs:.2f} TB/s < floor {sku.hbm_floor_tbs:.2f}",
                    remedy,
                    g.label,
                )
            )
        elif g.copy_tbs < (1 - BEHIND_BEST) * best_copy:
            findings.append(
                fail(
                    f"HBM copy {g.copy_tbs:.2f} TB/s is more than 10% behind the best GPU "
                    f"({best_copy:.2f})",
                    remedy,
                    g.label,
                )
            )
        if g.ref_tflops > 0 and g.tflops < SUSTAINED_WARN * g.ref_tflops:
            findings.append(
                warn(
                    f"sustained {g.tflops:.0f} TFLOP/s is {100 * g.tflops / g.ref_tflops:.0f}% "
                    f"of its burst rate {g.ref_tflops:.0f}: it slows under load",
                    "Check cooling and power (clock events during load).",
                    g.label,
                )
            )
        wrong = "Drain the host; a GPU that computes wrong results must be replaced (RMA)."
        if not g.self_consistent:
            findings.append(
                fail("the same product gave different results between batches", wrong, g.label)
            )
        if not g.max_rel_err <= MAX_REL_ERR:
            findings.append(
                fail(
                    f"result differs from the fp32 reference by {g.max_rel_err:.2e}", wrong, g.label
                )
            )
        if not g.disagreement <= MAX_DISAGREEMENT:
            findings.append(
                fail(f"result differs from GPU 0's by {g.disagreement:.2e}", wrong, g.label)
            )
    if findings:
        return CheckResult("stress", title, tuple(findings), metrics=metrics)
    low = min(gpus, key=lambda g: g.tflops)
    return CheckResult(
        "stress",
        title,
        (
            ok(
                f"{len(gpus)} GPUs for {seconds:g} s: matmul {low.tflops:.0f}-{best_tflops:.0f} "
                f"TFLOP/s, copy {min(g.copy_tbs for g in gpus):.2f}-{best_copy:.2f} TB/s; results "
                "agree"
            ),
        ),
        metrics=metrics,
    )


def after_load(
    before: SmiLog,
    after: SmiLog,
    during: Sequence[SmiLog],
    nvlink_before: dict[int, dict[int, dict[str, int]]] | None = None,
    nvlink_after: dict[int, dict[int, dict[str, int]]] | None = None,
) -> CheckResult:
    """Counters re-read after the load and clock events sampled during it."""
    title = "Counters and clock events after load"
    findings: list[Finding] = []
    prior = {g.bus_id: g for g in before.gpus}
    if len(after.gpus) != len(before.gpus):
        findings.append(
            fail(
                f"{len(before.gpus)} GPUs before the load, {len(after.gpus)} after",
                "A GPU dropped out under load: drain the host, read the kernel log (Xid 79).",
            )
        )

    def judge(gpu) -> list[Finding]:
        found: list[Finding] = []
        old = prior.get(gpu.bus_id)
        unc, old_unc = gpu.uncorrectable(), old.uncorrectable() if old else 0
        if unc is not None and old_unc is not None and unc > old_unc:
            found.append(
                fail(
                    f"uncorrectable ECC errors grew under load ({old_unc} -> {unc})",
                    "Drain the host; reset the GPU; RMA if it repeats.",
                    gpu.label,
                )
            )
        if gpu.remap_pending or gpu.remap_failure:
            found.append(
                fail(
                    "row remap pending or failed after load",
                    "Reset the GPU; RMA if it fails.",
                    gpu.label,
                )
            )
        if gpu.recovery_action not in ("", "None"):
            found.append(
                fail(
                    f"recovery action {gpu.recovery_action!r} after load",
                    "Do what it asks.",
                    gpu.label,
                )
            )
        return found

    # a field nvidia-smi could not read (before or after) is UNKNOWN for that GPU, named
    findings += per_gpu(after, judge)
    seen: set[tuple[str, str]] = set()
    for sample in during:
        for finding in per_gpu(sample, clock_findings):
            key = (finding.subject, finding.reason)
            if key not in seen:
                seen.add(key)
                findings.append(
                    type(finding)(
                        finding.severity,
                        finding.reason + " under load",
                        finding.remediation,
                        finding.subject,
                    )
                )
    if nvlink_before is not None and nvlink_after is not None:
        for gpu, links in nvlink_after.items():
            grown = {
                link: sum(c.values()) - sum(nvlink_before.get(gpu, {}).get(link, {}).values())
                for link, c in links.items()
            }
            grown = {link: n for link, n in grown.items() if n > 0}
            if grown:
                findings.append(
                    fail(
                        "NVLink errors grew under load: "
                        + ", ".join(f"link {k} +{v}" for k, v in sorted(grown.items())),
                        "Reset the GPUs; if errors keep growing, service the NVLink baseboard.",
                        f"GPU {gpu}",
                    )
                )
    if findings:
        return CheckResult("after_load", title, tuple(findings))
    return CheckResult(
        "after_load",
        title,
        (ok(f"no counter grew; {len(during)} samples under load showed no throttling"),),
    )


@dataclass(frozen=True)
class PeerCopy:
    src: int
    dst: int
    gbs: float  # GB/s, one direction
    peer_access: bool
    intact: bool = True  # the destination held exactly the source's bytes


def nvlink_p2p(pairs: Sequence[PeerCopy], sku: Sku, gpus: int) -> CheckResult:
    title = "NVLink peer bandwidth, every GPU pair"
    if gpus < 2:
        return CheckResult("nvlink_p2p", title, (ok("one GPU: no peers to measure"),))
    expected = gpus * (gpus - 1)
    findings: list[Finding] = []
    metrics = {f'p2p_gbs{{src="{p.src}",dst="{p.dst}"}}': round(p.gbs, 1) for p in pairs}
    if len(pairs) != expected:
        findings.append(unknown(f"{len(pairs)} of {expected} ordered GPU pairs measured"))
    remedy = "Reset the GPUs; check NVLink state and errors; service the baseboard if it persists."
    for p in pairs:
        subject = f"GPU {p.src} -> GPU {p.dst}"
        if not p.peer_access:
            findings.append(fail("no peer access between these GPUs", remedy, subject))
        elif not p.intact:
            findings.append(fail("the copy arrived corrupted", remedy, subject))
        elif p.gbs < sku.p2p_floor_gbs:
            findings.append(
                fail(f"{p.gbs:.0f} GB/s < floor {sku.p2p_floor_gbs:.0f}", remedy, subject)
            )
    if findings:
        return CheckResult("nvlink_p2p", title, tuple(findings), metrics=metrics)
    low, high = min(p.gbs for p in pairs), max(p.gbs for p in pairs)
    return CheckResult(
        "nvlink_p2p",
        title,
        (ok(f"{len(pairs)} pairs at {low:.0f}-{high:.0f} GB/s (floor {sku.p2p_floor_gbs:.0f})"),),
        metrics=metrics,
    )


@dataclass(frozen=True)
class NcclPoint:
    nbytes: int
    seconds: float  # per all-reduce
    correct: bool

    def algbw(self) -> float:
        return self.nbytes / self.seconds / 1e9

    def busbw(self, ranks: int) -> float:
        return self.algbw() * 2 * (ranks - 1) / ranks


@dataclass(frozen=True)
class NcclInfo:
    version: str = ""
    transports: tuple[str, ...] = ()  # "P2P/CUMEM", "SHM", "NET/IB/0"...
    algorithms: tuple[str, ...] = ()  # "Ring", "Tree", "NVLS"... as NCCL logged them
    nvls: bool | None = None


def nccl_allreduce(
    points: Sequence[NcclPoint], ranks: int, sku: Sku, info: NcclInfo
) -> CheckResult:
    title = "NCCL all-reduce bus bandwidth, one node"
    if ranks < 2:
        return CheckResult("nccl_allreduce", title, (ok("one GPU: nothing to all-reduce"),))
    if not points:
        return CheckResult("nccl_allreduce", title, (unknown("no all-reduce measurements"),))
    metrics = {f'busbw_gbs{{bytes="{p.nbytes}"}}': round(p.busbw(ranks), 1) for p in points}
    largest = max(points, key=lambda p: p.nbytes)
    floor = nccl_floor(sku, ranks)
    algo = "/".join(info.algorithms) or "not logged"
    transport = "/".join(info.transports) or "not logged"
    findings: list[Finding] = []
    if not all(p.correct for p in points):
        findings.append(
            fail("all-reduce returned wrong sums", "Drain the host; run the stress test per GPU.")
        )
    if floor is not None and largest.busbw(ranks) < floor:
        findings.append(
            fail(
                f"bus bandwidth {largest.busbw(ranks):.0f} GB/s at {largest.nbytes >> 20} MiB < "
                f"floor {floor:.0f} (algorithm {algo}, transport {transport})",
                "Check NVLink state/errors and the NCCL transport (P2P should be used, not SHM).",
            )
        )
    if findings:
        return CheckResult("nccl_allreduce", title, tuple(findings), metrics=metrics)
    return CheckResult(
        "nccl_allreduce",
        title,
        (
            ok(
                f"{ranks} GPUs: {largest.busbw(ranks):.0f} GB/s bus bandwidth at "
                f"{largest.nbytes >> 20} MiB (NCCL {info.version or '?'}, algorithm {algo}, "
                f"transport {transport})"
            ),
        ),
        metrics=metrics,
    )


@dataclass(frozen=True)
class IbResult:
    hca: str
    gpu: int
    gbps: float | None
    error: str = ""


def ib_write_bw(results: Sequence[IbResult], sku: Sku, expected: int) -> CheckResult:
    title = "InfiniBand per-HCA write bandwidth with GPUDirect"
    findings: list[Finding] = []
    metrics = {f'ib_gbps{{hca="{r.hca}"}}': r.gbps for r in results if r.gbps is not None}
    if len(results) != expected:
        findings.append(fail(f"{len(results)} HCAs tested, expected {expected}", "See ib_ports."))
    for r in results:
        if r.gbps is None:
            findings.append(unknown(r.error or "no bandwidth reported", subject=r.hca))
        elif r.gbps < sku.ib_floor_gbps:
            findings.append(
                fail(
                    f"{r.gbps:.0f} Gb/s with GPU {r.gpu} < floor {sku.ib_floor_gbps:.0f}",
                    "Check GDR (nvidia_peermem), the HCA's PCIe link and NUMA placement.",
                    r.hca,
                )
            )
    if findings:
        return CheckResult("ib_write_bw", title, tuple(findings), metrics=metrics)
    return CheckResult(
        "ib_write_bw",
        title,
        (ok(f"{len(results)} HCAs at or above {sku.ib_floor_gbps:.0f} Gb/s"),),
        metrics=metrics,
    )


@dataclass(frozen=True)
class Step:
    step: int
    loss: float
    seconds: float


@dataclass(frozen=True)
class SmokeRun:
    steps: Sequence[Step]
    tokens_per_step: int  # across all GPUs
    flops_per_token: float
    gpus: int
    peak_tflops: float
    warmup: int = 10  # steps left out of timing (compilation, allocator warm-up)
    extra: dict = field(default_factory=dict)

    def mfu_of(self, step: Step) -> float:
        return (
            self.flops_per_token
            * self.tokens_per_step
            / step.seconds
            / (self.gpus * self.peak_tflops * 1e12)
        )

    def timed(self) -> list[Step]:
        return list(self.steps[self.warmup :])


#: Step time is unstable when the 95th percentile exceeds the median by this factor.
STEP_TIME_SPREAD = 1.30
#: Loss must end at or below this share of where it started.
LOSS_FALL = 0.7


def smoke(run: SmokeRun, sku: Sku) -> CheckResult:
    title = "Training smoke test (GPT, DDP, synthetic data)"
    steps = list(run.steps)
    timed = run.timed()
    if len(timed) < 10:
        return CheckResult("smoke", title, (unknown(f"only {len(steps)} steps recorded"),))
    findings: list[Finding] = []
    bad = [s for s in steps if not math.isfinite(s.loss)]
    if bad:
        findings.append(
            fail(
                f"loss became {bad[0].loss} at step {bad[0].step}",
                "Re-run the stress test: a GPU that computes wrong results shows up there.",
            )
        )
    head = statistics.fmean(s.loss for s in steps[:5])
    tail = statistics.fmean(s.loss for s in steps[-20:])
    if not bad and not tail <= LOSS_FALL * head:
        findings.append(
            fail(
                f"loss did not fall: {head:.3f} over the first 5 steps, "
                f"{tail:.3f} over the last 20",
                "Compare with a known-good host; suspect wrong results from a GPU.",
            )
        )
    times = sorted(s.seconds for s in timed)
    median = statistics.median(times)
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    if p95 > STEP_TIME_SPREAD * median:
        findings.append(
            fail(
                f"step time unstable: p95 {1000 * p95:.1f} ms vs median {1000 * median:.1f} ms",
                "Look for throttling (clock events) and a slow GPU or link; per-step MFU "
                "shows when.",
            )
        )
    worst = max(timed, key=lambda s: s.seconds)
    if worst.seconds > 3 * median:
        findings.append(
            warn(
                f"step {worst.step} took {1000 * worst.seconds:.0f} ms "
                f"(median {1000 * median:.1f})",
                "A one-off stall; repeated stalls point to a flapping link or a throttling GPU.",
            )
        )
    mfus = [run.mfu_of(s) for s in timed]
    mfu_median = statistics.median(mfus)
    if mfu_median < sku.mfu_floor:
        findings.append(
            fail(
                f"MFU {100 * mfu_median:.1f}% < floor {100 * sku.mfu_floor:.0f}%",
                "Compare the stress figures; check clocks, PCIe and NVLink.",
            )
        )
    tokens_s = run.tokens_per_step / median
    metrics = {
        "smoke_mfu": round(mfu_median, 4),
        "smoke_tokens_per_second": round(tokens_s),
        "smoke_step_ms_median": round(1000 * median, 2),
        "smoke_step_ms_p95": round(1000 * p95, 2),
        "smoke_loss_first": round(head, 4),
        "smoke_loss_last": round(tail, 4),
    }
    if findings:
        return CheckResult("smoke", title, tuple(findings), metrics=metrics)
    return CheckResult(
        "smoke",
        title,
        (
            ok(
                f"{run.gpus} GPU(s), {len(steps)} steps: loss {head:.2f} -> {tail:.2f}, "
                f"{tokens_s / 1000:.0f}k tokens/s, step {1000 * median:.1f} ms (p95 "
                f"{1000 * p95:.1f}), MFU {100 * mfu_median:.1f}%"
            ),
        ),
        metrics=metrics,
    )
