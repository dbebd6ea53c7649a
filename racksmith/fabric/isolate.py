"""Apply a triage plan through UFM, and restore repaired links: one ticket per link.

``apply`` isolates the switch ports of every link the plan marks ``isolate`` (never the
deferred ones): it opens the link's ticket first (so a crash leaves a record), then asks
UFM to isolate both ends in one call, and notes the result on the ticket. A link whose
ticket is already open is left alone. A port UFM does not know stops that link, not the
run. ``restore`` brings back the ports of tickets marked ``repaired`` and closes them;
open tickets wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from racksmith.fabric.errors import UfmError
from racksmith.fabric.tickets import CLOSED, OPEN, REPAIRED, Ticket, TicketStore, ticket_id
from racksmith.fabric.triage import LinkIssue, TriageResult


@dataclass
class Outcome:
    link: str
    ticket: str
    ports: list[str]
    status: str
    ok: bool = True

    def as_dict(self) -> dict:
        return {
            "link": self.link,
            "ticket": self.ticket,
            "ufm_ports": self.ports,
            "status": self.status,
            "ok": self.ok,
        }


def _port_index(client) -> dict[tuple[str, int], str]:
    out = {}
    for port in client.ports():
        try:
            out[(str(port["system_name"]), int(port["number"]))] = str(port["name"])
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _set(client, ports: list[str], method: str, on: bool) -> None:
    if method == "isolate":
        (client.restore if on else client.isolate)(ports)
        return
    for port in ports:
        client.port_action(port.split("_", 1)[0], port, "enable" if on else "disable")


def apply(
    result: TriageResult, client, store: TicketStore, method: str = "isolate"
) -> list[Outcome]:
    index = _port_index(client)
    issues: dict[int, LinkIssue] = {}
    for action in result.isolate:
        issues.setdefault(id(action.issue), action.issue)
    out = []
    for issue in issues.values():
        tid = ticket_id(issue.name)
        known = store.get(tid)
        if known is not None and known.status == OPEN:
            out.append(Outcome(issue.name, tid, known.ufm_ports, "already isolated (ticket open)"))
            continue
        ends = [e for e in issue.ends if e.is_switch]
        ports = [
            index.get((e.name, e.port)) or (f"{e.guid}_{e.port}" if e.guid else None) for e in ends
        ]
        missing = [
            str(e) for e, p in zip(ends, ports, strict=True) if p is None or p not in index.values()
        ]
        if missing:
            out.append(
                Outcome(
                    issue.name,
                    tid,
                    [],
                    f"not isolated: UFM does not know {', '.join(missing)}",
                    False,
                )
            )
            continue
        names = [p for p in ports if p]
        hosts = sorted({e.name.split()[0] for e in issue.ends if not e.is_switch})
        ticket = Ticket(
            tid, issue.name, names, issue.reason(), OPEN, hosts, known.history if known else []
        )
        ticket.note(f"opened: {issue.reason()}")
        store.save(ticket)
        try:
            _set(client, names, method, on=False)
        except UfmError as exc:
            ticket.note(f"{method} failed: {exc}")
            store.save(ticket)
            out.append(Outcome(issue.name, tid, names, f"{method} failed: {exc}", False))
            continue
        ticket.note(f"{method}: {', '.join(names)}")
        store.save(ticket)
        out.append(
            Outcome(issue.name, tid, names, "isolated" if method == "isolate" else "disabled")
        )
    _confirm(client, store, method, [o for o in out if o.status in ("isolated", "disabled")])
    return out


def _confirm(client, store: TicketStore, method: str, done: list[Outcome]) -> None:
    """Read back what UFM now reports (one call for the run) and fail any link whose ports
    it does not show isolated/disabled: an accepted request is not a done isolation."""
    if not done:
        return
    try:
        if method == "isolate":
            seen = {
                f"{str(u.get('UnhealthyGUID', '')).lower()}_{u.get('UnhealthyPortNumber')}"
                for u in client.unhealthy()
            }
        else:
            seen = {
                str(p.get("name")) for p in client.ports() if p.get("physical_state") == "Disabled"
            }
    except UfmError as exc:
        seen, why = set(), f"could not read back: {exc}"
    else:
        why = "UFM does not report it"
    for outcome in done:
        missing = [p for p in outcome.ports if p not in seen]
        if missing:
            outcome.ok = False
            outcome.status = f"{outcome.status}, not confirmed ({why}: {', '.join(missing)})"
            ticket = store.get(outcome.ticket)
            if ticket is not None:
                ticket.note(outcome.status)
                store.save(ticket)


def restore(client, store: TicketStore, method: str = "isolate") -> list[Outcome]:
    out = []
    for ticket in store.all():
        if ticket.status == OPEN:
            out.append(Outcome(ticket.link, ticket.id, ticket.ufm_ports, "waiting for repair"))
            continue
        if ticket.status != REPAIRED:
            continue
        try:
            _set(client, ticket.ufm_ports, method, on=True)
        except UfmError as exc:
            ticket.note(f"restore failed: {exc}")
            store.save(ticket)
            out.append(
                Outcome(ticket.link, ticket.id, ticket.ufm_ports, f"restore failed: {exc}", False)
            )
            continue
        ticket.status = CLOSED
        ticket.note(f"restored: {', '.join(ticket.ufm_ports)}")
        store.save(ticket)
        out.append(Outcome(ticket.link, ticket.id, ticket.ufm_ports, "restored"))
    return out
