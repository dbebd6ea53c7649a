"""Read a training run's per-step MFU curve and name the field-known cause its shape points to.

Why: a slow run costs as much as a failed one, and the shape of per-step MFU says where to
look (issue 26): a level far below what the same hardware reached points at the fabric or at
GPUDirect; regular single-step dips are checkpoints; a decline that a restart resets is the
garbage collector; a curve that keeps falling to ~70% and coming back is a throttling GPU.

Pure: a sequence of :class:`Sample` and the expected value in, a :class:`Diagnosis` out. Every
pattern carries the figures it was matched on (levels, dip steps and period against the
checkpoint/eval intervals given, trend, noise), so a reader can check the call. A curve that
fits no pattern below is ``no known pattern`` with its figures, never the nearest guess; a
curve too short to judge is ``insufficient data``.

How the curve is read (thresholds are the named constants below):

1. segments: a step number that does not increase (the job resumed from a checkpoint) or a
   step given as a restart starts a new segment;
2. dips: a step below ``DIP_FACTOR`` of the rolling median around it (``WINDOW`` steps);
   the rest is the body;
3. level: the body's median over the expected value; top: its 90th percentile;
4. episodes: runs of at least ``EPISODE_MIN`` body steps between ``LOW_BAND`` of the top, each
   followed by a recovery to the top band (throttling comes and goes);
5. trend, per segment: the body's last tenth against its first tenth, and the rank correlation
   of value with step (a decline is steady, not a few low episodes);
6. noise: the spread of the body around its rolling median (relative standard deviation).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

#: A step below this share of its neighbourhood's median is a dip (a "10x dip" is far below).
DIP_FACTOR = 0.5
#: Steps in the rolling median that dips and noise are measured against.
WINDOW = 15
#: Fewer body steps than this: the curve is not judged.
MIN_STEPS = 20
#: Dips on more than this share of steps are not "rare" or "single-step" any more.
RARE_SHARE = 0.05
#: Dips repeat "regularly" when every gap is within this many steps of the median gap.
PERIOD_SLACK = 1
#: Regular dips need at least this many occurrences.
MIN_PERIODIC = 3
#: Throttling episodes: at least this many steps, each between these shares of the top level.
EPISODE_MIN = 3
LOW_BAND = (0.55, 0.85)
#: ...and at least this many episodes (the issue's "often").
MIN_EPISODES = 2
#: Decline: the last tenth of a segment at or below this share of its first tenth, with a rank
#: correlation of value against step at or below ``DECLINE_CORR``.
DECLINE_RATIO = 0.85
DECLINE_CORR = -0.6
#: A restart resets the decline when the next segment starts within this share of the first.
RESET_SHARE = 0.1
#: High-frequency noise: relative standard deviation around the rolling median.
NOISE = 0.04
#: Level bands, as shares of the expected value.
HEALTHY_LEVEL = 0.9
LEVEL_BANDS: tuple[tuple[str, float, float], ...] = (
    ("far_below", 0.0, 0.10),
    ("gpudirect", 0.20, 0.40),
    ("degraded_link", 0.60, 0.80),
)


@dataclass(frozen=True)
class Sample:
    """One training step: its number and its throughput (MFU as a fraction, or tokens/s)."""

    step: int
    value: float


@dataclass(frozen=True)
class Pattern:
    """A known shape: what it is, what causes it in the field, and which evidence about the
    run's hosts tells the causes apart (names of :mod:`racksmith.triage.diagnose.evidence`
    kinds)."""

    name: str
    title: str
    causes: tuple[str, ...]
    look_at: tuple[str, ...]  # evidence kinds: health checks by name, "history", ...
    host_specific: bool = True  # False: the job itself (checkpoints, GC), no host to blame
    #: triage causes (racksmith.triage.causes) of past failures that point the same way
    history_causes: tuple[str, ...] = ()


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern(
            "far_below",
            "steady below a tenth of expected from the start",
            (
                "an InfiniBand switch down at tier 2/3 (traffic squeezed through the rest)",
                "a GPU-to-NIC PCIe link limited (kernel log: 'x16 lanes limited by ...')",
            ),
            ("pcie", "kernel_log", "ib_ports", "ib_counters", "ufm", "history"),
            history_causes=("pcie_degraded", "health_links", "nic_missing"),
        ),
        Pattern(
            "gpudirect",
            "steady near 30% of expected",
            ("GPUDirect RDMA misconfigured on one host (nvidia-peermem, ACS, IOMMU)",),
            ("gdr", "pcie", "kernel_log", "history"),
            history_causes=("health_software", "pcie_degraded"),
        ),
        Pattern(
            "degraded_link",
            "steady at 60-80% of expected",
            (
                "a degraded or failed InfiniBand link (NCCL routes that GPU's traffic through "
                "another GPU's NIC over NVLink)",
                "CPU throttling (BIOS power profile, governor)",
            ),
            ("ib_ports", "ib_counters", "ufm", "cpu_governor", "history"),
            history_causes=("health_links", "firmware_drift"),
        ),
        Pattern(
            "checkpoint_eval",
            "regular single-step dips",
            ("checkpointing or evaluation at a fixed step interval",),
            (),
            host_specific=False,
        ),
        Pattern(
            "random_dips",
            "rare single-step dips that recover",
            (
                "a CPU-heavy process on one host",
                "an intermittent network problem",
                "the data loader",
            ),
            ("kernel_log", "ib_counters", "ufm", "history"),
            history_causes=("health_links", "health_software"),
        ),
        Pattern(
            "gc_decline",
            "slow decline that a restart resets",
            ("Python's automatic garbage collection (collect at fixed steps instead)",),
            (),
            host_specific=False,
        ),
        Pattern(
            "clock_throttle",
            "good, then often down to about 70%",
            ("GPU clock throttling: temperature, failing fans, power capping",),
            ("clock_events", "nvidia_smi", "history"),
            history_causes=("thermal", "psu_fault"),
        ),
        Pattern(
            "ib_flapping",
            "90-100% of expected with high-frequency noise",
            ("moderate upper-tier InfiniBand degradation, or a flapping link",),
            ("ib_ports", "ib_counters", "ufm", "history"),
            history_causes=("health_links",),
        ),
    )
}

HEALTHY = "healthy"
MATCHED = "pattern"
UNKNOWN = "no known pattern"
INSUFFICIENT = "insufficient data"


@dataclass(frozen=True)
class Match:
    pattern: Pattern
    evidence: tuple[str, ...]
    confirmed: bool = True  # False: the shape fits, a confirming sign was not in the curve

    def to_dict(self) -> dict:
        return {
            "pattern": self.pattern.name,
            "title": self.pattern.title,
            "causes": list(self.pattern.causes),
            "look_at": list(self.pattern.look_at),
            "host_specific": self.pattern.host_specific,
            "history_causes": list(self.pattern.history_causes),
            "confirmed": self.confirmed,
            "evidence": list(self.evidence),
        }


@dataclass(frozen=True)
class Figures:
    """What the curve measured: the evidence every verdict is built from."""

    steps: int
    segments: int
    expected: float
    level: float  # body median / expected
    median: float
    top: float  # body 90th percentile
    dips: tuple[int, ...]  # step numbers
    dip_period: int | None
    episodes: tuple[tuple[int, int], ...]  # (first step, last step) of each low episode
    trend: tuple[float, ...]  # per segment: last tenth / first tenth
    trend_corr: tuple[float, ...]  # per segment: rank correlation of value and step
    noise: float

    def to_dict(self) -> dict:
        return {
            "steps": self.steps,
            "segments": self.segments,
            "expected": self.expected,
            "level": round(self.level, 4),
            "median": round(self.median, 6),
            "top": round(self.top, 6),
            "dips": list(self.dips),
            "dip_period": self.dip_period,
            "episodes": [list(e) for e in self.episodes],
            "trend": [round(t, 4) for t in self.trend],
            "trend_corr": [round(c, 4) for c in self.trend_corr],
            "noise": round(self.noise, 4),
        }


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # HEALTHY, MATCHED, UNKNOWN or INSUFFICIENT
    matches: tuple[Match, ...]
    unexplained: tuple[str, ...]  # what the curve shows that no pattern explains
    figures: Figures | None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "patterns": [m.to_dict() for m in self.matches],
            "unexplained": list(self.unexplained),
            "figures": self.figures.to_dict() if self.figures else None,
            "notes": list(self.notes),
        }


# -- small statistics ---------------------------------------------------------------------


def _rolling_median(values: Sequence[float], window: int) -> list[float]:
    half = window // 2
    return [statistics.median(values[max(0, i - half) : i + half + 1]) for i in range(len(values))]


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    for rank, i in enumerate(order):
        ranks[i] = float(rank)
    return ranks


def _spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    if len(xs) < 3:
        return 0.0
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else 0.0


# -- the reading --------------------------------------------------------------------------


def segments(samples: Sequence[Sample], restarts: Sequence[int] = ()) -> list[list[Sample]]:
    """Split at every step number that does not increase (a resume) and at ``restarts``."""
    out: list[list[Sample]] = []
    marks = set(restarts)
    for s in samples:
        if not out or s.step <= out[-1][-1].step or s.step in marks:
            out.append([])
        out[-1].append(s)
    return out


def _dips(values: Sequence[float]) -> tuple[list[bool], list[float]]:
    med = _rolling_median(values, WINDOW)
    return [v < DIP_FACTOR * m for v, m in zip(values, med, strict=True)], med


def _period(steps: Sequence[int]) -> int | None:
    """The common gap of regularly spaced steps, or None."""
    if len(steps) < MIN_PERIODIC:
        return None
    gaps = [b - a for a, b in itertools.pairwise(steps)]
    gap = int(statistics.median(gaps))
    if gap > 1 and all(abs(g - gap) <= PERIOD_SLACK for g in gaps):
        return gap
    return None


def _episodes(seg_steps: Sequence[int], seg_values: Sequence[float], top: float):
    """Runs of >= EPISODE_MIN steps in the low band of ``top``; each must end in a recovery
    to above the band (or the segment's end) and start after a stretch at the top."""
    lo, hi = LOW_BAND[0] * top, LOW_BAND[1] * top
    found: list[tuple[int, int]] = []
    start = None
    for i, v in enumerate([*seg_values, math.inf]):
        if lo <= v < hi:
            if start is None:
                start = i
            continue
        if start is not None and i - start >= EPISODE_MIN and start > 0:
            found.append((seg_steps[start], seg_steps[i - 1]))
        start = None
    return found


def diagnose(
    samples: Sequence[Sample],
    expected: float,
    *,
    checkpoint_every: int | None = None,
    eval_every: int | None = None,
    restarts: Sequence[int] = (),
    unit: str = "mfu",
) -> Diagnosis:
    """Classify the curve ``samples`` (warm-up steps already left out) against ``expected``,
    the value a healthy run of this job on this hardware reaches (same unit as the samples)."""

    def _fmt(value: float) -> str:
        return f"{100 * value:.1f}% MFU" if unit == "mfu" else f"{value:,.0f} {unit}"

    if not (math.isfinite(expected) and expected > 0):
        raise ValueError(f"the expected value must be a positive number, got {expected}")
    bad = next((s for s in samples if not (math.isfinite(s.value) and s.value >= 0)), None)
    if bad is not None:
        raise ValueError(f"step {bad.step}: value {bad.value} is not a throughput")
    segs = segments(samples, restarts)
    all_dips: list[int] = []
    body_all: list[float] = []
    trends: list[float] = []
    corrs: list[float] = []
    seg_bodies: list[tuple[list[int], list[float]]] = []
    resid: list[float] = []
    for seg in segs:
        values = [s.value for s in seg]
        flags, med = _dips(values)
        all_dips += [s.step for s, f in zip(seg, flags, strict=True) if f]
        b_steps = [s.step for s, f in zip(seg, flags, strict=True) if not f]
        b_values = [s.value for s, f in zip(seg, flags, strict=True) if not f]
        body_all += b_values
        resid += [
            (v - m) / m for v, m, f in zip(values, med, flags, strict=True) if not f and m > 0
        ]
        seg_bodies.append((b_steps, b_values))
    if len(body_all) < MIN_STEPS:
        return Diagnosis(
            INSUFFICIENT,
            (),
            (),
            None,
            (f"{len(body_all)} steps to judge after dips and warm-up; {MIN_STEPS} needed",),
        )
    median = statistics.median(body_all)
    top = _percentile(body_all, 0.9)
    level = median / expected
    noise = statistics.pstdev(resid) if len(resid) > 1 else 0.0
    episodes: list[tuple[int, int]] = []
    for b_steps, b_values in seg_bodies:
        if len(b_values) >= 10:
            tenth = max(2, len(b_values) // 10)
            first = statistics.fmean(b_values[:tenth])
            last = statistics.fmean(b_values[-tenth:])
            trends.append(last / first if first else 1.0)
            corrs.append(_spearman(b_steps, b_values))
        episodes += _episodes(b_steps, b_values, top)
    if noise >= NOISE:
        # A throttled GPU holds its lower clock for a while, so its episodes are plateaus;
        # in a curve as noisy as a flapping link, runs of low steps are the noise itself.
        episodes = []
    period = _period(all_dips)
    figures = Figures(
        steps=len(samples),
        segments=len(segs),
        expected=expected,
        level=level,
        median=median,
        top=top,
        dips=tuple(all_dips),
        dip_period=period,
        episodes=tuple(episodes),
        trend=tuple(trends),
        trend_corr=tuple(corrs),
        noise=noise,
    )
    matches: list[Match] = []
    unexplained: list[str] = []
    notes: list[str] = []

    # Dips: regular (checkpoint/eval), rare and random, or too many to be either.
    dip_share = len(all_dips) / len(samples)
    if all_dips:
        matched, why = _dip_match(all_dips, period, checkpoint_every, eval_every)
        if matched:
            matches.append(Match(PATTERNS["checkpoint_eval"], why, confirmed=matched == "yes"))
        elif period is None and dip_share <= RARE_SHARE and _single(all_dips):
            matches.append(
                Match(
                    PATTERNS["random_dips"],
                    (
                        f"{len(all_dips)} dip(s) below {DIP_FACTOR:.0%} of the steps around "
                        f"them, at steps {_list(all_dips)}; no common period; each recovers on "
                        "the next step",
                    ),
                )
            )
        else:
            unexplained.append(
                why[0]
                if why
                else (
                    f"{len(all_dips)} dips ({dip_share:.0%} of steps) at {_list(all_dips)}: "
                    "neither rare single steps nor a regular period"
                )
            )

    # Decline that a restart resets (or a decline with no restart in the curve to show it).
    declining = [
        i
        for i, (t, c) in enumerate(zip(trends, corrs, strict=True))
        if t <= DECLINE_RATIO and c <= DECLINE_CORR
    ]
    if declining:
        starts = [statistics.fmean(b[: max(2, len(b) // 10)]) for _, b in seg_bodies if b]
        resets = [
            i
            for i in declining
            if i + 1 < len(starts) and abs(starts[i + 1] - starts[0]) <= RESET_SHARE * starts[0]
        ]
        ev = [
            f"segment {i + 1}: last tenth at {trends[i]:.0%} of its first tenth, rank "
            f"correlation with step {corrs[i]:.2f}"
            for i in declining
        ]
        if resets:
            ev.append(
                f"the restart after segment {resets[0] + 1} came back to "
                f"{starts[resets[0] + 1] / starts[0]:.0%} of the first segment's start"
            )
            matches.append(Match(PATTERNS["gc_decline"], tuple(ev)))
        elif len(segs) > 1 and declining[-1] + 1 < len(segs):
            unexplained.append("; ".join(ev) + "; a restart did not reset it")
        else:
            ev.append(
                "no restart in the curve: restart the job to confirm (the level "
                f"should return to {starts[declining[-1]] / expected:.0%} of expected)"
            )
            matches.append(Match(PATTERNS["gc_decline"], tuple(ev), confirmed=False))

    # Throttling: good, then often down to ~70% and back.
    if len(episodes) >= MIN_EPISODES and not declining:
        low = [
            v
            for b_steps, b_values in seg_bodies
            for s, v in zip(b_steps, b_values, strict=True)
            if any(a <= s <= z for a, z in episodes)
        ]
        low_share = statistics.median(low) / top
        spans = ", ".join(f"{a}-{z}" for a, z in episodes[:6]) + (
            ", ..." if len(episodes) > 6 else ""
        )
        if top / expected >= LOW_BAND[1]:
            matches.append(
                Match(
                    PATTERNS["clock_throttle"],
                    (
                        f"top level {top / expected:.0%} of expected; {len(episodes)} "
                        f"episodes at {low_share:.0%} of it (steps {spans}), each recovering",
                    ),
                )
            )
        else:
            unexplained.append(
                f"{len(episodes)} low episodes under a top level of only "
                f"{top / expected:.0%} of expected"
            )

    # Steady level (only when nothing above already explains where the level went).
    if not declining and len(episodes) < MIN_EPISODES:
        lvl = f"median {_fmt(median)} = {level:.0%} of expected {_fmt(expected)}"
        if level >= HEALTHY_LEVEL:
            if noise >= NOISE:
                matches.append(
                    Match(
                        PATTERNS["ib_flapping"],
                        (
                            f"{lvl}; step-to-step noise {noise:.1%} around the rolling median "
                            f"(threshold {NOISE:.0%})",
                        ),
                    )
                )
        else:
            band = next((n for n, lo, hi in LEVEL_BANDS if lo <= level <= hi), None)
            if band == "far_below":
                head = [v for v in seg_bodies[0][1][: max(5, len(seg_bodies[0][1]) // 10)]]
                if statistics.median(head) / expected <= LEVEL_BANDS[0][2]:
                    matches.append(Match(PATTERNS[band], (f"{lvl}, from the first steps",)))
                else:
                    unexplained.append(f"{lvl}, but not from the start")
            elif band:
                matches.append(Match(PATTERNS[band], (f"{lvl}; noise {noise:.1%}",)))
            else:
                unexplained.append(f"{lvl}: between the known bands")
        if level > 1.2:
            notes.append(
                f"the curve runs at {level:.0%} of expected: is the expectation "
                "from the same job and hardware?"
            )

    if unexplained:
        verdict = UNKNOWN
    elif matches:
        verdict = MATCHED
    else:
        verdict = HEALTHY
        notes.append(
            f"median {_fmt(median)} = {level:.0%} of expected, noise {noise:.1%}, "
            "no dips, no decline, no throttling episodes"
        )
    return Diagnosis(verdict, tuple(matches), tuple(unexplained), figures, tuple(notes))


def _single(dips: Sequence[int]) -> bool:
    """No two dips on consecutive steps (each recovers at once)."""
    return all(b - a > 1 for a, b in itertools.pairwise(dips))


def _dip_match(
    dips: Sequence[int], period: int | None, checkpoint: int | None, evaluation: int | None
) -> tuple[str, tuple[str, ...]]:
    """("yes"|"unconfirmed"|"", evidence): do the dips fall on checkpoint/eval steps?"""
    given = {n: k for n, k in (("checkpoint", checkpoint), ("eval", evaluation)) if k}
    on = {n: [d for d in dips if d % k == 0 or (d + 1) % k == 0] for n, k in given.items()}
    explained = {d for hits in on.values() for d in hits}
    if given:
        parts = [
            f"{len(on[n])}/{len(dips)} at multiples of --{n}-every {k}" for n, k in given.items()
        ]
        if len(explained) == len(dips) and len(dips) >= MIN_PERIODIC:
            return "yes", (
                f"{len(dips)} single-step dips at steps {_list(dips)}; " + ", ".join(parts),
            )
        if period:
            return "", (
                f"dips every {period} steps (at {_list(dips)}), but "
                + ", ".join(parts)
                + ": not the checkpoint/eval steps given",
            )
        return "", ()
    if period:
        return "unconfirmed", (
            f"{len(dips)} single-step dips every {period} steps (at {_list(dips)}); give "
            "--checkpoint-every/--eval-every to check them against the job's intervals",
        )
    return "", ()


def _list(steps: Sequence[int], most: int = 8) -> str:
    shown = ", ".join(str(s) for s in steps[:most])
    return shown + (f", ... ({len(steps)} in all)" if len(steps) > most else "")
