"""``nvidia-smi nvlink -s`` (link state and speed) and ``nvidia-smi nvlink -e`` (error
counters), per GPU. A link that trained down shows ``<inactive>`` in place of its speed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


def per_gpu_sections(text: str, line_parser) -> dict[int, Any]:
    """Walk ``GPU N: ...`` sections, handing each other line to ``line_parser(gpu, value,
    line)``, which returns the new per-GPU value or None when it does not know the line."""
    gpus: dict[int, Any] = {}
    current: int | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if gpu := _GPU.match(line):
            current = int(gpu.group(1))
            gpus[current] = None
            continue
        if current is not None:
            value = line_parser(current, gpus[current], line)
            if value is not None:
                gpus[current] = value
                continue
            if "NVLink" in line:
                continue  # "NVML: Unable to retrieve NVLink information as all links are inActive"
        raise ParseError(f"line {lineno}: unexpected {line.strip()!r}")
    if not gpus:
        raise ParseError("no 'GPU N:' header found")
    return gpus


def parse_status(text: str) -> dict[int, list[Link]]:
    """GPU index -> its links. A GPU with no NVLink at all maps to an empty list."""

    def link(gpu: int, links: list[Link] | None, line: str) -> list[Link] | None:
        state = _STATE.match(line)
        if not state:
            return None
        speed = float(state.group(2)) if state.group(2) else None
        if speed is None and not state.group(3):
            raise ParseError(f"unrecognised link state {line.strip()!r}")
        return [*(links or []), Link(gpu, int(state.group(1)), speed, line.strip())]

    return {gpu: links or [] for gpu, links in per_gpu_sections(text, link).items()}


def parse_errors(text: str) -> dict[int, dict[int, dict[str, int]]]:
    """GPU index -> link -> {"Replay Errors": n, "Recovery Errors": n, "CRC Errors": n}."""

    def counter(gpu: int, links: dict | None, line: str) -> dict | None:
        error = _ERROR.match(line)
        if not error:
            return None
        links = links or {}
        links.setdefault(int(error.group(1)), {})[error.group(2)] = int(error.group(3))
        return links

    return {gpu: links or {} for gpu, links in per_gpu_sections(text, counter).items()}
