"""Everything the checks read from the machine, in one place: commands (cached, so checks
that share ``nvidia-smi -q -x`` cause one call), sysfs and procfs files, ``statvfs`` and the
kernel's clock state. Tests and the lab stand-in point ``sysfs``/``procfs`` at replayed trees
and put replaying tools first on PATH; the checks cannot tell, but the report can: each source
is recorded with the path it was read from, and ``standin()`` finds the stand-in's marker.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import commands
from .parsers.misc import ClockState

#: Name of the marker file the lab stand-in writes at the root of its replay tree.
STANDIN_MARKER = "RACKSMITH_STANDIN"
#: Commands are stopped this long before the run's deadline, so that the check that ran one
#: reports "timed out" itself rather than the runner reporting "did not finish".
DEADLINE_MARGIN_S = 0.5


class Host:
    def __init__(
        self,
        *,
        sysfs: str | os.PathLike = "/sys",
        procfs: str | os.PathLike = "/proc",
        env: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> None:
        self.sysfs = Path(sysfs)
        self.procfs = Path(procfs)
        self.env = dict(env) if env is not None else dict(os.environ)
        self.deadline = deadline  # time.monotonic() value; command timeouts never pass it
        self._cache: dict[tuple[str, ...], commands.CommandResult] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    # -- commands ---------------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout_s: float) -> commands.CommandResult:
        """Run once per distinct argv for the life of this Host; concurrent callers wait for
        the first. The timeout is cut to what is left of the deadline."""
        key = tuple(argv)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._cache:
                if self.deadline is not None:  # end early enough to report why
                    left = self.deadline - time.monotonic() - DEADLINE_MARGIN_S
                    timeout_s = max(0.05, min(timeout_s, left))
                self._cache[key] = commands.run(key, timeout_s, env=self.env)
            return self._cache[key]

    # -- files --------------------------------------------------------------------------------
    def sys(self, relative: str) -> Path:
        return self.sysfs / relative

    def proc(self, relative: str) -> Path:
        return self.procfs / relative

    @staticmethod
    def read(path: Path) -> str:
        return path.read_text(errors="replace")

    def read_attrs(self, directory: Path, names: Sequence[str]) -> dict[str, str]:
        """The named files of a sysfs directory that exist and can be read."""
        out = {}
        for name in names:
            try:
                out[name] = (directory / name).read_text(errors="replace").strip()
            except OSError:
                continue
        return out

    @staticmethod
    def statvfs(path: str) -> os.statvfs_result:
        return os.statvfs(path)

    # -- kernel clock -------------------------------------------------------------------------
    @staticmethod
    def clock_state() -> ClockState:
        """adjtimex(2) in read-only mode (modes = 0): the kernel's own view of whether NTP/PTP
        disciplines the clock. Works with chrony, ntpd or timesyncd, and needs no daemon CLI."""
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        buf = _Timex()
        state = libc.adjtimex(ctypes.byref(buf))
        if state < 0:
            raise OSError(ctypes.get_errno(), "adjtimex failed")
        return ClockState(state, buf.status, buf.maxerror, buf.esterror)

    # -- provenance ---------------------------------------------------------------------------
    def standin(self) -> str:
        """The stand-in marker's text when any tool we ran, or the sysfs tree, belongs to the
        lab stand-in; empty on a real host."""
        candidates = [self.sysfs.parent / STANDIN_MARKER, self.sysfs / STANDIN_MARKER]
        for result in list(self._cache.values()):
            if result.path:
                candidates.append(Path(result.path).resolve().parent.parent / STANDIN_MARKER)
        for marker in candidates:
            try:
                return marker.read_text().strip() or "lab stand-in (no description)"
            except OSError:
                continue
        return ""


class _Timex(ctypes.Structure):
    """struct timex from <sys/timex.h> (x86-64 and aarch64 layout: longs and ints, padded)."""

    _fields_ = (
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long),
        ("time_usec", ctypes.c_long),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("_reserved", ctypes.c_int * 11),
    )
