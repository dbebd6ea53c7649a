"""Find the bad hosts of a multi-node job that fails, in few runs of the job.

Arrange the suspects as a matrix and run every row and every column as its own job, all in
one round (the rows and the columns in parallel). A good host in a passing row or column is
cleared; a bad host sits where a failing row crosses a failing column. With one bad host among
48 (6 rows of 8, 8 columns of 6) a single round of 14 runs leaves one suspect; with k bad
hosts at most k*k. Suspects are rearranged and tested again until testing them one by one
(each beside cleared hosts, so the job stays multi-node) is cheaper than another matrix round;
a host is blamed only when its own job fails ``confirm`` times in a row, so a flaky job that
fails now and then for no host's fault blames nobody. Last, the job runs on every host not
blamed; if that still fails the search starts again on them (a bad host that passed once).

Deterministic: the same hosts, groupings and job results give the same plan and the same
blame (later rounds shuffle with a seed derived from the round number, not from the clock).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

#: Runs a batch of jobs (in parallel where it can); one bool per group, True = the job passed.
BatchRunner = Callable[[list[tuple[str, ...]]], list[bool]]

_SPEC = re.compile(r"^\s*(\d+)\s*x\s*(\d+)\s*$")


@dataclass(frozen=True)
class Grouping:
    """``count`` groups of at most ``size`` hosts (``6x8``: six groups of eight)."""

    count: int
    size: int

    def __str__(self) -> str:
        return f"{self.count}x{self.size}"


def parse_groups(spec: str, hosts: int) -> tuple[Grouping, Grouping]:
    """``"6x8,8x6"`` -> the two groupings of the first round, checked against ``hosts``."""
    parts = [p for p in spec.split(",") if p.strip()]
    if len(parts) != 2:
        raise ValueError(f"--groups {spec!r}: give two groupings, e.g. 6x8,8x6")
    groupings = []
    for part in parts:
        m = _SPEC.match(part)
        if not m or int(m[1]) < 1 or int(m[2]) < 1:
            raise ValueError(f"--groups {spec!r}: {part.strip()!r} is not COUNTxSIZE")
        g = Grouping(int(m[1]), int(m[2]))
        if g.count * g.size < hosts:
            raise ValueError(f"--groups {spec!r}: {g} holds {g.count * g.size} hosts, "
                             f"fewer than the {hosts} given")
        groupings.append(g)
    first, second = groupings
    if second.count < first.size:
        raise ValueError(
            f"--groups {spec!r}: the second grouping needs at least {first.size} groups "
            f"(the first one's group size), or two hosts could share both of their groups"
        )
    return first, second


def auto_groups(hosts: int) -> tuple[Grouping, Grouping]:
    """A near-square matrix: rows of ``size`` hosts, and as many columns as a row is long."""
    size = max(1, math.ceil(math.sqrt(hosts)))
    rows = math.ceil(hosts / size)
    return Grouping(rows, size), Grouping(size, math.ceil(hosts / size))


def matrix(hosts: Sequence[str], first: Grouping, second: Grouping):
    """Rows (host i in row i // size) and columns (host i in column i % count)."""
    rows = [tuple(hosts[i : i + first.size]) for i in range(0, len(hosts), first.size)]
    cols = [tuple(hosts[c :: second.count]) for c in range(min(second.count, len(hosts)))]
    return rows, cols


@dataclass
class Round:
    number: int
    kind: str  # "matrix", "single", "confirm" or "check"
    groups: list[tuple[str, ...]]
    passed: list[bool] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict:
        return {
            "round": self.number,
            "kind": self.kind,
            "groups": [list(g) for g in self.groups],
            "passed": list(self.passed),
            "note": self.note,
        }


@dataclass
class Outcome:
    blamed: list[str]
    rounds: int
    runs: int
    unresolved: list[str]
    log: list[Round]

    def to_dict(self) -> dict:
        return {
            "blamed": self.blamed,
            "rounds": self.rounds,
            "runs": self.runs,
            "unresolved": self.unresolved,
        }


@dataclass
class _Search:
    hosts: list[str]
    run_batch: BatchRunner
    confirm: int
    min_size: int
    max_rounds: int
    on_round: Callable[[Round], None] | None
    log: list[Round] = field(default_factory=list)
    runs: int = 0
    cleared: list[str] = field(default_factory=list)

    def batch(self, kind: str, groups: list[tuple[str, ...]], note: str = "") -> list[bool]:
        rnd = Round(len(self.log) + 1, kind, groups, note=note)
        passed = list(self.run_batch(groups))
        if len(passed) != len(groups):
            raise RuntimeError(f"the runner gave {len(passed)} results for {len(groups)} jobs")
        rnd.passed = passed
        self.runs += len(groups)
        self.log.append(rnd)
        if self.on_round:
            self.on_round(rnd)
        return passed

    def budget_left(self) -> bool:
        return len(self.log) < self.max_rounds

    def clear(self, hosts) -> None:
        for h in hosts:
            if h not in self.cleared:
                self.cleared.append(h)

    def padded(self, group: tuple[str, ...]) -> tuple[str, ...]:
        """Grow a small group with cleared hosts, in host order, up to ``min_size``."""
        pad = [h for h in self.hosts if h in self.cleared and h not in group]
        return group + tuple(pad[: max(0, self.min_size - len(group))])

    def matrix_round(self, suspects: list[str], grouping) -> list[str]:
        rows, cols = matrix(suspects, *grouping)
        passed = self.batch("matrix", [self.padded(g) for g in rows + cols],
                            note=f"{len(suspects)} suspects as {grouping[0]} and {grouping[1]}")
        row_ok, col_ok = passed[: len(rows)], passed[len(rows) :]
        for group, ok in zip(rows + cols, passed, strict=True):
            if ok:
                self.clear(group)
        bad_rows = {h for g, ok in zip(rows, row_ok, strict=True) if not ok for h in g}
        bad_cols = {h for g, ok in zip(cols, col_ok, strict=True) if not ok for h in g}
        return [h for h in suspects if h in bad_rows and h in bad_cols]

    def single_round(self, suspects: list[str]) -> list[str]:
        """Each suspect in its own job; blamed only if that job fails ``confirm`` times."""
        failing = suspects
        for attempt in range(self.confirm):
            if not failing or not self.budget_left():
                break
            kind = "single" if attempt == 0 else "confirm"
            passed = self.batch(kind, [self.padded((h,)) for h in failing],
                                note=f"run {attempt + 1} of {self.confirm}")
            self.clear(h for h, ok in zip(failing, passed, strict=True) if ok)
            failing = [h for h, ok in zip(failing, passed, strict=True) if not ok]
        return failing

    def still_failing(self, hosts: list[str]) -> bool:
        """The job on ``hosts``: failed only if it fails ``confirm`` times in a row."""
        for attempt in range(self.confirm):
            if not self.budget_left():
                return True
            if self.batch("check", [tuple(hosts)], note=f"every host not blamed, run "
                          f"{attempt + 1} of {self.confirm}")[0]:
                return False
        return True


def plan(hosts: Sequence[str], groups: tuple[Grouping, Grouping] | None = None) -> dict:
    """What the first round will run, and the bounds to expect (for ``--dry-run``)."""
    first, second = groups or auto_groups(len(hosts))
    rows, cols = matrix(list(hosts), first, second)
    return {
        "hosts": len(hosts),
        "groupings": [str(first), str(second)],
        "first_round": {"rows": [list(r) for r in rows], "columns": [list(c) for c in cols]},
        "first_round_runs": len(rows) + len(cols),
        "one_at_a_time_runs": len(hosts),
    }


def bisect(
    hosts: Sequence[str],
    run_batch: BatchRunner,
    *,
    groups: tuple[Grouping, Grouping] | None = None,
    confirm: int = 3,
    min_size: int = 2,
    max_rounds: int = 30,
    on_round: Callable[[Round], None] | None = None,
) -> Outcome:
    """Blame the hosts on which the job fails. ``run_batch`` runs a list of host groups."""
    if len(set(hosts)) != len(hosts):
        raise ValueError("a host is listed twice")
    if not hosts:
        raise ValueError("no hosts to bisect")
    if confirm < 1 or min_size < 1 or max_rounds < 1:
        raise ValueError("confirm, min_size and max_rounds must be at least 1")
    search = _Search(list(hosts), run_batch, confirm, min_size, max_rounds, on_round)
    blamed: list[str] = []
    suspects = list(hosts)
    grouping = groups
    attempt = 0
    while suspects and search.budget_left():
        auto = auto_groups(len(suspects))
        if grouping is None and len(suspects) <= auto[0].count + auto[1].count:
            blamed += search.single_round(suspects)
            suspects = []
        else:
            if attempt:  # a new arrangement, so two bad hosts do not share a row again
                suspects = sorted(suspects)
                random.Random(attempt).shuffle(suspects)  # noqa: S311 - reproducible, not secret
            narrowed = search.matrix_round(suspects, grouping or auto)
            grouping = None
            attempt += 1
            if len(narrowed) == len(suspects):  # no progress: test them one by one
                blamed += search.single_round(narrowed)
                narrowed = []
            suspects = narrowed
        if not suspects and search.budget_left():
            rest = [h for h in hosts if h not in blamed]
            if rest and search.still_failing(rest):
                search.cleared = []  # something passed that should not have: start again
                suspects = rest
                attempt += 1
    unresolved = suspects if suspects else []
    return Outcome(
        blamed=[h for h in hosts if h in blamed],
        rounds=len(search.log),
        runs=search.runs,
        unresolved=unresolved,
        log=search.log,
    )
