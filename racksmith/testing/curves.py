"""Generated per-step MFU curves, one per shape of issue 26, for the MFU classifier's tests
and docs.

Written from the issue's description of each shape (field experience, not recorded runs):
the healthy base is the real H200 smoke test's level and noise (about 45% MFU, step-to-step
relative spread about 1.3%: tests/fixtures/h200-x2-run/smoke-1gpu.json), and each pattern
changes it the way the issue says. Seeded: the same name and seed give the same curve.
"""

from __future__ import annotations

import random

from racksmith.triage.diagnose.mfu import Sample

#: The healthy H200 smoke test's median MFU and relative noise (measured, see above).
BASE = 0.445
NOISE = 0.013

#: name -> one-line description of what the generator does
SHAPES = {
    "healthy": "the healthy base: 45% MFU with 1.3% noise",
    "far_below": "steady at 6% of the base from the first step",
    "gpudirect": "steady at 30% of the base",
    "degraded_link": "steady at 70% of the base",
    "checkpoint_eval": "healthy, with a 10x single-step dip every 100 steps (checkpoints)",
    "random_dips": "healthy, with 4 single-step 10x dips at irregular steps",
    "gc_decline": "falls from 100% to 75% over 300 steps; a restart (resume from step 250) "
    "resets it",
    "clock_throttle": "healthy, then 5 episodes of 8-20 steps at 70%",
    "ib_flapping": "95% of the base with 8% step-to-step noise",
}


def generate(name: str, steps: int = 600, seed: int = 0, base: float = BASE) -> list[Sample]:
    """The curve ``name`` (one of :data:`SHAPES`), ``steps`` steps from step 0."""
    if name not in SHAPES:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(SHAPES)}")
    rng = random.Random(f"{name}-{seed}")  # noqa: S311 (test data, not secrets)

    def noisy(level: float, noise: float = NOISE) -> float:
        return max(0.0, level * (1 + rng.gauss(0, noise)))

    if name == "gc_decline":
        first = [Sample(s, noisy(base * (1 - 0.25 * s / 300))) for s in range(300)]
        resumed = [
            Sample(s, noisy(base * (1 - 0.25 * (s - 250) / 300)))
            for s in range(250, 250 + steps - 300)
        ]
        return first + resumed
    level = {"far_below": 0.06, "gpudirect": 0.30, "degraded_link": 0.70, "ib_flapping": 0.95}.get(
        name, 1.0
    )
    noise = 0.08 if name == "ib_flapping" else NOISE
    out = [Sample(s, noisy(base * level, noise)) for s in range(steps)]
    if name == "checkpoint_eval":
        out = [Sample(s.step, s.value / 10) if s.step and s.step % 100 == 0 else s for s in out]
    elif name == "random_dips":
        hit = {20 + 10 * k for k in rng.sample(range((steps - 30) // 10), 4)}  # apart
        out = [Sample(s.step, s.value / 10) if s.step in hit else s for s in out]
    elif name == "clock_throttle":
        start = 60
        for _ in range(5):
            length = rng.randint(8, 20)
            for i in range(start, min(steps, start + length)):
                out[i] = Sample(i, noisy(base * 0.7))
            start += length + rng.randint(40, 80)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m racksmith.testing.curves SHAPE [SEED]``: the curve as JSON lines on stdout
    (the format ``racksmith diagnose mfu`` reads), to reproduce the docs' examples."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in SHAPES:
        print(
            f"usage: python -m racksmith.testing.curves {{{','.join(SHAPES)}}} [SEED]",
            file=sys.stderr,
        )
        return 2
    for s in generate(args[0], seed=int(args[1]) if len(args) > 1 else 0):
        print(json.dumps({"step": s.step, "mfu": round(s.value, 5)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
