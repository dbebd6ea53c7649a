"""Secrets shared by every area: credentials passed by reference, and one redaction.

Credentials enter racksmith only by reference (environment variables or a ``KEY=VALUE`` file
with mode 0600, the format the lab writes and shells can source) and are never written to
logs, caches, reports or exception messages. Every secret a process loads is remembered here,
so :func:`redact` can scrub text that never passed through a credentials object, such as an
exception string from the HTTP stack or a failure message in the rack report.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

MASK = "********"

#: Environment variables whose values are secrets by contract.
SECRET_ENV_VARS = ("RACKSMITH_BMC_PASSWORD", "MAAS_API_KEY")

# Shorter strings would mask ordinary words everywhere ("tok" in "token"); no BMC password or
# MAAS key part that is worth protecting is that short.
MIN_SECRET_LEN = 4

_KNOWN: set[str] = set()
_LOCK = threading.Lock()

# Credential-shaped substrings, whatever their value: user:password@ in URLs, Authorization,
# X-Auth-Token and OAuth token/signature values.
_PATTERNS = (
    re.compile(r"(?<=://)()[^/\s:@]+:[^/\s@]+(?=@)"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:basic|bearer|oauth)?\s*)[^\s'\",}]+"),
    re.compile(r"(?i)(x-auth-token['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"),
    re.compile(r"(?i)(oauth_(?:signature|token)=['\"]?)[^'\"&\s,]+"),
)


class SecretError(ValueError):
    """A secret could not be found or read; the message names the source, never a value."""


def remember(*values: str) -> None:
    """Register secrets loaded by this process so that :func:`redact` always masks them."""
    with _LOCK:
        _KNOWN.update(v for v in values if len(v) >= MIN_SECRET_LEN)


def _env_secrets(environ: Mapping[str, str]) -> list[str]:
    values = []
    for name in SECRET_ENV_VARS:
        value = environ.get(name, "")
        if value:
            values.append(value)
            if name == "MAAS_API_KEY":  # consumer:token:secret, each part a secret too
                values.extend(p for p in value.split(":") if len(p) >= MIN_SECRET_LEN)
    return values


def redact(text: str, extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every known secret, and anything shaped like a credential, masked."""
    with _LOCK:
        known = set(_KNOWN)
    known.update(v for v in extra if len(v) >= MIN_SECRET_LEN)
    known.update(_env_secrets(os.environ if environ is None else environ))
    for value in sorted(known, key=len, reverse=True):  # a whole key before its parts
        text = text.replace(value, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def read_env_file(path: Path) -> dict[str, str]:
    """Parse a ``KEY=VALUE`` credentials file; quotes around values and ``export`` are removed."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise SecretError(f"cannot read credentials file {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        if not sep or not key.isidentifier():
            raise SecretError(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def write_secret(path: Path, content: str | bytes) -> None:
    """Write a file that is 0600 from the moment it exists (never chmod-ed later); atomic."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content.encode() if isinstance(content, str) else content)
    tmp.replace(path)


def expand_path(value: str) -> Path:
    """Expand ``~``, ``$VAR`` and ``${VAR:-default}`` in a configured path."""

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        return os.environ.get(name) or (default if default is not None else "")

    value = re.sub(r"\$\{(\w+):-([^}]*)\}", sub, value)
    return Path(os.path.expanduser(os.path.expandvars(value)))
