"""The MFU classifier on curves generated from each pattern of issue 26, and on the real
per-step curves of the smoke test on an H200 (which must read as healthy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racksmith.testing.curves import BASE, SHAPES, generate
from racksmith.triage.diagnose import metrics
from racksmith.triage.diagnose.mfu import HEALTHY, INSUFFICIENT, MATCHED, UNKNOWN, Sample, diagnose

REPO = Path(__file__).resolve().parents[3]
X1 = REPO / "tests" / "fixtures" / "h200-x1-run"
X2 = REPO / "tests" / "fixtures" / "h200-x2-run"
LONG = REPO / "tests" / "fixtures" / "h200-x1-smoke2000"  # 2000 steps


def names(d):
    return [m.pattern.name for m in d.matches]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_generated_pattern_is_recognised_and_nothing_else(shape, seed):
    d = diagnose(generate(shape, seed=seed), BASE)
    if shape == "healthy":
        assert d.verdict == HEALTHY and d.matches == () and d.unexplained == ()
    else:
        assert d.verdict == MATCHED, d.unexplained
        assert names(d) == [shape]
        assert all(m.evidence for m in d.matches)


# The smoke test's own curves (real H200 runs) against an expectation from the same hardware:
# the other run's load report (its smoke test median), so no curve is judged against itself.
REAL = [
    (X1 / "clean-smoke-1gpu.log", X2 / "load-report.json"),
    (X1 / "clean-smoke-1gpu.log", X1 / "clean-load-report.json"),
    (X2 / "smoke-1gpu.json", X1 / "clean-load-report.json"),
    (X2 / "smoke-2gpu.json", X1 / "clean-load-report.json"),
    (X2 / "run1-smoke-1gpu-uniform-data.json", X2 / "load-report.json"),
    (LONG / "smoke-1gpu.json", X1 / "clean-load-report.json"),
    (LONG / "smoke-1gpu.log", X2 / "load-report.json"),
]


@pytest.mark.parametrize(("curve", "base"), REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_h200_curves_read_healthy(curve, base):
    c = metrics.read(curve)
    expected, unit, _ = metrics.baseline(base)
    assert c.unit == unit == metrics.MFU and c.warmup == 10
    d = diagnose(c.judged(), expected)
    assert d.verdict == HEALTHY, d.to_dict()
    assert 0.9 <= d.figures.level <= 1.1 and d.figures.dips == ()


def test_the_real_warmup_step_is_a_dip_when_not_left_out():
    c = metrics.read(X2 / "smoke-1gpu.json")
    assert c.samples[0].value < 0.01  # step 0: torch.compile, 27 s
    d = diagnose(c.judged(0), 0.4446)
    assert d.figures.dips == (0,) and d.verdict == MATCHED  # a single random dip, named as such
    assert names(d) == ["random_dips"]


def test_checkpoint_dips_against_the_intervals_given():
    curve = generate("checkpoint_eval")
    ok = diagnose(curve, BASE, checkpoint_every=100)
    assert names(ok) == ["checkpoint_eval"] and ok.matches[0].confirmed
    assert "5/5 at multiples of --checkpoint-every 100" in ok.matches[0].evidence[0]
    unasked = diagnose(curve, BASE)
    assert names(unasked) == ["checkpoint_eval"] and not unasked.matches[0].confirmed
    wrong = diagnose(curve, BASE, checkpoint_every=250, eval_every=70)
    assert wrong.verdict == UNKNOWN and wrong.matches == ()
    assert "not the checkpoint/eval steps given" in wrong.unexplained[0]


def test_a_level_between_the_known_bands_is_no_known_pattern():
    curve = [Sample(s.step, s.value * 0.5) for s in generate("healthy")]
    d = diagnose(curve, BASE)
    assert d.verdict == UNKNOWN and d.matches == ()
    assert "between the known bands" in d.unexplained[0] and "50% of expected" in d.unexplained[0]


def test_a_decline_without_a_restart_is_named_but_not_confirmed():
    curve = generate("gc_decline")[:300]
    d = diagnose(curve, BASE)
    assert names(d) == ["gc_decline"] and not d.matches[0].confirmed
    assert "restart the job to confirm" in d.matches[0].evidence[-1]


def test_a_decline_a_restart_does_not_reset_is_not_garbage_collection():
    first = generate("gc_decline")[:300]
    low_again = [Sample(300 + i, s.value * 0.75) for i, s in enumerate(generate("healthy")[:200])]
    d = diagnose(first + low_again, BASE, restarts=[300])
    assert d.verdict == UNKNOWN and "gc_decline" not in names(d)


def test_too_few_steps_are_not_judged():
    d = diagnose(generate("healthy")[:12], BASE)
    assert d.verdict == INSUFFICIENT and d.figures is None


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="step 3"):
        diagnose([Sample(i, float("nan") if i == 3 else 0.4) for i in range(30)], BASE)
    with pytest.raises(ValueError, match="expected"):
        diagnose(generate("healthy"), 0)


# -- readers ---------------------------------------------------------------------------------


def test_jsonl_with_mfu_and_with_tokens_and_time(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"step": i, "mfu": 0.4, "loss": 2.0}) + "\n" for i in range(5)))
    c = metrics.read(a)
    assert (
        c.unit == metrics.MFU and c.warmup == 0 and [s.step for s in c.samples] == [0, 1, 2, 3, 4]
    )
    b = tmp_path / "b.jsonl"
    b.write_text(
        "".join(
            json.dumps({"step": i, "time": 100 + 2 * i, "tokens": 1000}) + "\n" for i in range(4)
        )
    )
    c = metrics.read(b)
    assert c.unit == metrics.TOKENS_PER_S and [(s.step, s.value) for s in c.samples] == [
        (1, 500.0),
        (2, 500.0),
        (3, 500.0),
    ]


def test_csv_with_tokens_and_seconds(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("step,tokens,seconds\n0,1000,0.5\n1,1000,0.25\n")
    assert [s.value for s in metrics.read(f).samples] == [2000.0, 4000.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"step": 0, "mfu": 45}\n', "line 1: mfu 45.0 is not a fraction of peak"),
        ('{"step": 0, "mfu": 0.4}\n{"mfu": 0.4}\n', "line 2: no 'step'"),
        ('{"step": 0, "mfu": 0.4}\nnot json\n', "line 2: not JSON"),
        ('{"step": 0, "loss": 1}\n', "give 'mfu', or 'tokens' with 'seconds' or 'time'"),
        ("when,what\n1,2\n", "no 'step' column"),
        ("step,tokens,seconds\n0,100,0\n", "line 2: step 0 took 0.0 s"),
    ],
)
def test_bad_metrics_name_the_file_and_line(tmp_path, text, message):
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    with pytest.raises(metrics.MetricsError, match=message) as err:
        metrics.read(f)
    assert str(f) in str(err.value)


def test_smoke_log_skips_torchrun_lines_and_reads_every_step():
    c = metrics.read(X1 / "clean-smoke-1gpu.log")
    assert c.source == "smoke test log" and len(c.samples) == 300
    assert c.samples[1] == Sample(1, 0.45)


def test_baseline_from_a_load_report_needs_its_smoke_figures(tmp_path):
    assert metrics.baseline(X1 / "clean-load-report.json")[:2] == (0.4446, metrics.MFU)
    report = json.loads((X1 / "clean-load-report.json").read_text())
    del report["figures"]["smoke"]
    f = tmp_path / "no-smoke.json"
    f.write_text(json.dumps(report))
    with pytest.raises(metrics.MetricsError, match="without the smoke test's MFU"):
        metrics.baseline(f)


def test_every_evidence_kind_is_a_health_check_or_a_joined_source():
    from racksmith.health.checks import all_checks
    from racksmith.triage.causes import cause
    from racksmith.triage.diagnose.mfu import PATTERNS

    known = set(all_checks()) | {"history", "ufm"}
    for p in PATTERNS.values():
        assert set(p.look_at) <= known, p.name
        assert all(cause(c) for c in p.history_causes), p.name  # unknown names raise
        assert bool(p.look_at) == p.host_specific, p.name
