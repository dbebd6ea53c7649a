"""UFM events: the ``event.log`` line format and the REST event feed, parsed into one record.

A line of ``/opt/ufm/log/event.log`` (health-checks.md §7)::

    2026-11-20 10:15:02.123 [1234] [329] WARNING [Hardware] IBPort
      [default / Switch: ib-leaf-001 / 1/17/1] [dev_id: fc6a1c0300a00001]: Link went down:
      (Switch:ib-leaf-001:1/17/1)fc6a1c0300a00001:33 -
      (Switch:ib-spine-003:1/4/2)fc6a1c0300a00083:8, cable S/N: MT2330FT09118

(one line in the file; wrapped here).

Timestamps are in the UFM server's local time; only their differences matter here (burst
detection), so they are read as naive seconds. A line that does not have this shape is an
error naming its line number: a triage that skipped what it could not read would call a
fabric clean that it never looked at.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import port_from_label, port_label

_LINE = re.compile(
    r"(\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2}):(\d{2}(?:\.\d+)?) \[(\d+)\] \[(\d+)\] (\w+) "
    r"\[(\w+)\] (\w+) \[([^\]]+)\](?: \[dev_id: (\w+)\])?: (.*)"
)
_LINK_DOWN = re.compile(
    r"Link went down: \((\w+):([^:)]+):([^)]+)\)([0-9a-fA-F]+):(\d+) - "
    r"\((\w+):([^:)]+):([^)]+)\)([0-9a-fA-F]+):(\d+)"
)
_PEER_PORT = re.compile(r"Peer Port ([^:]+):(\S+) is considered by SM as unhealthy due to (\w+)")

#: Codes acted on (IMB's list, health-checks.md §7).
ACT = {
    110: "symbol error rate",
    112: "link downed",
    113: "port receive errors",
    115: "receive switch relay errors",
    116: "transmit discards",
    329: "link went down",
    702: "port unhealthy",
    917: "symbol BER",
    918: "symbol BER warning",
}
#: Codes that are normal operation (link up, GID/multicast churn, reports...).
IGNORE = {64, 65, 66, 67, 328, 331, 332, 336, 395, 517, 527, 603, 604, 908, 1500, 1502}
#: Codes that need a person but isolate no port (switch down/critical, cable temperature).
ATTENTION = {
    394: "switch critical",
    907: "switch down",
    920: "cable temperature",
    1503: "duplicate cable",
}


@dataclass(frozen=True)
class End:
    """One end of a link as UFM names it: node name and port number (plus GUID if known)."""

    kind: str  # "Switch" or "Computer" (an HCA)
    name: str
    port: int
    guid: str | None = None

    @property
    def is_switch(self) -> bool:
        return self.kind == "Switch"

    def __str__(self) -> str:
        return f"{self.name}/{self.port}"


@dataclass(frozen=True)
class Event:
    line: int
    seconds: float
    timestamp: str
    code: int
    level: str
    dev_type: str
    dev_desc: str
    dev_id: str | None
    message: str

    def location(self) -> End | None:
        """The port this event is about, from ``default / Switch: NAME / 1/17/1``."""
        parts = self.dev_desc.split(" / ")
        if len(parts) < 3:
            return None
        kind, _, name = parts[1].partition(": ")
        try:
            port = port_from_label(parts[2].split("/", 1)[-1] if kind != "Switch" else parts[2])
        except ValueError:
            return None
        guid = None
        if self.dev_id:
            head = self.dev_id.split("_", 1)[0].lower()
            if len(head) == 16 and all(c in "0123456789abcdef" for c in head):
                guid = head
        return End(kind, name.strip(), port, guid)

    def link_ends(self) -> tuple[End, End] | None:
        """Both ends named in a ``Link went down`` message."""
        m = _LINK_DOWN.search(self.message)
        if m is None:
            return None
        a = End(m[1], m[2], int(m[5]), m[4].lower().rjust(16, "0"))
        b = End(m[6], m[7], int(m[10]), m[9].lower().rjust(16, "0"))
        return a, b

    def unhealthy_peer(self) -> tuple[str, int, str] | None:
        """(switch, port, condition) from ``Peer Port X:1/19/2 is considered ... FLAPPING``."""
        m = _PEER_PORT.search(self.message)
        if m is None:
            return None
        try:
            return m[1], port_from_label(m[2]), m[3]
        except ValueError:
            return None


class _Clock:
    """``YYYY-MM-DD`` + h, m, s -> seconds, with the date's day number cached (strptime
    costs ~10 us a line; a million lines must parse in seconds)."""

    def __init__(self) -> None:
        self._days: dict[str, float] = {}

    def seconds(self, date: str, h: str, m: str, s: str) -> float:
        day = self._days.get(date)
        if day is None:
            day = datetime.date.fromisoformat(date).toordinal() * 86400.0
            self._days[date] = day
        return day + int(h) * 3600 + int(m) * 60 + float(s)


def parse_lines(lines: Iterable[str], source: str = "event.log") -> Iterator[Event]:
    """Events of an event.log, in file order; raises naming the first malformed line."""
    clock = _Clock()
    match = _LINE.fullmatch
    for number, raw in enumerate(lines, 1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        m = match(text)
        if m is None:
            raise FabricInputError(source, number, f"not a UFM event.log line: {text[:100]!r}")
        date, hh, mm, ss, _entry, code, level, _topic, dev_type, desc, dev_id, msg = m.groups()
        try:
            seconds = clock.seconds(date, hh, mm, ss)
        except ValueError:
            raise FabricInputError(source, number, f"bad timestamp {date} {hh}:{mm}:{ss}") from None
        yield Event(
            number, seconds, f"{date} {hh}:{mm}:{ss}", int(code), level, dev_type, desc, dev_id, msg
        )


def from_feed(items: list, source: str = "UFM /ufmRest/app/events") -> list[Event]:
    """Events of UFM's REST feed (``GET /ufmRest/app/events``), oldest first.

    Each item carries ``id``, ``event_type`` (the numeric code), ``severity``, ``timestamp``
    (``YYYY-MM-DD HH:MM:SS[.fff]``), ``type`` (``IBPort``...), ``object_path`` (the same
    ``default / Switch: NAME / 1/17/1`` as the log), ``object_name`` (dev_id) and
    ``description`` (the message).
    """
    clock = _Clock()
    out = []
    for index, item in enumerate(items, 1):
        try:
            stamp = str(item["timestamp"])
            date, _, clock_part = stamp.partition(" ")
            hh, mm, ss = clock_part.split(":")
            event = Event(
                int(item.get("id", index)),
                clock.seconds(date, hh, mm, ss),
                stamp,
                int(item["event_type"]),
                str(item.get("severity", "")).upper(),
                str(item.get("type", "")),
                str(item.get("object_path", "")),
                str(item["object_name"]) if item.get("object_name") else None,
                str(item.get("description", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise FabricInputError(
                source, index, f"event item lacks a field or has a bad value ({exc})"
            ) from None
        out.append(event)
    out.sort(key=lambda e: (e.seconds, e.line))
    return out


def format_line(
    entry: int,
    when: datetime.datetime,
    code: int,
    level: str,
    end: End | None,
    message: str,
    topic: str = "Hardware",
) -> str:
    """One event.log line (the generator and the simulator write events with this)."""
    stamp = when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    if end is None:
        desc, dev = "default / Fabric", ""
        dev_type = "Site"
    else:
        label = port_label(end.port) if end.is_switch else f"HCA-1/{end.port}"
        desc = f"default / {end.kind}: {end.name} / {label}"
        dev = f" [dev_id: {end.guid}]" if end.guid else ""
        dev_type = "IBPort"
    return f"{stamp} [{entry}] [{code}] {level} [{topic}] {dev_type} [{desc}]{dev}: {message}"


def link_down_message(a: End, b: End, serial: str) -> str:
    def one(e: End) -> str:
        label = port_label(e.port) if e.is_switch else f"HCA-1/{e.port}"
        return f"({e.kind}:{e.name}:{label}){e.guid}:{e.port}"

    return f"Link went down: {one(a)} - {one(b)}, cable S/N: {serial}"
