"""What the ``redfish_*`` Ansible modules share: one argument spec, one way to connect, one way
to report. Kept here (not in ``module_utils``) because the modules run on the controller under
the same interpreter as racksmith, and so the modules stay a screen long each. The options are
defined once, in :mod:`racksmith.redfish.options`, which also produces the text of
``plugins/doc_fragments/racksmith_redfish.py`` and the CLI options.

Credentials: ``password`` is ``no_log``; user name and password are each resolved by
:mod:`racksmith.credentials` (the value given, then ``username_env``/``password_env``, then
``credentials_file``), so playbooks can pass credentials by reference and never hold them in a
variable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from racksmith import credentials
from racksmith.optionspec import argument_spec
from racksmith.redfish import options, targets
from racksmith.redfish.actions import ActionResult
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.errors import RedfishError
from racksmith.secrets import redact

COMMON_ARGUMENTS: dict[str, dict[str, Any]] = argument_spec(options.MODULE)


def client_from_params(params: dict[str, Any]) -> RedfishClient:
    found = targets.parse(params["bmc"], allow_names=bool(params.get("allow_names")))
    if len(found) != 1:
        raise ValueError(
            f"bmc {params['bmc']!r} names {len(found)} BMCs; a module acts on exactly one"
        )
    # An action that waits (power: ``wait``) gets its wait on top of the request deadline.
    budget = params["deadline"] + float(params.get("wait") or 0)
    return RedfishClient(
        found[0],
        credentials.bmc_from_params(params),
        ClientOptions.from_params(params),
        deadline=Deadline(budget),
    )


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
