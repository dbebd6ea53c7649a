"""What the ``redfish_*`` Ansible modules share: one argument spec, one way to connect, one way
to report. Kept here (not in ``module_utils``) because the modules run on the controller under
the same interpreter as racksmith, and so the modules stay a screen long each. The options are
documented once, in ``plugins/doc_fragments/racksmith_redfish.py``.

Credentials: ``password`` is ``no_log``; when it is not given it comes from the environment
variable (default ``RACKSMITH_BMC_PASSWORD``) or a ``credentials_file``, so playbooks can pass
credentials by reference and never hold them in a variable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from racksmith.redfish import credentials, targets
from racksmith.redfish.actions import ActionResult
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.errors import RedfishError
from racksmith.secrets import redact

COMMON_ARGUMENTS: dict[str, dict[str, Any]] = {
    "bmc": {"type": "str", "required": True},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "username_env": {"type": "str", "default": credentials.DEFAULT_USERNAME_ENV},
    "password_env": {"type": "str", "default": credentials.DEFAULT_PASSWORD_ENV, "no_log": False},
    "credentials_file": {"type": "path"},
    "ca_bundle": {"type": "path"},
    "validate_certs": {"type": "bool", "default": True},
    "scheme": {"type": "str", "default": "https", "choices": ["https", "http"]},
    "connect_timeout": {"type": "float", "default": 5.0},
    "read_timeout": {"type": "float", "default": 30.0},
    "deadline": {"type": "float", "default": 300.0},
}


def _credentials(params: dict[str, Any]) -> credentials.Credentials:
    env_file = Path(params["credentials_file"]) if params.get("credentials_file") else None
    if params.get("password"):
        user = (
            params.get("username")
            or credentials.from_env(
                params["username_env"], params["password_env"], env_file=env_file
            ).username
        )
        return credentials.Credentials(user, params["password"])
    return credentials.from_env(
        params["username_env"],
        params["password_env"],
        env_file=env_file,
        username=params.get("username"),
    )


def client_from_params(params: dict[str, Any]) -> RedfishClient:
    found = targets.parse(params["bmc"])
    if len(found) != 1:
        raise ValueError(
            f"bmc {params['bmc']!r} names {len(found)} BMCs; a module acts on exactly one"
        )
    options = ClientOptions(
        scheme=params["scheme"],
        verify=params["validate_certs"],
        ca_bundle=params.get("ca_bundle"),
        connect_timeout=params["connect_timeout"],
        read_timeout=params["read_timeout"],
    )
    return RedfishClient(
        found[0], _credentials(params), options, deadline=Deadline(params["deadline"])
    )


def run(module: Any, action: Callable[[RedfishClient], ActionResult]) -> None:
    """Connect, run ``action``, and exit the module with changed/before/after or a reason."""
    try:
        client = client_from_params(module.params)
    except (ValueError, credentials.CredentialsError) as exc:
        module.fail_json(msg=redact(str(exc)))
        return
    try:
        with client:
            result = action(client)
    except RedfishError as exc:
        module.fail_json(msg=exc.reason, error_kind=exc.kind.value, bmc=str(client.target))
        return
    for warning in result.warnings:
        module.warn(warning)
    module.exit_json(
        msg=result.message,
        bmc=str(client.target),
        **{k: v for k, v in result.as_dict().items() if k not in ("message", "warnings")},
    )
