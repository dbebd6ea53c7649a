"""Time, as the waits see it, and the request-rate bound that keeps polling polite.

Waits are written in MAAS time (poll every 10-15 s, give deploying 60 minutes). The lab's
simulator runs that time faster, so tests and the benchmark hand the client a
:class:`ScaledClock` with the same factor: the code path is the production one, only the
seconds are shorter. Wall time (OAuth timestamps, ``Date`` skew) is never scaled.
"""

from __future__ import annotations

import threading
import time


class Clock:
    """Real time. ``monotonic``/``sleep`` measure waits; ``wall`` signs requests."""

    scale = 1.0

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wall(self) -> float:
        return time.time()


class ScaledClock(Clock):
    """Time running ``scale`` times faster than real time (a simulator's accelerated clock)."""

    def __init__(self, scale: float):
        if scale <= 0:
            raise ValueError("clock scale must be positive")
        self.scale = float(scale)
        self._origin = time.monotonic()

    def monotonic(self) -> float:
        return (time.monotonic() - self._origin) * self.scale

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds / self.scale)


class RateLimiter:
    """A token bucket shared by every client of one process: at most ``rate`` requests/s.

    Bounds the load a fleet of concurrent waits puts on the region controller; the bucket is
    in real seconds because the server's capacity is.
    """

    def __init__(self, rate: float, burst: int | None = None):
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(rate)
        self.capacity = float(burst or max(1, int(rate)))
        self._tokens = self.capacity
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
                self._stamp = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.rate
            time.sleep(wait)
