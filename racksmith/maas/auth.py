"""MAAS API keys and the OAuth 1.0 PLAINTEXT ``Authorization`` header.

MAAS authenticates API calls with OAuth 1.0 in PLAINTEXT mode (maas-api.md §1): the signature
is the consumer secret (always empty) and the token secret joined by ``&``. It is simple
enough to build by hand, as gomaasapi and the maas.maas collection do, which keeps this module
free of oauthlib and runnable inside an Ansible module. Every attempt gets a fresh nonce and
timestamp because MAAS refuses a reused nonce.

Where the URL and key come from (explicit value, environment, or a ``KEY=VALUE`` credentials
file such as the lab's ``secrets/maas.env``, path may use
``${RACKSMITH_LAB_DIR:-/var/lib/racksmith/lab}``) is decided by :mod:`racksmith.credentials`,
the one resolver BMC credentials use too; this module checks and parses what it found, so the
modules, the inventory plugin and the CLI name the *source* when something is wrong, never
the value.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from racksmith.credentials import CredentialsError, maas_api
from racksmith.maas.errors import MaasConfigError
from racksmith.secrets import MASK, redact, remember

REDACTED = MASK


def _escape(value: str) -> str:
    """RFC 5849 §3.6 percent-encoding (unreserved characters only are left alone)."""
    return quote(value, safe="~")


@dataclass(frozen=True)
class ApiKey:
    """A MAAS API key ``consumer_key:token_key:token_secret``; its repr never shows it."""

    consumer_key: str
    token_key: str
    token_secret: str

    @classmethod
    def parse(cls, text: str, *, source: str = "MAAS API key") -> ApiKey:
        parts = (text or "").strip().split(":")
        if len(parts) != 3 or not all(parts):
            raise MaasConfigError(
                f"{source} must have the form consumer_key:token_key:token_secret "
                f"(got {len(parts)} non-empty part(s) separated by ':')"
            )
        return cls(*parts)

    def __post_init__(self) -> None:
        remember(*self.secrets())  # racksmith.secrets.redact masks the key wherever it shows up

    def __repr__(self) -> str:
        return f"ApiKey({REDACTED})"

    __str__ = __repr__

    def secrets(self) -> tuple[str, ...]:
        """The strings that must never leave this process: the key and each of its parts."""
        whole = f"{self.consumer_key}:{self.token_key}:{self.token_secret}"
        return (whole, self.token_secret, self.token_key, self.consumer_key)

    def redact(self, text: str) -> str:
        """Every form of the key and its parts (raw, escaped, percent-encoded) masked."""
        return redact(text, extra=self.secrets())

    def authorization(self, *, timestamp: int, nonce: str | None = None) -> str:
        """The ``Authorization`` header value for one attempt (never reuse it)."""
        nonce = nonce or str(secrets.randbelow(10**29))
        signature = f"{_escape('')}&{_escape(self.token_secret)}"
        params = (
            ("oauth_nonce", nonce),
            ("oauth_timestamp", str(timestamp)),
            ("oauth_version", "1.0"),
            ("oauth_signature_method", "PLAINTEXT"),
            ("oauth_consumer_key", self.consumer_key),
            ("oauth_token", self.token_key),
            ("oauth_signature", signature),
        )
        return 'OAuth realm="OAuth", ' + ", ".join(f'{k}="{_escape(v)}"' for k, v in params)


@dataclass(frozen=True)
class Credentials:
    """Where to reach MAAS and the key to sign with; repr hides the key."""

    url: str
    key: ApiKey


def resolve_credentials(
    url: str | None = None,
    api_key: str | None = None,
    credentials_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """Explicit values first, then ``MAAS_URL`` / ``MAAS_API_KEY``, then the credentials file
    (:func:`racksmith.credentials.maas_api`, the resolver every service shares)."""
    try:
        url, api_key = maas_api(
            url=url, api_key=api_key, credentials_file=credentials_file, environ=environ
        )
    except CredentialsError as exc:
        raise MaasConfigError(str(exc)) from None
    if url is None:
        raise MaasConfigError(
            "no MAAS URL: set MAAS_URL (e.g. http://maas:5240/MAAS/) or pass url/credentials_file"
        )
    if api_key is None:
        raise MaasConfigError("no MAAS API key: set MAAS_API_KEY or pass api_key/credentials_file")
    if not url.value.startswith(("http://", "https://")):
        raise MaasConfigError(f"{url.source} must start with http:// or https://")
    return Credentials(url=url.value, key=ApiKey.parse(api_key.value, source=api_key.source))
