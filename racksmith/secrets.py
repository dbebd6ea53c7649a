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

:func:`read_credentials_file` is the one way a credentials file is read (BMC, MAAS, UFM), the
way ssh reads a private key: never through a link, never blocking, only a regular file owned by
the user or root, 0600 or stricter, in a directory no one else may change, with a size cap and
a time bound. Every refusal names the file and the fix.
"""

from __future__ import annotations

import base64
import errno
import html
import json
import os
import re
import stat
import threading
import time
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


#: Largest credentials file read: a few KEY=VALUE lines; anything bigger is not one.
MAX_CREDENTIALS_BYTES = 64 << 10
#: Seconds a credentials file may take to read (a regular file on a hung network mount).
READ_SECONDS = 1.0
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _read_fd(fd: int, path: Path, max_bytes: int, seconds: float) -> bytes:
    """At most ``max_bytes`` from an open regular file, within ``seconds``."""
    end = time.monotonic() + seconds
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(fd, 16 << 10)
        except OSError as exc:  # EAGAIN cannot come from a regular file: never wait for one
            raise SecretError(f"cannot read credentials file {path}: {exc.strerror}") from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise SecretError(
                f"credentials file {path} is larger than {max_bytes} bytes: it is not a "
                f"KEY=VALUE credentials file. Fix: point at the right file"
            )
        chunks.append(chunk)
        if time.monotonic() > end:
            raise SecretError(
                f"credentials file {path} could not be read within {seconds:g}s. "
                "Fix: copy it to a local disk"
            )


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SecretError(
            f"credentials file {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line "
            f"{line}). Fix: save it as UTF-8, e.g. iconv -f latin1 -t utf-8"
        ) from None


def parse_env_text(text: str, source: Path | str) -> dict[str, str]:
    """Parse ``KEY=VALUE`` lines; quotes around values and ``export`` are removed. Errors name
    ``source`` and the line, never a value."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        if not sep or not key.isidentifier():
            raise SecretError(
                f"{source}:{number}: expected KEY=VALUE (a name of letters, digits and _, then "
                "=; '#' starts a comment)"
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def _open(path: Path, flags: int, dir_fd: int | None = None, named: Path | None = None) -> int:
    """``os.open`` whose errors name the credentials file (``named``, default ``path``)."""
    try:
        return os.open(path if dir_fd is None else path.name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SecretError(
                f"credentials file {path} is a symbolic link; links are not followed. "
                f"Fix: give the real path ({os.path.realpath(path)})"
            ) from None
        raise SecretError(
            f"cannot read credentials file {named or path}: {exc.strerror}. Fix: check the "
            f"path, and that uid {os.geteuid()} may read it"
        ) from None


def read_env_file(path: Path) -> dict[str, str]:
    """Parse a ``KEY=VALUE`` file racksmith wrote itself (the lab's): bounded like
    :func:`read_credentials_file` (never blocks, never reads past the cap, never a device) but
    without the owner checks, which the lab's own files pass anyway."""
    fd = _open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SecretError(f"credentials file {path} is {_kind(info.st_mode)}")
        data = _read_fd(fd, path, MAX_CREDENTIALS_BYTES, READ_SECONDS)
    finally:
        os.close(fd)
    return parse_env_text(_decode(data, path), path)


def _owner_ok(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _check_directories(path: Path, dir_fd: int) -> None:
    """The file's directory: owned by the user or root, writable by no one else (else someone
    else could swap the file). Its ancestors alike, except that a sticky ancestor (``/tmp``)
    may be shared: there no one else can rename the entry of ours below it. The file's own
    directory is refused when shared even if sticky, as ssh's StrictModes does."""
    info = os.fstat(dir_fd)
    where = path.parent
    if not _owner_ok(info.st_uid) or info.st_mode & 0o022:
        problem = (
            f"is owned by uid {info.st_uid}"
            if not _owner_ok(info.st_uid)
            else f"has mode {stat.S_IMODE(info.st_mode):04o} (group or others may replace "
            "files in it)"
        )
        raise SecretError(
            f"credentials file {path}: its directory {where} {problem}; a credentials file must "
            f"sit in a directory only its owner may change. Fix: move it to a private directory "
            f"(mkdir -m 700 DIR) or chmod go-w {where}"
        )
    for ancestor in Path(os.path.realpath(where)).parents:
        try:
            up = os.stat(ancestor)
        except OSError:
            continue
        shared = up.st_mode & 0o022 and not (up.st_mode & stat.S_ISVTX)
        if not _owner_ok(up.st_uid) or shared:
            what = "writable by group or others" if shared else f"owned by uid {up.st_uid}"
            raise SecretError(
                f"credentials file {path}: the directory {ancestor} above it is {what}; someone "
                "else could swap the file. Fix: move the file to a private directory"
            )


def _check_file(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(
            f"credentials file {path} is {_kind(info.st_mode)}, not a regular file; refused "
            "unread. Fix: give a regular KEY=VALUE file (mode 0600)"
        )
    if not _owner_ok(info.st_uid):
        raise SecretError(
            f"credentials file {path} is owned by uid {info.st_uid}, not by the user running "
            f"racksmith (uid {os.geteuid()}) or root; someone else controls its contents. "
            f"Fix: chown {os.geteuid()} {path} (after checking what is in it)"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise SecretError(
            f"credentials file {path} has mode {mode:04o}: other users can "
            f"{'read' if mode & 0o044 else 'change'} it; it must be 0600 or stricter "
            f"(owner only). Fix: chmod 600 {path}"
        )


def check_private(path: Path) -> None:
    """Refuse a credentials file that is not a regular file owned by the user (or root),
    0600 or stricter, in a directory only its owner may change. The message names the file,
    what is wrong and the command that fixes it, never the contents."""
    read_credentials_file(path, parse=False)


def read_credentials_file(path: Path, *, parse: bool = True) -> dict[str, str]:
    """The one reader of BMC and MAAS credentials files, as ssh reads keys.

    The directory is opened first and checked (owner, not writable by others), the file is
    opened in it without following a link and without blocking (a FIFO with no writer hung the
    CLI forever), then checked on the open descriptor (a regular file, owned by the user or
    root, 0600 or stricter: nothing can be swapped between check and read), and read with a
    size cap and a time bound (``/dev/zero`` read until MemoryError). Every error names the
    file and the fix.
    """
    path = Path(path)
    dir_fd = _open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, named=path)
    try:
        _check_directories(path, dir_fd)
        fd = _open(path, _OPEN_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        _check_file(path, os.fstat(fd))
        data = _read_fd(fd, path, MAX_CREDENTIALS_BYTES, READ_SECONDS)
    finally:
        os.close(fd)
    return parse_env_text(_decode(data, path), path) if parse else {}


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
