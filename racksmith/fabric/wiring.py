"""The site's wiring plan: a CSV of the cables that should exist, by switch name, physical
location and port.

Columns (header required, extra columns ignored)::

    a_name,a_location,a_port,b_name,b_location,b_port[,width][,speed]

A switch end is the switch's host name (``ib-leaf-001``) and its rack location
(``R01-U40``); an HCA end is the HCA's node description (``gpu0001 mlx5_0``, host name then
device) with the host's location, port 1. ``width``/``speed`` (``4x``/``NDR``) default to the
command's ``--width``/``--speed``. Every row is a cable; a port may appear in one row only.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import speed_rank

REQUIRED = ("a_name", "a_location", "a_port", "b_name", "b_location", "b_port")


@dataclass(frozen=True, order=True)
class PlanEnd:
    name: str
    port: int
    location: str = ""

    def __str__(self) -> str:
        return f"{self.name}/{self.port}"


@dataclass(frozen=True)
class PlannedLink:
    a: PlanEnd
    b: PlanEnd
    width: int | None
    speed: str | None
    line: int


@dataclass
class WiringPlan:
    links: list[PlannedLink]
    source: str
    #: plan switch/HCA name -> location, as the plan states it
    locations: dict[str, str]

    def by_port(self) -> dict[tuple[str, int], tuple[PlannedLink, PlanEnd]]:
        """(name, port) -> (planned link, the peer end)."""
        out: dict[tuple[str, int], tuple[PlannedLink, PlanEnd]] = {}
        for link in self.links:
            out[(link.a.name, link.a.port)] = (link, link.b)
            out[(link.b.name, link.b.port)] = (link, link.a)
        return out


def _port(value: str, source: str, line: int, column: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise FabricInputError(source, line, f"{column} {value!r} is not a port number") from None
    if not 0 < port < 256:
        raise FabricInputError(source, line, f"{column} {port} is out of range 1-255")
    return port


def parse(text: str, source: str = "plan.csv") -> WiringPlan:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise FabricInputError(source, 1, f"header lacks column(s) {', '.join(missing)}")
    links: list[PlannedLink] = []
    locations: dict[str, str] = {}
    seen: dict[tuple[str, int], int] = {}
    for row in reader:
        line = reader.line_num
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        if None in row.values():
            raise FabricInputError(source, line, "too few columns")
        ends = []
        for side in ("a", "b"):
            name = row[f"{side}_name"].strip()
            if not name:
                raise FabricInputError(source, line, f"{side}_name is empty")
            end = PlanEnd(
                name,
                _port(row[f"{side}_port"].strip(), source, line, f"{side}_port"),
                row[f"{side}_location"].strip(),
            )
            key = (end.name, end.port)
            if key in seen:
                raise FabricInputError(
                    source, line, f"port {end} is already cabled on line {seen[key]}"
                )
            seen[key] = line
            if end.location:
                known = locations.setdefault(end.name, end.location)
                if known != end.location:
                    raise FabricInputError(
                        source, line, f"{end.name} is at {end.location} here but {known} earlier"
                    )
            ends.append(end)
        width_text = (row.get("width") or "").strip().lower().rstrip("x")
        speed = (row.get("speed") or "").strip().upper() or None
        try:
            width = int(width_text) if width_text else None
        except ValueError:
            raise FabricInputError(
                source, line, f"width {row.get('width')!r} is not like 4x"
            ) from None
        if speed is not None and speed_rank(speed) < 0:
            raise FabricInputError(source, line, f"unknown speed {speed!r}")
        links.append(PlannedLink(ends[0], ends[1], width, speed, line))
    if not links:
        raise FabricInputError(source, 0, "no cables in the wiring plan")
    return WiringPlan(links, source, locations)


def load(path: str | Path) -> WiringPlan:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FabricInputError(str(path), 0, f"cannot read: {exc}") from exc
    return parse(text, str(path))


def render(links: list[PlannedLink]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED, "width", "speed"])
    for link in links:
        writer.writerow(
            [
                link.a.name,
                link.a.location,
                link.a.port,
                link.b.name,
                link.b.location,
                link.b.port,
                f"{link.width}x" if link.width else "",
                link.speed or "",
            ]
        )
    return out.getvalue()
