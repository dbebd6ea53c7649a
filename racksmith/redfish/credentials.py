"""BMC credentials: passed by reference (environment, env file, Vault), held so they cannot leak.

A :class:`Credentials` object never shows its password in ``repr``, ``str``, f-strings or
tracebacks; code that needs the value calls :meth:`Credentials.password_value` at the one place
it builds an HTTP request. :func:`redact` is the last line of defence for text that mixes in
anything received from outside (exception messages from the HTTP stack).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_USERNAME_ENV = "RACKSMITH_BMC_USERNAME"
DEFAULT_PASSWORD_ENV = "RACKSMITH_BMC_PASSWORD"  # noqa: S105 (a variable name, not a secret)

# Every password that has been loaded in this process, so redact() can scrub text that never
# passed through a Credentials object (for example an exception string from urllib3).
_KNOWN_SECRETS: set[str] = set()
_LOCK = threading.Lock()


class CredentialsError(ValueError):
    """Credentials could not be found; the message names where we looked, never a value."""


@dataclass(frozen=True)
class Credentials:
    username: str
    _password: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.username:
            raise CredentialsError("BMC user name is empty")
        if not self._password:
            raise CredentialsError("BMC password is empty")
        with _LOCK:
            _KNOWN_SECRETS.add(self._password)

    def password_value(self) -> str:
        """The password itself: call only where a request body or auth header is built."""
        return self._password

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=<redacted>)"

    __str__ = __repr__


def redact(text: str) -> str:
    """Replace every password this process has loaded, and any Basic/Token header, by ``***``."""
    with _LOCK:
        secrets = sorted(_KNOWN_SECRETS, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, "***")
    text = re.sub(
        r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)(basic|bearer)\s+[^\s'\",}]+", r"\1\2 ***", text
    )
    return re.sub(r"(?i)(x-auth-token['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+", r"\1***", text)


def read_env_file(path: Path) -> dict[str, str]:
    """Parse a ``KEY=VALUE`` file (the lab's ``secrets/bmc.env``); quotes around values are
    removed."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise CredentialsError(f"cannot read credentials file {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CredentialsError(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip().removeprefix("export ").strip()] = value
    return values


def from_env(
    username_env: str = DEFAULT_USERNAME_ENV,
    password_env: str = DEFAULT_PASSWORD_ENV,
    *,
    env_file: Path | None = None,
    username: str | None = None,
) -> Credentials:
    """Credentials from environment variables, falling back to an env file when one is given.

    ``username`` overrides the variable (user names are not secret); the password only ever
    comes from the environment or the file, never from a command line or inventory value.
    """
    file_values: dict[str, str] = {}
    if env_file is not None and env_file.exists():
        file_values = read_env_file(env_file)
    user = username or os.environ.get(username_env) or file_values.get(username_env)
    password = os.environ.get(password_env) or file_values.get(password_env)
    where = f"environment variable {{}}{f' or {env_file}' if env_file else ''}"
    if not user:
        raise CredentialsError(f"no BMC user name: set {where.format(username_env)}")
    if not password:
        raise CredentialsError(f"no BMC password: set {where.format(password_env)}")
    return Credentials(user, password)


def expand_path(value: str) -> Path:
    """Expand ``~``, ``$VAR`` and ``${VAR:-default}`` in a configured path."""

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        return os.environ.get(name) or (default if default is not None else "")

    value = re.sub(r"\$\{(\w+):-([^}]*)\}", sub, value)
    return Path(os.path.expanduser(os.path.expandvars(value)))
