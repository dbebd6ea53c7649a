"""The simulator's accelerated clock: MAAS durations (minutes) pass ``speed`` times faster.

Only durations are accelerated. Wall time (OAuth timestamps, the ``Date`` header, event
timestamps) stays real, shifted by ``skew`` when a test wants the server's clock to differ
from the client's.
"""

from __future__ import annotations

import time


class SimClock:
    def __init__(self, speed: float = 60.0, start: float = 0.0):
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = float(speed)
        self._start = float(start)
        self._origin = time.monotonic()
        self.skew = 0.0

    def now(self) -> float:
        """Simulated seconds; continues from ``start`` (persisted across restarts)."""
        return self._start + (time.monotonic() - self._origin) * self.speed

    def wall(self) -> float:
        return time.time() + self.skew

    def real_seconds(self, sim_seconds: float) -> float:
        return sim_seconds / self.speed
