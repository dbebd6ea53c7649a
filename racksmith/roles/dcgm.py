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

__all__ = ["drift"]


def _packages(text: str) -> dict[str, tuple[str, str]]:
    found = {}
    for line in text.splitlines():
        fields = line.split(None, 2)
        if len(fields) == 3:
            found[fields[0]] = (fields[1], fields[2].strip())
    return found


def _files(text: str) -> dict[str, list[str]]:
    found = {}
    for line in text.splitlines():
        fields = line.split(None, 4)
        if len(fields) == 5:
            found[fields[4]] = fields[:4]
    return found


def _services(text: str) -> dict[str, list[str]]:
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if fields:
            found[fields[0]] = fields[1:]
    return found


def drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    """What differs from ``want`` on the host, as read in ``sections``.

    ``want``: ``packages`` (apt specs, ``name`` or ``name=version``), ``hold`` (bool),
    ``files`` (list of ``{path, sha1, mode, owner, group}``; ``sha1`` empty: only its presence,
    mode and owner count), ``services`` (unit names), ``endpoint`` (bool: must answer).
    A section that is missing counts as drift (fail closed: run the whole role)."""
    for key in ("packages", "files", "services", "endpoint"):
        if not isinstance(sections.get(key), str):
            return [f"the probe did not read {key}"]
    reasons = []
    packages = _packages(sections["packages"])
    for spec in want.get("packages", []):
        name, _, version = str(spec).partition("=")
        if name not in packages or not packages[name][1].endswith("ok installed"):
            reasons.append(f"{name}: not installed")
            continue
        have, status = packages[name]
        if version and have != version:
            reasons.append(f"{name}: version {have}, wanted {version}")
        if want.get("hold") and not status.startswith("hold "):
            reasons.append(f"{name}: not held")
    files = _files(sections["files"])
    for wanted in want.get("files", []):
        path = wanted["path"]
        have = files.get(path)
        if have is None or have[0] == "-":
            reasons.append(f"{path}: missing")
            continue
        sha1, mode, owner, group = have
        if wanted.get("sha1") and sha1 != wanted["sha1"]:
            reasons.append(f"{path}: content differs")
        if (mode, owner, group) != (str(wanted["mode"]), wanted["owner"], wanted["group"]):
            reasons.append(
                f"{path}: mode {mode} {owner}:{group}, wanted "
                f"{wanted['mode']} {wanted['owner']}:{wanted['group']}"
            )
    services = _services(sections["services"])
    for unit in want.get("services", []):
        state = services.get(unit, [])
        if state[:2] != ["active", "enabled"]:
            reasons.append(f"{unit}: {' '.join(state) or 'unknown'}, wanted active enabled")
    if want.get("endpoint") and sections["endpoint"].strip() != "yes":
        reasons.append("the metrics endpoint does not answer")
    return reasons
