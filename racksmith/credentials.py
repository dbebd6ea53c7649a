"""Who asks for which credential, and where it is looked for: one resolver for every service.

Each credential is one field with an explicit value (a module parameter, a CLI flag, a vault
value) and an environment variable name. Every field is resolved on its own, in one order:

1. the explicit value, when given;
2. the environment variable;
3. the same variable name in a ``KEY=VALUE`` credentials file (read only when 1 and 2 left a
   field empty, through :func:`racksmith.secrets.read_credentials_file`, which owns how the
   file is read and refuses one that others may read).

The Redfish modules, the Redfish inventory plugin, ``racksmith redfish``, the MAAS power
parameters (a BMC password handed to MAAS) and the MAAS API key (``racksmith.maas.auth``) all
call this module, so a password given on its own no longer drags the user name's lookup into
the password's (the copies used to disagree: a module given ``password`` with
``RACKSMITH_BMC_USERNAME`` set failed with "no BMC password"). Messages name the *source*
(``environment variable X``, ``X in FILE``), never a value.

Why not Ansible's ``env_fallback``: the variable names are options themselves
(``username_env``, ``password_env``), the CLI and the inventory plugins have no
``env_fallback``, and the file comes after the environment; one resolver keeps one order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from racksmith.secrets import (
    SecretError,
    expand_path,
    read_credentials_file,
    remember,
    remember_basic_auth,
)

BMC_USERNAME_ENV = "RACKSMITH_BMC_USERNAME"
BMC_PASSWORD_ENV = "RACKSMITH_BMC_PASSWORD"  # noqa: S105 (a variable name, not a secret)
MAAS_URL_ENV = "MAAS_URL"
MAAS_API_KEY_ENV = "MAAS_API_KEY"


class CredentialsError(SecretError):
    """Credentials could not be found; the message names where we looked, never a value."""


@dataclass(frozen=True)
class Found:
    """One resolved field: its value and where it came from (the source goes in messages)."""

    value: str = field(repr=False)
    source: str


@dataclass(frozen=True)
class Field:
    """A credential to look for: the explicit value (if any), its name for messages, and the
    environment variable (also the key in a credentials file)."""

    name: str
    env: str
    explicit: str | None = field(default=None, repr=False)


def resolve(
    fields: tuple[Field, ...],
    *,
    credentials_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Found | None]:
    """Each field's value by the order in the module docstring; None where nothing has it.

    ``credentials_file`` may use ``~`` and ``${VAR:-default}``; it is read at most once, and
    only when a field is still empty after the explicit values and the environment.
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Found | None] = {}
    for wanted in fields:
        if wanted.explicit:
            out[wanted.name] = Found(wanted.explicit, wanted.name)
        elif environ.get(wanted.env):
            out[wanted.name] = Found(environ[wanted.env], f"environment variable {wanted.env}")
        else:
            out[wanted.name] = None
    missing = [f for f in fields if out[f.name] is None]
    if missing and credentials_file:
        path = expand_path(str(credentials_file))
        try:
            values = read_credentials_file(path)
        except SecretError as exc:
            raise CredentialsError(str(exc)) from None
        for wanted in missing:
            if values.get(wanted.env):
                out[wanted.name] = Found(values[wanted.env], f"{wanted.env} in {path}")
    return out


@dataclass(frozen=True)
class BmcCredentials:
    """A BMC user name and password; the password never shows in repr, str or tracebacks.

    Code that needs the value calls :meth:`password_value` at the one place it builds an HTTP
    request (or hands it to MAAS). Every password is registered with :mod:`racksmith.secrets`,
    whose ``redact`` is the last line of defence for text from outside.
    """

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


def bmc(
    *,
    username: str | None = None,
    password: str | None = None,
    username_env: str | None = None,
    password_env: str | None = None,
    credentials_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> BmcCredentials:
    """BMC credentials: each of user name and password by :func:`resolve`'s order."""
    username_env = username_env or BMC_USERNAME_ENV
    password_env = password_env or BMC_PASSWORD_ENV
    found = resolve(
        (Field("username", username_env, username), Field("password", password_env, password)),
        credentials_file=credentials_file,
        environ=environ,
    )
    where = f" or {credentials_file}" if credentials_file else ""
    if found["username"] is None:
        raise CredentialsError(
            f"no BMC user name: set username, environment variable {username_env}{where}"
        )
    if found["password"] is None:
        raise CredentialsError(
            f"no BMC password: set password, environment variable {password_env}{where}"
        )
    return BmcCredentials(found["username"].value, found["password"].value)


def bmc_from_params(
    params: Mapping[str, object], environ: Mapping[str, str] | None = None
) -> BmcCredentials:
    """:func:`bmc` from a Redfish module's params or a CLI namespace's ``vars()``
    (``username``, ``password``, ``username_env``, ``password_env``, ``credentials_file``,
    each optional: the options of :mod:`racksmith.redfish.options`)."""

    def get(name: str) -> str | None:
        value = params.get(name)
        return str(value) if value else None

    return bmc(
        username=get("username"),
        password=get("password"),
        username_env=get("username_env"),
        password_env=get("password_env"),
        credentials_file=get("credentials_file"),
        environ=environ,
    )


def maas_api(
    *,
    url: str | None = None,
    api_key: str | None = None,
    credentials_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Found | None, Found | None]:
    """The MAAS URL and API key by :func:`resolve`'s order (``MAAS_URL``, ``MAAS_API_KEY``);
    ``racksmith.maas.auth`` checks and parses them."""
    found = resolve(
        (Field("url", MAAS_URL_ENV, url), Field("api_key", MAAS_API_KEY_ENV, api_key)),
        credentials_file=credentials_file,
        environ=environ,
    )
    return found["url"], found["api_key"]
