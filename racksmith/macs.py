"""One MAC address normaliser for the whole project.

Redfish, MAAS and inventories spell MACs differently (``E4:3D:1A:13:27:F0``,
``e4-3d-1a-13-27-f0``, ``e43d1a1327f0``); comparing them as text once merged two machines under
one name. Every comparison and every record goes through ``normalize_mac``.
"""

from __future__ import annotations

import re
from typing import Any

_MAC = re.compile(r"^[0-9a-f]{2}([:-]?)[0-9a-f]{2}(\1[0-9a-f]{2}){4}$")
#: Values BMCs report for "no MAC" that look like MACs.
_NULL_MACS = frozenset({"00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"})


def normalize_mac(value: Any) -> str | None:
    """Any common spelling -> ``e4:3d:1a:13:27:f0``; anything that is not a usable MAC -> None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if not _MAC.match(text):
        return None
    digits = re.sub(r"[^0-9a-f]", "", text)
    mac = ":".join(digits[i : i + 2] for i in range(0, 12, 2))
    return None if mac in _NULL_MACS else mac


def require_mac(value: Any, what: str = "MAC address") -> str:
    """``normalize_mac`` for input that must be a MAC: raises ``ValueError`` naming ``what``."""
    mac = normalize_mac(value)
    if mac is None:
        raise ValueError(f"{what} {value!r} is not a usable MAC address")
    return mac
