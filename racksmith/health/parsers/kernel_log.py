"""The kernel log (``dmesg``): Xid and SXid events, and the lines an allow-list must judge.

Lines look like ``[ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off
the bus.``; the bracketed time is seconds since boot, which lets a profile ignore events
older than a window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = re.compile(r"^\[\s*(\d+\.\d+)\]\s?(.*)$")
XID = re.compile(r"NVRM: Xid \(PCI:([\w:.]+?)\): (\d+)(?:,\s*(.*))?")
SXID = re.compile(r"nvidia-nvswitch(\d+): SXid \(PCI:([\w:.]+?)\): (\d+)(?:,\s*(.*))?")
PCIE_LIMITED = re.compile(r"available PCIe bandwidth, limited by")


@dataclass(frozen=True)
class Line:
    seconds: float | None  # since boot; None when the line has no timestamp
    text: str  # without the timestamp


@dataclass(frozen=True)
class Xid:
    code: int
    pci: str
    detail: str
    seconds: float | None
    text: str


@dataclass(frozen=True)
class SXid:
    code: int
    switch: int
    pci: str
    detail: str
    seconds: float | None
    text: str


def parse(text: str) -> list[Line]:
    lines = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        match = _PREFIX.match(raw)
        if match:
            lines.append(Line(float(match.group(1)), match.group(2).rstrip()))
        else:
            lines.append(Line(None, raw.rstrip()))
    return lines


def since(lines: list[Line], uptime_s: float | None, window_s: float | None) -> list[Line]:
    """Lines from the last ``window_s`` seconds; all of them when there is no window (or when
    a line carries no timestamp: it cannot be shown to be old, so it counts)."""
    if window_s is None or uptime_s is None:
        return lines
    oldest = uptime_s - window_s
    return [ln for ln in lines if ln.seconds is None or ln.seconds >= oldest]


def xids(lines: list[Line]) -> list[Xid]:
    return [
        Xid(int(m.group(2)), m.group(1), m.group(3) or "", line.seconds, line.text)
        for line, m in _matches(lines, XID)
    ]


def sxids(lines: list[Line]) -> list[SXid]:
    return [
        SXid(
            int(m.group(3)), int(m.group(1)), m.group(2), m.group(4) or "", line.seconds, line.text
        )
        for line, m in _matches(lines, SXID)
    ]


def _matches(lines: list[Line], pattern: re.Pattern[str]):
    for line in lines:
        match = pattern.search(line.text)
        if match:
            yield line, match
