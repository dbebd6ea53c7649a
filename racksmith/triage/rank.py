"""Rank the golden set by health history, and pick the hosts for a training run.

Hosts that fail repeatedly, and in different ways, sink: a host that lost a GPU once and was
reseated is a better bet than one that has failed deploy, then thermals, then Xid errors.
With ~3% of a fleet failing each week, most hosts have clean histories, so the ranking
mostly decides which hosts go to the spare margin and which ones stay off a run.

Penalty of a host (lower ranks first)::

    weighted failures = sum over its failed runs of 0.5 ** (age / half_life)
    penalty           = weighted failures * (1 + 0.5 * (distinct causes - 1))

Ages count back from the newest run in the history (not the wall clock), so a ranking is a
pure function of the history: the same file always gives the same order. Ties break on more
passed runs, then the name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from racksmith.triage.history import HostRun, RunRecord, runs_by_host

HALF_LIFE_DAYS = 30.0
DISTINCT_CAUSE_WEIGHT = 0.5


@dataclass(frozen=True)
class Standing:
    host: str
    penalty: float
    failures: int
    causes: tuple[str, ...]  # distinct, in the order first seen
    passes: int
    last_failure: str | None

    def to_dict(self) -> dict:
        return {
            "host": self.host,
            "penalty": round(self.penalty, 4),
            "failures": self.failures,
            "causes": list(self.causes),
            "passes": self.passes,
            "last_failure": self.last_failure,
        }


@dataclass(frozen=True)
class Pick:
    hosts: tuple[str, ...]
    spares: tuple[str, ...]
    wanted: int
    spares_wanted: int

    @property
    def short(self) -> int:
        return max(0, self.wanted - len(self.hosts))

    def to_dict(self) -> dict:
        return {
            "hosts": list(self.hosts),
            "spares": list(self.spares),
            "wanted": self.wanted,
            "spares_wanted": self.spares_wanted,
            "short": self.short,
            "spares_short": max(0, self.spares_wanted - len(self.spares)),
        }


def _time(stamp: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def standing(
    host: str,
    runs: Sequence[tuple[str, HostRun]],
    now: datetime | None,
    half_life_days: float = HALF_LIFE_DAYS,
) -> Standing:
    weighted = 0.0
    failures = passes = 0
    causes: list[str] = []
    last_failure = None
    for finished, run in runs:
        if run.passed:
            passes += 1
            continue
        if run.result == "INCOMPLETE":
            continue
        failures += 1
        last_failure = finished
        cause = run.cause or run.result
        if cause not in causes:
            causes.append(cause)
        when = _time(finished)
        age_days = (now - when).total_seconds() / 86400 if now and when else 0.0
        weighted += math.pow(0.5, max(0.0, age_days) / half_life_days)
    penalty = weighted * (1 + DISTINCT_CAUSE_WEIGHT * max(0, len(causes) - 1))
    return Standing(host, penalty, failures, tuple(causes), passes, last_failure)


def fleet_golden(history: Sequence[RunRecord]) -> list[str]:
    """Hosts whose latest recorded run left them golden: the site's golden set when runs
    cover parts of it (``reprovision.yml -l HOST`` runs one host)."""
    return sorted(h for h, runs in runs_by_host(history).items() if runs[-1][1].passed)


def rank(
    golden: Iterable[str],
    history: Sequence[RunRecord],
    half_life_days: float = HALF_LIFE_DAYS,
) -> list[Standing]:
    """The golden hosts, best first."""
    if half_life_days <= 0:
        raise ValueError("the half-life must be positive")
    by_host: Mapping[str, list[tuple[str, HostRun]]] = runs_by_host(history)
    stamps = [t for t in (_time(r.finished) for r in history) if t]
    now = max(stamps) if stamps else None
    standings = [
        standing(h, by_host.get(h, []), now, half_life_days) for h in sorted(set(golden))
    ]
    return sorted(standings, key=lambda s: (s.penalty, -s.passes, s.host))


def pick(ranked: Sequence[Standing], count: int, spare: float) -> Pick:
    """The best ``count`` hosts for the job and ``ceil(count * spare)`` spares after them."""
    if count < 1:
        raise ValueError(f"the number of hosts must be at least 1, got {count}")
    if not 0 <= spare <= 1:
        raise ValueError(f"the spare margin must be between 0 and 1, got {spare}")
    spares_wanted = math.ceil(count * spare - 1e-9)
    names = [s.host for s in ranked]
    return Pick(
        hosts=tuple(names[:count]),
        spares=tuple(names[count : count + spares_wanted]),
        wanted=count,
        spares_wanted=spares_wanted,
    )
