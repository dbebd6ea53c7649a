"""Scrub credentials out of text before it reaches a report, log or ticket.

Modules mark their secret arguments ``no_log`` and Ansible censors those results, but a
failure message can still quote a URL or an exception that carries a key. Every string the
report stores goes through :func:`redact` as a second line of defence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

#: Environment variables whose values are secrets by contract (passed by reference).
SECRET_ENV_VARS = ("RACKSMITH_BMC_PASSWORD", "MAAS_API_KEY")

MASK = "********"

# user:password@ in URLs, and Authorization / X-Auth-Token / oauth_signature values.
_PATTERNS = (
    re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)[^\"'\s,}]+(?:\s+[^\"'\s,}]+)?"),
    re.compile(r"(?i)(x-auth-token[\"']?\s*[:=]\s*[\"']?)[^\"'\s,}]+"),
    re.compile(r"(?i)(oauth_(?:signature|token)=\"?)[^\"&\s,]+"),
)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The secret strings known to this process: whole values and, for MAAS keys, each part."""
    environ = os.environ if environ is None else environ
    values: list[str] = []
    for name in SECRET_ENV_VARS:
        value = environ.get(name, "")
        if not value:
            continue
        values.append(value)
        if name == "MAAS_API_KEY":
            values.extend(part for part in value.split(":") if len(part) >= 6)
    # Longest first, so a whole key is masked before its parts.
    return sorted(set(values), key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """Return ``text`` with known secret values and credential-shaped substrings masked."""
    for value in secret_values() if secrets is None else secrets:
        if value:
            text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text
