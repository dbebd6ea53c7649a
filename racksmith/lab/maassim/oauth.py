"""The server side of MAAS's OAuth 1.0 PLAINTEXT check, as django-piston3 0.3rc2 does it.

Written independently of the client's signer (``racksmith.maas.auth``) so that a mistake in
one is not mirrored by the other; python-libmaas (oauthlib) signs against this too.

Checks, in piston's order (maas-api.md §1): all six parameters present and ``oauth_version``
1.0 if sent; the consumer key, then the token; the timestamp (one-sided: more than 300 s in
the past fails, a clock ahead of ours passes); the nonce (reuse fails); the signature.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from urllib.parse import unquote

WINDOW = 300
REQUIRED = (
    "oauth_consumer_key",
    "oauth_token",
    "oauth_signature",
    "oauth_signature_method",
    "oauth_timestamp",
    "oauth_nonce",
)
_PARAM = re.compile(r'([a-z_]+)="([^"]*)"')


class AuthFailure(Exception):
    """401 with this text as the body (already in MAAS's ``Authorization Error: ...`` form)."""


@dataclass(frozen=True)
class User:
    username: str
    consumer_key: str
    token_key: str
    token_secret: str
    is_superuser: bool

    @property
    def api_key(self) -> str:
        return f"{self.consumer_key}:{self.token_key}:{self.token_secret}"


def parse_header(value: str) -> dict[str, str]:
    if not value.startswith("OAuth "):
        raise AuthFailure("Authorization Error: 'Unsupported authorization scheme'")
    return {k: unquote(v) for k, v in _PARAM.findall(value[6:]) if k != "realm"}


class NonceStore:
    """Nonces seen within the window (MAAS stores them in the DB and cleans them up later)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], float] = {}
        self._lock = threading.Lock()

    def use(self, consumer: str, token: str, nonce: str, now: float) -> bool:
        """Record the nonce; False if it was already used."""
        key = (consumer, token, nonce)
        with self._lock:
            if len(self._seen) > 50_000:
                self._seen = {k: t for k, t in self._seen.items() if now - t <= 2 * WINDOW}
            if key in self._seen:
                return False
            self._seen[key] = now
            return True


def verify(header: str, users: dict[str, User], nonces: NonceStore, now: float) -> User:
    """The user the request is signed as, or AuthFailure with MAAS's 401 body."""
    params = parse_header(header)
    missing = [p for p in REQUIRED if not params.get(p)]
    if missing:
        raise AuthFailure(f"Authorization Error: 'Missing OAuth parameters: {', '.join(missing)}'")
    if params.get("oauth_version", "1.0") != "1.0":
        raise AuthFailure(
            f"Authorization Error: 'OAuth version {params['oauth_version']} not supported.'"
        )
    user = next((u for u in users.values() if u.consumer_key == params["oauth_consumer_key"]), None)
    if user is None:
        raise AuthFailure("Authorization Error: Invalid API key.")
    if user.token_key != params["oauth_token"]:
        raise AuthFailure(f"Authorization Error: 'Invalid access token: {params['oauth_token']}'")
    try:
        timestamp = int(params["oauth_timestamp"])
    except ValueError:
        raise AuthFailure("Authorization Error: 'Invalid timestamp'") from None
    if int(now) - timestamp > WINDOW:
        raise AuthFailure(
            f"Authorization Error: 'Expired timestamp: given {timestamp} and now {int(now)} "
            f"has a greater difference than threshold {WINDOW}'"
        )
    if not nonces.use(user.consumer_key, user.token_key, params["oauth_nonce"], now):
        raise AuthFailure(f"Authorization Error: 'Nonce already used: {params['oauth_nonce']}'")
    if params["oauth_signature_method"] != "PLAINTEXT":
        raise AuthFailure("Authorization Error: 'Signature method not supported'")
    # PLAINTEXT: escape(consumer_secret) & escape(token_secret); the consumer secret is "".
    consumer_secret, _, token_secret = params["oauth_signature"].partition("&")
    if consumer_secret != "" or unquote(token_secret) != user.token_secret:
        raise AuthFailure("Authorization Error: 'Invalid signature'")
    return user
