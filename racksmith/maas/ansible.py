"""What the ``maas_*`` Ansible modules share: argument specs, connecting, finding the machine,
and turning library outcomes and errors into module results.

Kept in the library (not ``module_utils``) because the modules run on the controller under the
interpreter that has racksmith installed, and one copy keeps the three modules identical in how
they take credentials (by reference: ``MAAS_URL`` / ``MAAS_API_KEY`` or a credentials file),
wait, and fail: with MAAS's named cause and the evidence, never with the key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from racksmith import credentials
from racksmith.maas import machines, options
from racksmith.maas.auth import resolve_credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasConfigError, MaasError, MachineFailed
from racksmith.maas.lifecycle import WaitPolicy
from racksmith.maas.machines import Outcome
from racksmith.maas.model import Machine
from racksmith.maas.storage import BootDiskRule
from racksmith.optionspec import argument_spec

# Generated from the one definition of the options (racksmith/maas/options.py), which also
# produces plugins/doc_fragments/racksmith_maas.py and the ``racksmith maas`` options.
CONNECTION_ARGS: dict[str, dict[str, Any]] = argument_spec(options.CONNECTION)
WAIT_ARGS: dict[str, dict[str, Any]] = argument_spec(options.WAIT)
SELECTOR_ARGS: dict[str, dict[str, Any]] = argument_spec(options.SELECTOR)
BOOT_DISK_ARGS: dict[str, dict[str, Any]] = {
    "boot_disk": {"type": "dict"},
    "storage_layout": {
        "type": "str",
        "default": "flat",
        "choices": ["flat", "lvm", "bcache", "vmfs6", "vmfs7", "custom", "blank"],
    },
}


POWER_ARGS: dict[str, dict[str, Any]] = {
    "power_type": {"type": "str", "default": "redfish", "choices": ["redfish", "ipmi", "manual"]},
    "power_address": {"type": "str"},
    "power_user": {"type": "str"},
    "power_pass": {"type": "str", "no_log": True},
    "power_user_env": {"type": "str", "default": credentials.BMC_USERNAME_ENV},
    "power_pass_env": {"type": "str", "default": credentials.BMC_PASSWORD_ENV, "no_log": False},
    "power_credentials_file": {"type": "str"},
    "power_node_id": {"type": "str"},
}


#: One host of ``maas_fleet``: its selector, user data and BMC reference (the password itself
#: only by reference: ``power_pass`` is not offered per host).
FLEET_HOST_ARGS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "pxe_mac": {"type": "str", "required": True},
    "user_data": {"type": "str"},
    **{k: v for k, v in POWER_ARGS.items() if k not in ("power_type", "power_pass")},
}


def power_parameters(params: dict[str, Any]) -> dict[str, str]:
    """MAAS power parameters; user and password each resolved by :mod:`racksmith.credentials`
    (the value given, then ``power_user_env``/``power_pass_env``, then the file)."""
    if params["power_type"] == "manual":
        return {}
    try:
        creds = credentials.bmc(
            username=params.get("power_user"),
            password=params.get("power_pass"),
            username_env=params.get("power_user_env"),
            password_env=params.get("power_pass_env"),
            credentials_file=params.get("power_credentials_file"),
        )
    except credentials.CredentialsError as exc:
        raise MaasConfigError(str(exc)) from None
    values = {
        "power_address": params.get("power_address"),
        "power_user": creds.username,
        "power_pass": creds.password_value(),
        "node_id": params.get("power_node_id"),
    }
    return {k: v for k, v in values.items() if v}


def connect(params: dict[str, Any]) -> MaasClient:
    creds = resolve_credentials(
        url=params.get("maas_url"),
        api_key=params.get("maas_api_key"),
        credentials_file=params.get("credentials_file"),
    )
    verify: bool | str = params["ca_bundle"] or bool(params["validate_certs"])
    return options.client_for(creds, verify, params)


def policy(params: dict[str, Any]) -> WaitPolicy:
    return WaitPolicy.build(
        poll_interval=params.get("poll_interval"),
        budget_minutes=params.get("wait_budgets") or {},
        power_actions_per_minute=params.get("power_actions_per_minute"),
    )


def boot_disk_rule(params: dict[str, Any]) -> BootDiskRule | None:
    return BootDiskRule.from_dict(params["boot_disk"]) if params.get("boot_disk") else None


def locate(client: MaasClient, params: dict[str, Any]) -> Machine | None:
    """The machine named by ``pxe_mac`` (preferred), ``system_id`` or ``hostname``."""
    if params.get("pxe_mac"):
        return machines.find(client, mac=params["pxe_mac"])
    if params.get("system_id"):
        return machines.read(client, params["system_id"])
    if params.get("hostname"):
        return machines.find(client, hostname=params["hostname"])
    raise MaasError("name the machine: pxe_mac, system_id or hostname")


def run(module, step: Callable[[MaasClient], Outcome]) -> None:
    """Run one step and exit the module: ok/changed with what was done, or failed with the
    cause and MAAS's evidence. Every string passes the client's redaction first."""
    client = None
    try:
        client = connect(module.params)
        outcome = step(client)
    except MachineFailed as exc:
        module.fail_json(
            msg=_scrub(client, str(exc)), cause=exc.triage.cause, triage=exc.triage.as_dict()
        )
    except MaasError as exc:
        module.fail_json(msg=_scrub(client, str(exc)))
    finally:
        if client is not None:
            client.close()
    result = outcome.as_dict()
    for warning in result.pop("warnings"):
        module.warn(warning)
    module.exit_json(**result, msg="; ".join(outcome.actions) or "nothing to do")


def _scrub(client: MaasClient | None, text: str) -> str:
    return client.redact(text) if client is not None else text
