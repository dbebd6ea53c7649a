"""BMC credentials for the Redfish service: the names it has always used, resolved by the one
resolver in :mod:`racksmith.credentials` (core, shared with MAAS's power parameters)."""

from __future__ import annotations

from pathlib import Path

from racksmith.credentials import (
    BMC_PASSWORD_ENV as DEFAULT_PASSWORD_ENV,
)
from racksmith.credentials import (
    BMC_USERNAME_ENV as DEFAULT_USERNAME_ENV,
)
from racksmith.credentials import (
    BmcCredentials as Credentials,
)
from racksmith.credentials import (
    CredentialsError,
    bmc,
)

__all__ = [
    "DEFAULT_PASSWORD_ENV",
    "DEFAULT_USERNAME_ENV",
    "Credentials",
    "CredentialsError",
    "from_env",
]


def from_env(
    username_env: str = DEFAULT_USERNAME_ENV,
    password_env: str = DEFAULT_PASSWORD_ENV,
    *,
    env_file: Path | None = None,
    username: str | None = None,
) -> Credentials:
    """Credentials from the environment, then ``env_file``; ``username`` given wins."""
    return bmc(
        username=username,
        username_env=username_env,
        password_env=password_env,
        credentials_file=env_file,
    )
