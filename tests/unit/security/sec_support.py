"""Helpers of the security suite (a module with a unique name: test directories of other
areas cannot shadow it)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import yaml

from racksmith.redfish.client import ClientOptions
from racksmith.redfish.discover import DiscoveryOptions

REPO = Path(__file__).resolve().parents[3]

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


def module_params(address: str, **overrides: object) -> dict:
    """A Redfish module's params (as Ansible hands them to client_from_params) for one BMC
    over plain HTTP, credentials from the environment, short limits."""
    params = {
        "bmc": address,
        "username": None,
        "password": None,
        "username_env": "RACKSMITH_BMC_USERNAME",
        "password_env": "RACKSMITH_BMC_PASSWORD",
        "credentials_file": None,
        "ca_bundle": None,
        "validate_certs": True,
        "scheme": "http",
        "auth": "basic",
        "connect_timeout": 1.0,
        "read_timeout": 5.0,
        "retries": 0,
        "deadline": DEADLINE,
        "allow_names": False,
        "max_answer_bytes": 4 << 20,
    }
    params.update(overrides)
    return params


def redfish_inventory(tmp_path: Path, source: dict) -> subprocess.CompletedProcess:
    """``ansible-inventory --list`` over one racksmith.core.redfish source (``source`` as
    YAML), with this checkout's plugin and nothing from the caller's environment."""
    path = tmp_path / "redfish.yml"
    path.write_text(yaml.safe_dump({"plugin": "racksmith.core.redfish", **source}))
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(
        f"[defaults]\ninventory_plugins = {REPO / 'plugins' / 'inventory'}\n"
        "[inventory]\nenable_plugins = racksmith.core.redfish\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))}
    env.update(ANSIBLE_CONFIG=str(cfg), HOME=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path))
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(path), "--list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
