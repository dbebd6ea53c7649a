"""One fleet-wide pace for power actions: every power-on, reboot and AC cycle racksmith sends.

Why: users' mass reboots of GPU boxes flooded the fabric manager with state updates, and a rack
powering on at once loads the BMC network and the PDUs. So every power action the project sends
(``redfish_power``, the CLI's ``power``, the BIOS and firmware modules' reboots, the MAAS phases'
power actions) first takes a *slot* here: slots are ``60 / per_minute`` seconds apart, for the
whole controller, across processes (Ansible runs each module in its own process, many forks at
once), so a rack restart is spread out instead of arriving in one burst.

How: a small state file holds the last slot handed out; taking a slot is a read-modify-write
under ``flock``; the wait for the slot happens after the lock is released. The setting is one
number, ``RACKSMITH_POWER_ACTIONS_PER_MINUTE`` (default :data:`DEFAULT_PER_MINUTE`; ``0`` turns
pacing off), and the state file is ``RACKSMITH_POWER_PACING_FILE`` (default: a file per user
under the system's temporary directory). A wait that would outlast the caller's deadline is
refused before it starts, with the reason, rather than sending the action late.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: Power actions per minute, fleet-wide, unless the site sets another pace: one every 3 s, so
#: a 32-host rack restarts within ~1.6 minutes instead of in one burst.
DEFAULT_PER_MINUTE = 20.0
ENV_RATE = "RACKSMITH_POWER_ACTIONS_PER_MINUTE"
ENV_FILE = "RACKSMITH_POWER_PACING_FILE"


class PacingError(ValueError):
    """The pacing setting is wrong (the message names it)."""


class PacingTimeout(PacingError):
    """The wait for a slot would outlast the caller's deadline; nothing was sent."""


@dataclass(frozen=True)
class Pace:
    per_minute: float  # 0: no pacing
    state_file: Path

    @property
    def interval(self) -> float:
        return 60.0 / self.per_minute if self.per_minute > 0 else 0.0


def rate_from(text: str | float | None) -> float:
    """Actions per minute from a setting (text from the environment or a number); clear errors."""
    if text is None or text == "":
        return DEFAULT_PER_MINUTE
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise PacingError(
            f"{ENV_RATE}={text!r}: give power actions per minute (a number, 0 = no pacing)"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise PacingError(f"{ENV_RATE}={text!r}: must be a finite number >= 0 (0 = no pacing)")
    return value


def default_state_file() -> Path:
    return Path(tempfile.gettempdir()) / f"racksmith-power-pacing-{os.getuid()}"


def from_environment(per_minute: float | str | None = None) -> Pace:
    """The fleet's pace: ``per_minute`` when given (a module option), else the environment."""
    rate = rate_from(per_minute if per_minute is not None else os.environ.get(ENV_RATE))
    path = os.environ.get(ENV_FILE) or str(default_state_file())
    return Pace(rate, Path(path))


def take_slot(
    pace: Pace,
    *,
    now: Callable[[], float] = time.time,
    budget: float | None = None,
    what: str = "power action",
) -> float:
    """Reserve the next slot (a wall-clock time) and return it; never waits for the slot.

    With ``budget`` (seconds the caller has left), a slot further away than that is refused
    (:class:`PacingTimeout`) *without* being reserved: an action that will not be sent must not
    push every later action of the fleet back by one interval."""
    if pace.per_minute <= 0:
        return now()
    pace.state_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(pace.state_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 64).decode("ascii", "replace").strip()
        try:
            last = float(raw)
        except ValueError:
            last = 0.0  # empty or damaged: start afresh
        current = now()
        if not math.isfinite(last) or last > current + 86400:
            last = 0.0  # a clock jump backwards must not stall the fleet for a day
        slot = max(current, last + pace.interval)
        delay = slot - current
        if budget is not None and delay > budget:
            raise PacingTimeout(
                f"{what}: the fleet's power pacing ({pace.per_minute:g}/min) would hold it "
                f"{delay:.0f}s, longer than the {budget:.0f}s left; not sent"
            )
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{slot:.6f}\n".encode())
        return slot
    finally:
        os.close(fd)  # releases the lock


def wait_turn(
    pace: Pace,
    what: str,
    *,
    budget: float | None = None,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Wait for this action's slot; returns the seconds waited. ``budget`` (seconds the caller
    has left) refuses a wait that would outlast it, before it starts and without taking the
    slot: the action is not sent late, and later actions are not held back for it."""
    slot = take_slot(pace, now=now, budget=budget, what=what)
    delay = max(0.0, slot - now())
    if delay > 0:
        sleep(delay)
    return delay
