"""What to print while many BMCs are discovered, and when: the choice, not the printing.

:func:`racksmith.redfish.discover.discover` hands out :class:`DiscoveryProgress` snapshots
(every BMC that finishes, and at least once a second). :class:`DiscoveryPrinter` turns them
into lines: each failure at once, named, and the counts at a steady interval
(``discover: 212 answered, 3 failed, 185 pending, 0:00:12``) plus a last line when the counts
were shown before, so an operator can tell a slow rack from a hung one. The Ansible inventory
plugin and ``racksmith redfish discover`` only route the lines to stderr. Time is passed in,
so the choice is tested with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from racksmith.redfish.discover import DiscoveryProgress

#: Seconds between two counts lines.
DEFAULT_INTERVAL = 10.0


def counts_line(snapshot: DiscoveryProgress) -> str:
    """``discover: N answered, M failed, K pending, H:MM:SS``."""
    clock = timedelta(seconds=int(max(snapshot.elapsed, 0.0)))
    return (
        f"discover: {snapshot.answered} answered, {snapshot.failed} failed, "
        f"{snapshot.pending} pending, {clock}"
    )


@dataclass
class DiscoveryPrinter:
    """Counts every ``interval`` seconds from the first snapshot; failures at once. A run that
    ends before the first interval prints only its failures (the caller's summary covers it)."""

    interval: float = DEFAULT_INTERVAL
    _started: float | None = None
    _printed: float | None = None

    def __post_init__(self) -> None:
        if not self.interval > 0:  # NaN too
            raise ValueError(f"progress interval must be positive seconds, not {self.interval}")

    def feed(self, snapshot: DiscoveryProgress, now: float) -> list[str]:
        if self._started is None:
            self._started = now
        out = []
        for result in snapshot.new_failures:
            error = result.error
            why = f"{error.kind.value}: {error.reason}" if error else "no usable facts"
            out.append(f"discover: FAILED {result.name}: {why}")
        since = now - (self._printed if self._printed is not None else self._started)
        if snapshot.finished:
            if self._printed is not None:
                out.append(counts_line(snapshot))
        elif since >= self.interval:
            out.append(counts_line(snapshot))
            self._printed = now
        return out
