"""A small client of UFM's REST API (``/ufmRest``), basic authentication, on ``requests``.

Calls used (health-checks.md §7): ``GET resources/ports``, ``GET app/events``,
``GET/PUT app/unhealthy_ports`` (isolate with ``ports_policy: UNHEALTHY``, restore with
``HEALTHY``) and ``POST actions`` (``disable``/``enable`` of one port; UFM documents the body
for ``reset``; the same body for disable/enable is an inference, so isolation through
``unhealthy_ports`` is the default).

Credentials come from ``UFM_URL``/``UFM_USERNAME``/``UFM_PASSWORD`` or a ``KEY=VALUE`` file;
the password is registered with :mod:`racksmith.secrets` and never appears in messages. The
URL is held to the address rule every endpoint shares (:func:`racksmith.transport.check_url`:
names allowed, numeric short forms such as ``127.1`` refused, no userinfo), and the Basic auth
goes to that origin only: no redirect is followed, no proxy or ``.netrc`` is picked up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from racksmith import secrets, transport
from racksmith.errors import UsageError
from racksmith.fabric.errors import UfmError

TIMEOUT = (10.0, 60.0)


@dataclass(frozen=True)
class UfmCredentials:
    url: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"UfmCredentials(url={self.url!r}, username={self.username!r}, password=***)"


def resolve(
    url: str | None = None, credentials_file: str | None = None, environ=None
) -> UfmCredentials:
    env = dict(os.environ if environ is None else environ)
    if credentials_file:
        try:
            env.update(secrets.read_credentials_file(Path(credentials_file)))
        except (OSError, secrets.SecretError) as exc:
            raise UsageError(f"{credentials_file}: {exc}") from None
    url = url or env.get("UFM_URL", "")
    user, password = env.get("UFM_USERNAME", ""), env.get("UFM_PASSWORD", "")
    if not url or not user or not password:
        raise UsageError(
            "UFM needs --ufm-url (or UFM_URL) and UFM_USERNAME/UFM_PASSWORD in the environment "
            "or in --credentials FILE"
        )
    try:
        transport.check_url(url, "UFM URL")
    except transport.AddressError as exc:
        raise UsageError(str(exc)) from None
    secrets.remember(password)
    secrets.remember_basic_auth(user, password)
    return UfmCredentials(url.rstrip("/"), user, password)


class UfmClient:
    def __init__(self, creds: UfmCredentials, verify: bool | str = True, timeout=TIMEOUT):
        self.base = creds.url + "/ufmRest/"
        self.session = transport.session()  # no proxies or .netrc from the environment
        self.session.auth = (creds.username, creds.password)
        self.session.verify = verify
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None, ok=(200,)) -> requests.Response:
        try:
            resp = self.session.request(
                method, self.base + path, json=body, timeout=self.timeout, allow_redirects=False
            )
        except requests.RequestException as exc:
            raise UfmError(secrets.redact(f"UFM {method} /ufmRest/{path}: {exc}")) from None
        if resp.status_code not in ok:
            text = secrets.redact(resp.text[:200].strip())
            raise UfmError(f"UFM {method} /ufmRest/{path}: HTTP {resp.status_code} {text}")
        return resp

    def _json(self, path: str) -> Any:
        resp = self._call("GET", path)
        try:
            return resp.json()
        except ValueError:
            raise UfmError(f"UFM GET /ufmRest/{path}: the reply is not JSON") from None

    def ports(self) -> list[dict]:
        return list(self._json("resources/ports"))

    def events(self) -> list[dict]:
        return list(self._json("app/events"))

    def unhealthy(self) -> list[dict]:
        return list(self._json("app/unhealthy_ports"))

    def isolate(self, ports: list[str]) -> None:
        body = {"ports": ports, "ports_policy": "UNHEALTHY", "action": "isolate"}
        self._call("PUT", "app/unhealthy_ports", body, ok=(200, 202, 204))

    def restore(self, ports: list[str]) -> None:
        self._call(
            "PUT",
            "app/unhealthy_ports",
            {"ports": ports, "ports_policy": "HEALTHY"},
            ok=(200, 202, 204),
        )

    def port_action(self, system_guid: str, port: str, action: str) -> str:
        """``disable``/``enable``/``reset`` one port; returns the job's Location."""
        body = {
            "params": {"port_id": port},
            "action": action,
            "object_ids": [system_guid],
            "object_type": "System",
            "description": "racksmith fabric",
            "identifier": "id",
        }
        resp = self._call("POST", "actions", body, ok=(202,))
        return resp.headers.get("Location", "")
