"""Verify-first, for any role: has anything the role sets up drifted on this host?

Why: a no-change rerun of a role walks every task of it, and each task costs ansible-playbook's
main process and a forked worker per host (issue 25: the controller's CPU per host). A role that
reads the host once (:mod:`racksmith.hostprobe`) and compares what it read with what it would
leave can end there when nothing differs. So the comparison must cover everything the role sets
up; anything it cannot read counts as drift (fail closed: the whole role runs, as on a first run).

The probe's sections (:func:`probe_sections`, one snippet each, run by ``hostprobe``):

- ``packages``: ``dpkg-query -W -f '${Package} ${Version} ${Status}\\n'`` lines;
- ``files``: ``<sha1> <mode> <owner> <group> <path>`` per file, ``dir <mode> <owner> <group>
  <path>`` per directory, ``- - - - <path>`` when absent;
- ``services``: ``<unit> <is-active> <is-enabled>`` per unit;
- ``sysctl``: ``<key> <value>`` per key, the live value (``-`` when it cannot be read).

Pure: the caller passes text and what it wants; :func:`drift` says what differs, one reason
per line, in the order wanted. An empty list means nothing drifted.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SECTIONS", "drift", "probe_sections", "quote_paths", "quote_words"]

#: The sections :func:`probe_sections` writes and :func:`drift` reads, in that order.
SECTIONS = ("packages", "files", "services", "sysctl")


def quote_words(values: Sequence[str], what: str) -> str:
    """``values``, each one word, shell-quoted and joined by spaces (a probe's arguments);
    anything else is refused naming ``what``, before any shell is written."""
    for value in values:
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise ValueError(f"{what} {value!r} must be one word")
    return " ".join(shlex.quote(v) for v in values)


def quote_paths(values: Sequence[str], what: str = "file") -> str:
    """``values``, each an absolute path on one line, shell-quoted and joined by spaces."""
    for value in values:
        if not isinstance(value, str) or not value.startswith("/") or "\n" in value:
            raise ValueError(f"{what} {value!r} must be an absolute path on one line")
    return " ".join(shlex.quote(v) for v in values)


def _names(want: Mapping[str, Any], key: str, field: str | None = None) -> list[str]:
    items = want.get(key) or []
    if field is None:
        return [str(item).partition("=")[0] for item in items]
    return [str(item[field]) for item in items]


def probe_sections(want: Mapping[str, Any]) -> dict[str, str]:
    """The shell snippets (``racksmith.hostprobe`` sections) that read what :func:`drift`
    compares, for ``want``'s packages, files, services and sysctl keys. They only read, so
    they run in check mode too; a snippet whose list is empty prints nothing."""
    packages = quote_words(_names(want, "packages"), "package")
    files = quote_paths(_names(want, "files", "path"))
    services = quote_words(
        [s if isinstance(s, str) else str(s["name"]) for s in want.get("services") or []], "unit"
    )
    sysctl = quote_words([str(k) for k in (want.get("sysctl") or {})], "sysctl key")
    fmt = shlex.quote("${Package} ${Version} ${Status}\n")
    return {
        "packages": f"dpkg-query -W -f {fmt} {packages} 2>/dev/null || true"
        if packages
        else "true",
        "files": (
            f'for f in {files}; do if [ -d "$f" ]; then echo "dir $(stat -c \'%a %U %G\' "$f")'
            f' $f"; elif [ -e "$f" ]; then echo "$(sha1sum < "$f" | cut -d\' \' -f1)'
            f' $(stat -c \'%a %U %G\' "$f") $f"; else echo "- - - - $f"; fi; done'
            if files
            else "true"
        ),
        "services": (
            f'for u in {services}; do echo "$u $(systemctl is-active "$u" 2>/dev/null)'
            f' $(systemctl is-enabled "$u" 2>/dev/null)"; done'
            if services
            else "true"
        ),
        "sysctl": (
            f"for k in {sysctl}; do v=$(sysctl -n \"$k\" 2>/dev/null | tr -s ' \\t' ' ')"
            f' || v=-; echo "$k ${{v:--}}"; done'
            if sysctl
            else "true"
        ),
    }


def _rows(text: str, fields: int) -> dict[str, list[str]]:
    """Lines of ``fields`` whitespace-separated fields (the last may hold spaces: a path or a
    value), keyed by the first field, or by the last for ``files`` (see :func:`drift`)."""
    found = {}
    for line in text.splitlines():
        parts = line.split(None, fields - 1)
        if len(parts) == fields:
            found[parts[0]] = parts[1:]
    return found


def _files(text: str) -> dict[str, list[str]]:
    found = {}
    for line in text.splitlines():
        parts = line.split(None, 4)
        if len(parts) == 5:
            found[parts[4]] = parts[:4]
    return found


def _package_drift(text: str, want: Mapping[str, Any]) -> list[str]:
    reasons = []
    packages = _rows(text, 3)
    held = want.get("hold")
    for spec in want.get("packages") or []:
        name, _, version = str(spec).partition("=")
        have = packages.get(name)
        if have is None or not have[1].endswith("ok installed"):
            reasons.append(f"{name}: not installed")
            continue
        if version and have[0] != version:
            reasons.append(f"{name}: version {have[0]}, wanted {version}")
        must_hold = name in held if isinstance(held, (list, tuple, set)) else bool(held)
        if must_hold and not have[1].startswith("hold "):
            reasons.append(f"{name}: not held")
    return reasons


def _file_drift(text: str, want: Mapping[str, Any]) -> list[str]:
    reasons = []
    files = _files(text)
    for wanted in want.get("files") or []:
        path = wanted["path"]
        have = files.get(path)
        if wanted.get("absent"):
            if have is None or have[0] != "-":
                reasons.append(f"{path}: present, wanted absent")
            continue
        if have is None or have[0] == "-":
            reasons.append(f"{path}: missing")
            continue
        kind, mode, owner, group = have
        if wanted.get("directory") and kind != "dir":
            reasons.append(f"{path}: not a directory")
        elif not wanted.get("directory") and kind == "dir":
            reasons.append(f"{path}: a directory, wanted a file")
        elif wanted.get("sha1") and kind != wanted["sha1"]:
            reasons.append(f"{path}: content differs")
        if (mode, owner, group) != (str(wanted["mode"]), wanted["owner"], wanted["group"]):
            reasons.append(
                f"{path}: mode {mode} {owner}:{group}, wanted "
                f"{wanted['mode']} {wanted['owner']}:{wanted['group']}"
            )
    return reasons


def _service_drift(text: str, want: Mapping[str, Any]) -> list[str]:
    services = _rows(text, 3)
    reasons = []
    for wanted in want.get("services") or []:
        unit, active = (
            (wanted, True) if isinstance(wanted, str) else (wanted["name"], wanted["active"])
        )
        state = services.get(unit, [])
        if state[1:2] != ["enabled"] or (active and state[:1] != ["active"]):
            need = "active enabled" if active else "enabled"
            reasons.append(f"{unit}: {' '.join(state) or 'unknown'}, wanted {need}")
    return reasons


def _sysctl_drift(text: str, want: Mapping[str, Any]) -> list[str]:
    live = _rows(text, 2)
    reasons = []
    for key, value in (want.get("sysctl") or {}).items():
        have = " ".join(live.get(key, ["-"])[0].split())
        wanted = " ".join(str(value).split())
        if have != wanted:
            reasons.append(f"sysctl {key}: {have}, wanted {wanted}")
    return reasons


def drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    """What differs from ``want`` on the host, as read in ``sections``.

    ``want``: ``packages`` (apt specs, ``name`` or ``name=version``), ``hold`` (bool: every
    package held; or the list of names that must be held), ``files`` (list of ``{path, mode,
    owner, group}`` with ``sha1`` (empty: only its presence, mode and owner count) or
    ``directory: true``; or ``{path, absent: true}``), ``services`` (unit names: active and
    enabled; or ``{name, active: false}``: enabled only, a oneshot unit), ``sysctl`` (key ->
    live value; whitespace runs compare as one space). A key of ``want`` whose section the
    probe did not print counts as drift (fail closed)."""
    checks = (
        ("packages", _package_drift),
        ("files", _file_drift),
        ("services", _service_drift),
        ("sysctl", _sysctl_drift),
    )
    reasons: list[str] = []
    for key, check in checks:
        if not want.get(key):
            continue
        if not isinstance(sections.get(key), str):
            return [f"the probe did not read {key}"]
        reasons += check(sections[key], want)
    return reasons
