"""Role dcgm's verify-first decision: has anything the role sets up drifted on this host?

Why: on a healthy host a rerun of the role changes nothing, yet walked about twenty tasks (each
35-68 ms of controller time per host, seconds in the emulated VM lane). The role reads the host
once (racksmith.hostprobe) and ends when this function finds nothing drifted; any drift, or
anything it cannot read, runs the whole role as before. So it must cover everything the role
sets up: the packages (version where pinned, hold where held), every file it writes (content,
mode, owner), the services (active and enabled) and the metrics endpoint.

The sections are what the role's probe prints (roles/dcgm/vars/main.yml):

- ``packages``: ``dpkg-query -W -f '${Package} ${Version} ${Status}\\n'`` lines;
- ``files``: ``<sha1> <mode> <owner> <group> <path>`` per file, ``- - - - <path>`` when absent;
- ``services``: ``<unit> <is-active> <is-enabled>`` per unit;
- ``endpoint``: ``yes`` or ``no``.

Pure: the caller passes text and what it wants; the function says what differs, one reason per
line, in the order wanted. An empty list means nothing drifted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from racksmith.roles import drift as _drift

__all__ = ["drift"]


def drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    """What differs from ``want`` on the host, as read in ``sections``.

    ``want``: ``packages`` (apt specs, ``name`` or ``name=version``), ``hold`` (bool),
    ``files`` (list of ``{path, sha1, mode, owner, group}``; ``sha1`` empty: only its presence,
    mode and owner count), ``services`` (unit names), ``endpoint`` (bool: must answer).
    A section that is missing counts as drift (fail closed: run the whole role); the packages,
    files and services are compared by :func:`racksmith.roles.drift.drift`."""
    for key in ("packages", "files", "services", "endpoint"):
        if not isinstance(sections.get(key), str):
            return [f"the probe did not read {key}"]
    reasons = _drift.drift(sections, {k: v for k, v in want.items() if k != "endpoint"})
    if want.get("endpoint") and sections["endpoint"].strip() != "yes":
        reasons.append("the metrics endpoint does not answer")
    return reasons
