"""Small outputs: ``zpool status``, ``nvidia-smi -L`` (inside a container), ``systemctl
is-active``, and the kernel's clock-discipline state."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError


@dataclass(frozen=True)
class Vdev:
    name: str
    state: str
    read: str
    write: str
    cksum: str

    @property
    def errors(self) -> bool:
        return any(v != "0" for v in (self.read, self.write, self.cksum))


@dataclass(frozen=True)
class Pool:
    name: str
    state: str
    vdevs: tuple[Vdev, ...]  # the pool's own row first


def zpool_status(text: str) -> list[Pool]:
    """``zpool status -P [POOL...]``. Error counts stay strings (``0``, ``12``, ``1.2K``)."""
    pools: list[Pool] = []
    name = state = ""
    rows: list[Vdev] = []
    in_config = False

    def close() -> None:
        if name:
            pools.append(Pool(name, state, tuple(rows)))

    for line in text.splitlines():
        stripped = line.strip()
        if match := re.match(r"pool:\s*(\S+)", stripped):
            close()
            name, state, rows, in_config = match.group(1), "", [], False
        elif match := re.match(r"state:\s*(\S+)", stripped):
            state = match.group(1)
        elif stripped.startswith("config:"):
            in_config = True
        elif stripped.startswith("errors:"):
            in_config = False
        elif in_config and stripped and not stripped.startswith("NAME"):
            parts = stripped.split()
            if len(parts) >= 5 and parts[0] not in ("logs", "cache", "spares", "special"):
                rows.append(Vdev(*parts[:5]))
            elif len(parts) >= 2 and parts[0] not in ("logs", "cache", "spares", "special"):
                rows.append(Vdev(parts[0], parts[1], "0", "0", "0"))  # e.g. AVAIL spares
    close()
    if not pools and text.strip():
        raise ParseError("no 'pool:' section found")
    return pools


_GPU_LINE = re.compile(r"^GPU \d+: .+ \(UUID: GPU-[0-9a-f-]+\)\s*$")


def gpu_list(text: str) -> int:
    """``nvidia-smi -L``: the number of GPUs listed."""
    return sum(1 for line in text.splitlines() if _GPU_LINE.match(line.strip()))


@dataclass(frozen=True)
class ClockState:
    """What ``adjtimex(2)`` says about the kernel clock's discipline (read by host.py)."""

    state: int  # TIME_OK=0 ... TIME_ERROR=5 ("clock not synchronized")
    status: int  # STA_* bits; STA_UNSYNC = 0x40
    maxerror_us: int
    esterror_us: int

    STA_UNSYNC = 0x40
    TIME_ERROR = 5

    @property
    def synchronized(self) -> bool:
        return self.state != self.TIME_ERROR and not self.status & self.STA_UNSYNC
