"""Secrets shared by every area: credentials passed by reference, and one redaction.

Credentials enter racksmith only by reference (environment variables or a ``KEY=VALUE`` file
with mode 0600, the format the lab writes and shells can source) and are never written to
logs, caches, reports or exception messages. Every secret a process loads is remembered here,
so :func:`redact` can scrub text that never passed through a credentials object, such as an
exception string from the HTTP stack or a failure message in the rack report.

A secret is remembered in every form it can come back in: raw, JSON-escaped (a BMC that
echoes our login body in its error, the inventory cache), Python-repr-escaped, HTML-escaped,
percent-encoded (OAuth signatures, query strings) and, for user and password pairs, the
base64 of HTTP Basic auth. Redacting only the raw string let a password with a quote, a
backslash or a non-ASCII letter leak through ``discover --json`` and the inventory cache.

:func:`read_credentials_file` is the one way a credentials file is read (BMC and MAAS): it
refuses a file that group or others may read or write, naming the file and the fix.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

MASK = "********"

#: Environment variables whose values are secrets by contract.
SECRET_ENV_VARS = ("RACKSMITH_BMC_PASSWORD", "MAAS_API_KEY", "UFM_PASSWORD")

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


def _lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


def forms(value: str) -> set[str]:
    """Every spelling of ``value`` that can reach text: raw and escaped/encoded forms."""
    if len(value) < MIN_SECRET_LEN:
        return set()
    escaped = json.dumps(value)[1:-1]
    out = {
        value,
        escaped,
        json.dumps(value, ensure_ascii=False)[1:-1],
        escaped.replace("/", "\\/"),  # serializers that escape '/'
        json.dumps(escaped)[1:-1],  # an escaped body echoed inside another JSON string
        repr(value)[1:-1],
        html.escape(value),
    }
    oauth = quote(value, safe="~")  # RFC 5849; the Authorization header encodes it again
    for encoded in (
        quote(value, safe=""),
        oauth,
        quote(oauth, safe="~"),
        quote_plus(value, safe=""),
    ):
        out.update((encoded, _lower_hex(encoded)))
    return {f for f in out if len(f) >= MIN_SECRET_LEN}


def basic_auth_forms(username: str, password: str) -> set[str]:
    """The base64 token of HTTP Basic auth for this pair (UTF-8, and Latin-1 when possible)."""
    out = set()
    for encoding in ("utf-8", "latin-1"):
        try:
            raw = f"{username}:{password}".encode(encoding)
        except UnicodeEncodeError:
            continue
        out.add(base64.b64encode(raw).decode("ascii"))
    return out


def remember(*values: str) -> None:
    """Register secrets loaded by this process so that :func:`redact` always masks them, in
    every form of :func:`forms`."""
    found = set().union(*(forms(v) for v in values)) if values else set()
    with _LOCK:
        _KNOWN.update(found)


def remember_basic_auth(username: str, password: str) -> None:
    """Register the Basic auth token of a user/password pair (sent as base64 on the wire)."""
    with _LOCK:
        _KNOWN.update(basic_auth_forms(username, password))


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
    for value in (*extra, *_env_secrets(os.environ if environ is None else environ)):
        known.update(forms(value))
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


def check_private(path: Path) -> None:
    """Refuse a credentials file that anyone but its owner may read or write (0600 or stricter).

    The message names the file, its mode and the command that fixes it, never the contents.
    """
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as exc:
        raise SecretError(f"cannot read credentials file {path}: {exc.strerror}") from None
    if mode & 0o077:
        raise SecretError(
            f"credentials file {path} has mode {mode:04o}: other users can "
            f"{'read' if mode & 0o044 else 'change'} it; it must be 0600 or stricter "
            f"(owner only). Fix: chmod 600 {path}"
        )


def read_credentials_file(path: Path) -> dict[str, str]:
    """The one reader of BMC and MAAS credentials files: owner-only mode checked, then parsed."""
    check_private(path)
    return read_env_file(path)


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
