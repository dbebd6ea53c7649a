"""Helpers of the security suite (a module with a unique name: test directories of other
areas cannot shadow it)."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

from racksmith.redfish.client import ClientOptions
from racksmith.redfish.discover import DiscoveryOptions

#: Slack on top of a deadline for thread start-up and a busy CI machine.
MARGIN = 1.5
DEADLINE = 1.0

#: Passwords that break naive redaction: quotes, backslashes, non-ASCII, '%', '+', '/', long.
NASTY = [
    'pa"ss\\word-1',
    "ünïcødé-€-pässwörd",
    "100%sure+/=&key",
    "it's <b>&amp;</b>",
    "L" * 40 + '"\\/' + "ø" * 40,
]


def leaked_forms(secret: str, username: str | None = None) -> dict[str, str]:
    """Every spelling of ``secret`` that must never appear in output, by name."""
    forms = {
        "raw": secret,
        "json": json.dumps(secret)[1:-1],
        "json-unicode": json.dumps(secret, ensure_ascii=False)[1:-1],
        "double-json": json.dumps(json.dumps(secret)[1:-1])[1:-1],
        "url": quote(secret, safe=""),
        "url-plus": quote_plus(secret, safe=""),
        "url-oauth": quote(secret, safe="~"),
        "oauth-header": quote(quote(secret, safe="~"), safe="~"),
    }
    if username is not None:
        forms["basic"] = base64.b64encode(f"{username}:{secret}".encode()).decode()
    return forms


def assert_no_secret(text: str, secret: str, username: str | None = None) -> None:
    found = [name for name, form in leaked_forms(secret, username).items() if form in text]
    assert not found, f"secret leaked in form(s) {found}: {text[:300]!r}"


def redfish_options(
    *, deadline: float = DEADLINE, auth: str = "session", **client: float
) -> DiscoveryOptions:
    """Discovery over plain HTTP with short limits (hostile servers are local)."""
    client.setdefault("connect_timeout", 1.0)
    client.setdefault("read_timeout", 5.0)
    client.setdefault("retries", 0)
    return DiscoveryOptions(
        client=ClientOptions(scheme="http", auth=auth, **client), deadline=deadline
    )
