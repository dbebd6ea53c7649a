"""``nvidia-smi nvlink -s`` (link state and speed) and ``nvidia-smi nvlink -e`` (error
counters), per GPU. A link that trained down shows ``<inactive>`` in place of its speed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError

_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_STATE = re.compile(r"^\s*Link (\d+): (?:(\d+(?:\.\d+)?) GB/s|(<inactive>)|(.*))\s*$")
_ERROR = re.compile(r"^\s*Link (\d+): ([A-Za-z][A-Za-z ]*?): (\d+)\s*$")


@dataclass(frozen=True)
class Link:
    gpu: int
    link: int
    speed_gbs: float | None  # None when inactive
    raw: str

    @property
    def active(self) -> bool:
        return self.speed_gbs is not None


def parse_status(text: str) -> dict[int, list[Link]]:
    """GPU index -> its links. A GPU with no NVLink at all maps to an empty list."""
    gpus: dict[int, list[Link]] = {}
    current: int | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if gpu := _GPU.match(line):
            current = int(gpu.group(1))
            gpus[current] = []
            continue
        state = _STATE.match(line)
        if state and current is not None:
            speed = float(state.group(2)) if state.group(2) else None
            if speed is None and not state.group(3):
                raise ParseError(f"line {lineno}: unrecognised link state {line.strip()!r}")
            gpus[current].append(Link(current, int(state.group(1)), speed, line.strip()))
            continue
        if current is not None and "NVLink" in line:
            continue  # "NVML: Unable to retrieve NVLink information as all links are inActive"
        raise ParseError(f"line {lineno}: unexpected {line.strip()!r}")
    if not gpus:
        raise ParseError("no 'GPU N:' header found")
    return gpus


def parse_errors(text: str) -> dict[int, dict[int, dict[str, int]]]:
    """GPU index -> link -> {"Replay Errors": n, "Recovery Errors": n, "CRC Errors": n}."""
    gpus: dict[int, dict[int, dict[str, int]]] = {}
    current: int | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if gpu := _GPU.match(line):
            current = int(gpu.group(1))
            gpus[current] = {}
            continue
        error = _ERROR.match(line)
        if error and current is not None:
            link, name, value = int(error.group(1)), error.group(2), int(error.group(3))
            gpus[current].setdefault(link, {})[name] = value
            continue
        if current is not None and "NVLink" in line:
            continue
        raise ParseError(f"line {lineno}: unexpected {line.strip()!r}")
    if not gpus:
        raise ParseError("no 'GPU N:' header found")
    return gpus
