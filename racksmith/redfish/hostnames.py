"""Distinct inventory host names for discovery results (the inventory plugin's naming rule).

A host is named by its service tag (or the inventory's template); a host without one, by its
BMC (``bmc-10.0.0.5-443``). Names can collide: two BMCs claiming one service tag (both are kept,
never merged: see ``discover.flag_duplicates``), or two nodes of one multi-node chassis that
both failed before their service tag was read (both named after the one BMC). A collision gets
a suffix that tells the hosts apart: the BMC where the hosts have different BMCs, the system
(``@odata.id``'s last part) where they share one, both where both differ; a counter only as the
last resort. Pure: names and records in, names out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


def _part(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-")


def _system_id(record: Mapping[str, Any]) -> str:
    uri = record.get("system_uri")
    return _part(str(uri).rstrip("/").rsplit("/", 1)[-1]) if uri else ""


def distinct(named: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One name per ``(name, record)``, all different; a name that is already unique is kept.

    ``record`` is a discovery result as a dict (``bmc``, ``system_uri``)."""
    counts = Counter(name for name, _record in named)
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for name, record in named:
        by_name.setdefault(name, []).append(record)
    used = {name for name, count in counts.items() if count == 1}  # kept as they are
    out: list[str] = []
    for name, record in named:
        if counts[name] == 1:
            out.append(name)
            continue
        same = by_name[name]
        parts = []
        if len({r.get("bmc") for r in same}) > 1:
            parts.append(_part(str(record.get("bmc"))))
        if sum(r.get("bmc") == record.get("bmc") for r in same) > 1:
            parts.append(_system_id(record) or "node")
        candidate = "-".join([name, *(p for p in parts if p)])
        final, n = candidate, 2
        while final in used:
            final, n = f"{candidate}-{n}", n + 1
        used.add(final)
        out.append(final)
    return out
