"""BMC credentials: passed by reference (environment, env file, Vault), held so they cannot leak.

A :class:`Credentials` object never shows its password in ``repr``, ``str``, f-strings or
tracebacks; code that needs the value calls :meth:`Credentials.password_value` at the one place
it builds an HTTP request. Every password is registered with :mod:`racksmith.secrets`, whose
``redact`` is the last line of defence for text from outside (HTTP stack exceptions).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from racksmith.secrets import SecretError, read_credentials_file, remember, remember_basic_auth

DEFAULT_USERNAME_ENV = "RACKSMITH_BMC_USERNAME"
DEFAULT_PASSWORD_ENV = "RACKSMITH_BMC_PASSWORD"  # noqa: S105 (a variable name, not a secret)


class CredentialsError(SecretError):
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
        remember(self._password)  # so redact() scrubs it from any text, whatever its path
        remember_basic_auth(self.username, self._password)  # and its base64 Basic auth form

    def password_value(self) -> str:
        """The password itself: call only where a request body or auth header is built."""
        return self._password

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password=<redacted>)"

    __str__ = __repr__


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
        try:
            file_values = read_credentials_file(env_file)
        except SecretError as exc:
            raise CredentialsError(str(exc)) from None
    user = username or os.environ.get(username_env) or file_values.get(username_env)
    password = os.environ.get(password_env) or file_values.get(password_env)
    where = f"environment variable {{}}{f' or {env_file}' if env_file else ''}"
    if not user:
        raise CredentialsError(f"no BMC user name: set {where.format(username_env)}")
    if not password:
        raise CredentialsError(f"no BMC password: set {where.format(password_env)}")
    return Credentials(user, password)
