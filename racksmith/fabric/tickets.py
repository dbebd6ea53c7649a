"""Maintenance tickets, one per isolated link: a directory of JSON files.

The ticket is the hand-off to whoever fixes the cable: ``racksmith fabric ufm --apply``
opens one per link it isolates (status ``open``); the technician, or the site's ticket
system through a sync job, sets ``"status": "repaired"`` (``racksmith fabric ufm
--repaired ID`` does it by hand); ``--restore`` re-enables the ports of repaired tickets and
closes them. Files are plain JSON so any tool can read or change them; ids are stable per
link (``IB-`` + 10 hex digits of its name), so a link is never ticketed twice while open.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from racksmith.errors import UsageError

OPEN, REPAIRED, CLOSED = "open", "repaired", "closed"


def ticket_id(link: str) -> str:
    return "IB-" + hashlib.sha256(link.encode()).hexdigest()[:10]


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ticket:
    id: str
    link: str
    ufm_ports: list[str]
    reason: str
    status: str = OPEN
    hosts: list[str] = field(default_factory=list)
    history: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.history.append(f"{now()} {text}")


class TicketStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, tid: str) -> Path:
        return self.root / f"{tid}.json"

    def get(self, tid: str) -> Ticket | None:
        path = self.path(tid)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Ticket(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"{path}: not a racksmith ticket ({exc})") from None

    def all(self) -> list[Ticket]:
        if not self.root.is_dir():
            return []
        return [t for p in sorted(self.root.glob("IB-*.json")) if (t := self.get(p.stem))]

    def save(self, ticket: Ticket) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.path(ticket.id)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(ticket), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def mark_repaired(self, tid: str) -> Ticket:
        ticket = self.get(tid)
        if ticket is None:
            raise UsageError(f"no ticket {tid} in {self.root}")
        if ticket.status != OPEN:
            raise UsageError(f"ticket {tid} is {ticket.status}, not open")
        ticket.status = REPAIRED
        ticket.note("marked repaired")
        self.save(ticket)
        return ticket
