"""Role container_runtime's verify-first step: has anything the role sets up drifted on this host?

Why: a no-change rerun of the role walked about nineteen tasks per host, each costing the
controller some 90 ms (issue 25). The role reads the host once (:mod:`racksmith.hostprobe`) and
ends when :func:`drift` finds nothing drifted; any drift, or anything it cannot read, runs the
whole role as before (fail closed). So it covers everything the role sets up:

- the directories (Docker's configuration, and where the toolkit applies the keyring's and
  udev's rules), ``0755 root:root``;
- where the toolkit applies: the repository's key (present; ``get_url`` never fetches an
  existing file again, so only its mode and owner count), the repository source and the udev
  rule of NVIDIA/nvidia-docker#1730 (sha1 of the content the role writes), ``0644 root:root``;
- ``daemon.json``: racksmith's keys merged into what is there change nothing (compared as data,
  as the role does), ``0644 root:root``, and where the toolkit applies the nvidia runtime (and
  it as the default when wanted) is in it (else ``nvidia-ctk runtime configure`` would run);
- the packages at their pinned specs, held when the role holds them; ``docker`` active and
  enabled;
- where the toolkit applies and the driver's ``/dev/nvidiactl`` exists: a ``/dev/char`` link to
  it (``nvidia-ctk system create-dev-char-symlinks``; the role makes them when they are missing).

The packages, files and unit are compared by :mod:`racksmith.roles.drift`; ``daemon.json`` and
the device links here. Pure: the caller passes the probe's text and what it wants.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from racksmith.roles import drift as _drift

__all__ = ["DEVCHAR_SNIPPET", "SECTIONS", "drift", "generic_want", "probe_sections"]

#: The sections :func:`probe_sections` writes (besides the role's own ``daemon``).
SECTIONS = (*_drift.SECTIONS, "devchar")

#: Prints ``no-driver`` without ``/dev/nvidiactl``, else ``linked`` when a ``/dev/char`` link
#: points at it (``nvidia-ctk system create-dev-char-symlinks`` makes ``195:255 -> ../nvidiactl``)
#: and ``missing`` when none does.
DEVCHAR_SNIPPET = (
    "if [ ! -e /dev/nvidiactl ]; then echo no-driver;"
    " elif find /dev/char -maxdepth 1 -lname '*nvidiactl' 2>/dev/null | grep -q .;"
    " then echo linked; else echo missing; fi"
)

_ROOT = {"owner": "root", "group": "root"}


def _sha1(text: str) -> str:
    return hashlib.new("sha1", text.encode(), usedforsecurity=False).hexdigest()


def generic_want(want: Mapping[str, Any]) -> dict[str, Any]:
    """``want`` (see :func:`drift`) as :func:`racksmith.roles.drift.drift` reads it: the
    directories ``0755``, the key, the toolkit files (sha1 of their content) and ``daemon.json``
    ``0644``, all ``root:root``; the packages and holds as given; the unit active and enabled."""
    files: list[dict[str, Any]] = [
        {"path": str(d), "directory": True, "mode": "755", **_ROOT} for d in want.get("dirs") or []
    ]
    if want.get("keyring"):
        files.append({"path": str(want["keyring"]), "sha1": "", "mode": "644", **_ROOT})
    files += [
        {"path": str(f["dest"]), "sha1": _sha1(str(f["content"])), "mode": "644", **_ROOT}
        for f in want.get("files") or []
    ]
    if want.get("daemon_json"):
        files.append({"path": str(want["daemon_json"]), "sha1": "", "mode": "644", **_ROOT})
    return {
        "packages": list(want.get("packages") or []),
        "hold": want.get("hold", False),
        "files": files,
        "services": [str(want["service"])] if want.get("service") else [],
    }


def probe_sections(want: Mapping[str, Any]) -> dict[str, str]:
    """The snippets that read what :func:`drift` compares (``racksmith.hostprobe`` sections),
    for every package, path and unit in ``want``. The role passes everything it may set up,
    toolkit or not: the probe runs before the PCI bus says whether the toolkit applies."""
    return {**_drift.probe_sections(generic_want(want)), "devchar": DEVCHAR_SNIPPET}


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def _daemon_drift(text: str, want: Mapping[str, Any]) -> list[str]:
    path = want.get("daemon_json") or "daemon.json"
    try:
        present = json.loads(text) if text.strip() else {}
    except ValueError:
        return [f"{path}: not JSON"]
    if not isinstance(present, dict):
        return [f"{path}: not a JSON object"]
    wanted = dict(want.get("daemon") or {})
    # The role's merge (Jinja's combine): racksmith's keys replace the file's, the rest are kept.
    merged = {**present, **wanted}
    if wanted and not present:  # absent or empty (a new host): one line, not one per key
        reasons = [f"{path}: none of racksmith's keys ({', '.join(wanted)})"]
    else:
        reasons = [
            f"{path}: {key} is {_json(present[key]) if key in present else 'missing'},"
            f" wanted {_json(value)}"
            for key, value in wanted.items()
            if key not in present or present[key] != value
        ]
    if want.get("nvidia"):
        if "nvidia" not in (merged.get("runtimes") or {}):
            reasons.append(f"{path}: no nvidia runtime")
        elif want.get("nvidia_default") and merged.get("default-runtime") != "nvidia":
            reasons.append(f"{path}: nvidia is not the default runtime")
    return reasons


def _devchar_drift(text: str) -> list[str]:
    state = text.strip()
    if state in ("linked", "no-driver"):
        return []
    if state == "missing":
        return ["/dev/char: no link to /dev/nvidiactl (nvidia-ctk system create-dev-char-symlinks)"]
    return [f"/dev/char: could not read the device links ({state or 'nothing printed'})"]


def drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    """What differs from ``want`` on the host, as read in ``sections``; empty: nothing drifted.

    ``want``: ``packages`` (apt specs), ``hold`` (bool or names), ``dirs`` (paths), ``keyring``
    (path; empty where the toolkit does not apply), ``files`` (``{dest, content}`` the role
    copies), ``daemon_json`` (path), ``daemon`` (racksmith's keys, as the role merges them),
    ``nvidia`` (bool: the toolkit applies: the nvidia runtime must be configured and the device
    links checked), ``nvidia_default`` (bool), ``service`` (unit). A section the probe did not
    print counts as drift (fail closed)."""
    needed = ["daemon"] + (["devchar"] if want.get("nvidia") else [])
    for key in needed:
        if not isinstance(sections.get(key), str):
            return [f"the probe did not read {key}"]
    reasons = _drift.drift(sections, generic_want(want))
    reasons += _daemon_drift(sections["daemon"], want)
    if want.get("nvidia"):
        reasons += _devchar_drift(sections["devchar"])
    return reasons
