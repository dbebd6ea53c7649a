"""What the ``redfish_*`` Ansible modules share: one argument spec, one way to connect, one way
to report. Kept here (not in ``module_utils``) because the modules run on the controller under
the same interpreter as racksmith, and so the modules stay a screen long each. The options are
defined once, in :mod:`racksmith.redfish.options`, which also produces the text of
``plugins/doc_fragments/racksmith_redfish.py`` and the CLI options.

Credentials: ``password`` is ``no_log``; when it is not given it comes from the environment
variable (default ``RACKSMITH_BMC_PASSWORD``) or a ``credentials_file``, so playbooks can pass
credentials by reference and never hold them in a variable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from racksmith.optionspec import argument_spec
from racksmith.redfish import credentials, options, targets
from racksmith.redfish.actions import ActionResult
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.errors import RedfishError
from racksmith.secrets import redact

COMMON_ARGUMENTS: dict[str, dict[str, Any]] = argument_spec(options.MODULE)


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
    found = targets.parse(params["bmc"], allow_names=bool(params.get("allow_names")))
    if len(found) != 1:
        raise ValueError(
            f"bmc {params['bmc']!r} names {len(found)} BMCs; a module acts on exactly one"
        )
    client_options = ClientOptions(
        scheme=params["scheme"],
        verify=params["validate_certs"],
        ca_bundle=params.get("ca_bundle"),
        connect_timeout=params["connect_timeout"],
        read_timeout=params["read_timeout"],
        retries=params["retries"],
        auth=params["auth"],
        max_answer_bytes=params["max_answer_bytes"],
    )
    # An action that waits (power: ``wait``) gets its wait on top of the request deadline.
    budget = params["deadline"] + float(params.get("wait") or 0)
    return RedfishClient(found[0], _credentials(params), client_options, deadline=Deadline(budget))


def run(module: Any, action: Callable[[RedfishClient], ActionResult]) -> None:
    """Connect, run ``action``, and exit the module with changed/before/after or a reason."""
    try:
        client = client_from_params(module.params)
    except (ValueError, targets.TargetError, credentials.CredentialsError) as exc:
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
