"""Load-check rules on measurements recorded on a real H200 host (tests/fixtures/h200-x2-run),
and on the same measurements degraded the way failing hardware degrades them."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from racksmith.gpu import mfu, nccl, rules
from racksmith.gpu.sku import SKUS, UnknownSku, lookup, nccl_floor
from racksmith.gpu.smoke import Config
from racksmith.health.outcome import Severity
from racksmith.health.parsers import smi_xml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RUN = FIXTURES / "h200-x2-run"
H200 = lookup("NVIDIA H200")


def load_report():
    return json.loads((RUN / "load-report.json").read_text())


def measured_stress() -> list[rules.GpuStress]:
    return [rules.GpuStress(**g) for g in load_report()["figures"]["stress"]["per_gpu"]]


def test_real_stress_measurements_pass():
    result = rules.stress(measured_stress(), H200, 30)
    assert result.status == Severity.OK
    assert "2 GPUs for 30 s" in result.findings[0].reason
    assert result.metrics['stress_tflops{gpu="0"}'] > 600


def test_recorded_figures_meet_the_issue_targets():
    """The issue's targets, on the recorded run: stress within 5% of the steady matmul rate
    PyTorch reached in the same run; copy within 10% of the run's best copy."""
    for g in measured_stress():
        assert abs(g.tflops / g.steady_tflops - 1) <= 0.05
        assert g.copy_tbs >= 0.9 * g.ref_copy_tbs


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"tflops": 600.0}, "bf16 matmul 600 TFLOP/s < floor 650"),
        ({"copy_tbs": 3.0}, "HBM copy 3.00 TB/s < floor 3.60"),
        ({"copy_tbs": 3.7}, "HBM copy 3.70 TB/s is more than 10% behind"),
        ({"self_consistent": False}, "different results between batches"),
        ({"max_rel_err": 0.5}, "differs from the fp32 reference"),
        ({"max_rel_err": float("nan")}, "differs from the fp32 reference"),
        ({"disagreement": 0.02}, "differs from GPU 0's"),
    ],
)
def test_degraded_gpu_fails(change, reason):
    gpus = measured_stress()
    gpus[1] = dataclasses.replace(gpus[1], **change)
    result = rules.stress(gpus, H200, 30)
    assert result.status == Severity.FAIL
    failing = [f for f in result.findings if f.severity == Severity.FAIL]
    assert any(reason in f.reason and f.subject == "GPU 1" for f in failing), failing
    assert all(f.subject != "GPU 0" for f in failing)


def test_gpu_above_the_floor_but_ten_percent_behind_the_best_fails():
    gpus = measured_stress()
    gpus[0] = dataclasses.replace(gpus[0], tflops=760.0)
    gpus[1] = dataclasses.replace(gpus[1], tflops=670.0)  # above the 650 floor, < 0.9 x 760
    result = rules.stress(gpus, H200, 30)
    assert [(f.subject, f.severity) for f in result.findings] == [("GPU 1", Severity.FAIL)]
    assert "more than 10% behind the best GPU of this host (760)" in result.findings[0].reason


def test_slowing_under_load_warns_and_no_data_is_unknown():
    gpus = measured_stress()
    gpus[0] = dataclasses.replace(gpus[0], ref_tflops=900.0)
    assert rules.stress(gpus, H200, 30).status == Severity.WARN
    assert rules.stress([], H200, 30).status == Severity.UNKNOWN
    short = [dataclasses.replace(g, batches=1) for g in measured_stress()]
    assert rules.stress(short, H200, 30).status == Severity.UNKNOWN


def smi(path: Path):
    return smi_xml.parse(path.read_text())


def test_after_load_on_real_and_failure_captures():
    before = smi(FIXTURES / "h200-x2" / "smi_q.xml")
    assert rules.after_load(before, before, [before]).status == Severity.OK
    worse = smi(FIXTURES / "h200-x2-failures" / "ecc-uncorrectable" / "smi_q.xml")
    result = rules.after_load(before, worse, [])
    assert result.status == Severity.FAIL
    assert "uncorrectable ECC errors grew under load (0 -> 3)" in result.findings[0].reason
    hot = smi(FIXTURES / "h200-x2-failures" / "thermal-slowdown" / "smi_q.xml")
    reasons = [f.reason for f in rules.after_load(before, before, [hot, hot]).findings]
    assert reasons == [
        "clock event hw_slowdown is active under load",
        "clock event hw_thermal_slowdown is active under load",
    ]
    lost = smi_xml.SmiLog(before.driver_version, before.cuda_version, 1, before.gpus[:1])
    assert (
        "2 GPUs before the load, 1 after" in rules.after_load(before, lost, []).findings[0].reason
    )


def test_after_load_nvlink_error_growth():
    before = smi(FIXTURES / "h200-x2" / "smi_q.xml")
    clean = {0: {3: {"Replay Errors": 0, "CRC Errors": 0}}}
    grown = {0: {3: {"Replay Errors": 4, "CRC Errors": 1}}}
    result = rules.after_load(before, before, [], clean, grown)
    assert result.status == Severity.FAIL
    assert result.findings[0].reason == "NVLink errors grew under load: link 3 +5"


def test_nvlink_p2p_real_figures_and_faults():
    figures = load_report()["figures"]["nvlink_p2p_gbs"]
    pairs = [rules.PeerCopy(int(k[0]), int(k[-1]), v, True) for k, v in figures.items()]
    assert rules.nvlink_p2p(pairs, H200, 2).status == Severity.OK
    slow = [dataclasses.replace(pairs[0], gbs=120.0), pairs[1]]
    assert "120 GB/s < floor 335" in rules.nvlink_p2p(slow, H200, 2).findings[0].reason
    no_peer = [dataclasses.replace(pairs[0], peer_access=False), pairs[1]]
    assert rules.nvlink_p2p(no_peer, H200, 2).status == Severity.FAIL
    corrupt = [dataclasses.replace(pairs[0], intact=False), pairs[1]]
    assert "corrupted" in rules.nvlink_p2p(corrupt, H200, 2).findings[0].reason
    assert rules.nvlink_p2p(pairs[:1], H200, 2).status == Severity.UNKNOWN
    assert rules.nvlink_p2p([], H200, 1).status == Severity.OK


def test_nccl_log_parser_on_the_real_log():
    info, per_size = nccl.parse_log((RUN / "nccl-debug.log").read_text())
    assert info.version == "2.28.9+cuda13.0"
    assert info.transports == ("P2P/CUMEM",)
    assert info.algorithms == ("RING",)
    assert info.nvls is False
    assert per_size[4294967296] == "RING/SIMPLE" and per_size[8388608] == "RING/SIMPLE"


def real_points():
    data = json.loads((RUN / "nccl-result.json").read_text())
    return [rules.NcclPoint(p["bytes"], p["seconds"], p["correct"]) for p in data["points"]]


def test_nccl_rule_on_real_results():
    info, _ = nccl.parse_log((RUN / "nccl-debug.log").read_text())
    points = real_points()
    result = rules.nccl_allreduce(points, 2, H200, info)
    assert result.status == Severity.OK
    assert "algorithm RING, transport P2P/CUMEM" in result.findings[0].reason
    assert 330 < points[-1].busbw(2) < 360  # 2 ranks: busbw == algbw
    slow = [*points[:-1], dataclasses.replace(points[-1], seconds=points[-1].seconds * 2)]
    assert "< floor 300" in rules.nccl_allreduce(slow, 2, H200, info).findings[0].reason
    wrong = [dataclasses.replace(p, correct=False) for p in points]
    assert "wrong sums" in rules.nccl_allreduce(wrong, 2, H200, info).findings[0].reason
    assert rules.nccl_allreduce([], 2, H200, info).status == Severity.UNKNOWN


def smoke_run(path: Path) -> rules.SmokeRun:
    data = json.loads(path.read_text())
    return rules.SmokeRun(
        steps=[rules.Step(s["step"], s["loss"], s["seconds"]) for s in data["steps"]],
        tokens_per_step=data["tokens_per_step"],
        flops_per_token=data["flops_per_token"],
        gpus=data["gpus"],
        peak_tflops=data["peak_tflops"],
    )


@pytest.mark.parametrize("name, gpus", [("smoke-1gpu.json", 1), ("smoke-2gpu.json", 2)])
def test_real_smoke_runs_pass(name, gpus):
    run = smoke_run(RUN / name)
    result = rules.smoke(run, H200)
    assert result.status == Severity.OK, result.findings
    assert run.gpus == gpus and result.metrics["smoke_loss_last"] < 2.0
    assert result.metrics["smoke_mfu"] >= 0.40  # the issue's target on one GPU; met on two too


def test_real_run_whose_loss_did_not_fall_fails():
    result = rules.smoke(smoke_run(RUN / "run1-smoke-1gpu-uniform-data.json"), H200)
    assert result.status == Severity.FAIL
    assert result.findings[0].reason.startswith("loss did not fall: 10.590")


def test_smoke_faults():
    run = smoke_run(RUN / "smoke-1gpu.json")
    steps = list(run.steps)
    nan = dataclasses.replace(
        run, steps=[*steps[:100], rules.Step(100, math.nan, 0.05), *steps[101:]]
    )
    assert rules.smoke(nan, H200).findings[0].reason == "loss became nan at step 100"
    jittery = [
        dataclasses.replace(s, seconds=s.seconds * (2 if s.step % 4 == 0 else 1)) for s in steps
    ]
    result = rules.smoke(dataclasses.replace(run, steps=jittery), H200)
    assert any("step time unstable" in f.reason for f in result.findings)
    stall = [dataclasses.replace(s, seconds=5.0) if s.step == 150 else s for s in steps]
    result = rules.smoke(dataclasses.replace(run, steps=stall), H200)
    assert result.status == Severity.WARN and "step 150 took 5000 ms" in result.findings[0].reason
    slow = [dataclasses.replace(s, seconds=s.seconds * 1.5) for s in steps]
    assert "MFU" in rules.smoke(dataclasses.replace(run, steps=slow), H200).findings[0].reason
    assert rules.smoke(dataclasses.replace(run, steps=steps[:12]), H200).status == Severity.UNKNOWN


def test_mfu_math_matches_the_recorded_run():
    data = json.loads((RUN / "smoke-1gpu.json").read_text())
    cfg = Config(**data["config"])
    n = mfu.gpt_params(cfg.vocab, cfg.d_model, cfg.n_layers)
    assert n == data["n_params"] == 184_574_976  # counted from the model on the GPU
    assert cfg.flops_per_token() == data["flops_per_token"]
    assert cfg.flops_per_token() == 6 * n + 12 * 12 * 16 * 64 * 1024
    # the per-batch MFU the worker printed equals the formula on the recorded step time
    printed = {}
    for line in (RUN / "load.txt").read_text().splitlines():
        m = re.match(r"\[smoke_1gpu\] step +(\d+) .* MFU +([\d.]+)%", line)
        if m:
            printed[int(m.group(1))] = float(m.group(2))
    assert len(printed) == 300
    for step in data["steps"][50:60]:
        tokens_s = data["tokens_per_step"] / step["seconds"]
        value = 100 * mfu.mfu(data["flops_per_token"], tokens_s, 1, 989.0)
        assert abs(value - printed[step["step"]]) < 0.06


def test_mfu_arithmetic():
    assert mfu.mfu(1e9, 1e5, 1, 1000.0) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        mfu.mfu(1e9, 1e5, 0, 1000.0)


def test_ib_rule():
    results = [
        rules.IbResult("mlx5_0", 0, 391.9),
        rules.IbResult("mlx5_1", 1, 250.0),
        rules.IbResult("mlx5_2", 2, None, "ib_write_bw not installed (perftest)"),
    ]
    result = rules.ib_write_bw(results, H200, 8)
    reasons = [f.reason for f in result.findings]
    assert reasons[0] == "3 HCAs tested, expected 8"
    assert "250 Gb/s with GPU 1 < floor 360" in reasons
    assert result.status == Severity.UNKNOWN


def test_sku_table():
    assert H200.peak_bf16_tflops == 989.0
    assert (
        nccl_floor(H200, 8) == 340.0
        and nccl_floor(H200, 3) == 300.0
        and nccl_floor(H200, 1) is None
    )
    with pytest.raises(UnknownSku, match="no SKU entry for GPU 'NVIDIA B200'"):
        lookup("NVIDIA B200")
    assert all(s.mfu_floor < 0.40 for s in SKUS.values())  # floors sit below the measured ~44%
