"""The enlist and deploy phases' batches for ``maas_fleet``, built once from every host's
variables.

Why: each phase used to build its batch with a per-host ``set_fact`` (plus an ``assert`` of
the inputs before enlisting), then copy the host's result into a fact and print it with a
``debug``: three or four task results per host on a rerun that changes nothing, and each
result costs the controller a forked worker (issue 25). Here the batch is one filter call
over ``hostvars`` and a host that lacks an input is left out of it with its problem, so it
fails with that reason while the others go on; the play keeps one task per host, the outcome
(the action racksmith.core.maas_outcome).

``hostvars[h]`` holds the host's inventory variables (per-host and group_vars), facts and
extra vars, but not the play's role defaults: a knob the host's variables lack takes the
value in ``defaults`` (the racksmith role's defaults, which the inventory overrides anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from racksmith.maas.userdata import user_data

KINDS = ("enlist", "deploy")

#: The knobs a deploy entry reads that have a role default (roles/racksmith/defaults).
DEPLOY_KNOBS = ("racksmith_ssh_authorized_keys", "racksmith_maas_user_data_extra")


@dataclass
class Batch:
    """The hosts ``maas_fleet`` is given, and why the others were left out."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "problems": self.problems}


def _text(value: Any) -> str:
    """A variable as text; unset, null and empty are all ''."""
    return "" if value is None else str(value)


def _lookup(variables: Mapping[str, Any], name: str, default: Any = None) -> Any:
    # `in` first: Ansible's hostvars template a value on access, and only the ones we read
    return variables[name] if name in variables else default


def enlist_entry(host: str, variables: Mapping[str, Any]) -> dict[str, Any] | str:
    """The host's enlist entry, or the one line saying which inputs it lacks."""
    mac = _text(_lookup(variables, "redfish_pxe_mac"))
    bmc = _text(_lookup(variables, "redfish_bmc"))
    disk = _lookup(variables, "racksmith_maas_boot_disk")
    if not mac or not bmc or not isinstance(disk, Mapping):
        return (
            f"{host}: enlisting needs redfish_pxe_mac and redfish_bmc (Redfish inventory) and "
            'racksmith_maas_boot_disk (e.g. {model: "DELLBOSS*"}) in group_vars'
        )
    connection = _lookup(variables, "redfish_connection")
    connection = connection if isinstance(connection, Mapping) else {}
    return {
        "name": host,
        "pxe_mac": mac,
        "power_address": bmc,
        # '': the module's default (RACKSMITH_BMC_USERNAME/_PASSWORD, no file)
        "power_user_env": _text(connection.get("username_env")),
        "power_pass_env": _text(connection.get("password_env")),
        "power_credentials_file": _text(connection.get("credentials_file")),
    }


def deploy_entry(
    host: str, variables: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any] | str:
    """The host's deploy entry with its cloud-init user data (``racksmith_maas_user_data`` as
    given, else rendered by :func:`racksmith.maas.userdata.user_data`), or its problem."""
    mac = _text(_lookup(variables, "redfish_pxe_mac"))
    if not mac:
        return f"{host}: deploying needs redfish_pxe_mac (Redfish inventory)"
    given = _lookup(variables, "racksmith_maas_user_data")
    if given is not None:
        return {"name": host, "pxe_mac": mac, "user_data": _text(given)}
    keys = _lookup(variables, DEPLOY_KNOBS[0], defaults.get(DEPLOY_KNOBS[0]))
    extra = _lookup(variables, DEPLOY_KNOBS[1], defaults.get(DEPLOY_KNOBS[1]))
    if keys is not None and (isinstance(keys, (str, Mapping)) or not isinstance(keys, Iterable)):
        return f"{host}: racksmith_ssh_authorized_keys must be a list of public keys"
    if extra is not None and not isinstance(extra, Mapping):
        return f"{host}: racksmith_maas_user_data_extra must be a mapping of cloud-config keys"
    try:
        data = user_data(
            host,
            service_tag=_text(_lookup(variables, "redfish_service_tag")),
            pxe_mac=mac,
            apt_proxy=_text(_lookup(variables, "base_apt_proxy")),
            ssh_authorized_keys=[str(k) for k in keys or ()],
            extra=extra,
        )
    except (ValueError, TypeError) as exc:  # the YAML emitter refusing a value
        return f"{host}: cannot render the cloud-init user data: {exc}"
    return {"name": host, "pxe_mac": mac, "user_data": data}


def fleet_batch(
    hosts: Iterable[str],
    hostvars: Mapping[str, Mapping[str, Any]],
    kind: str,
    defaults: Mapping[str, Any] | None = None,
) -> Batch:
    """The ``kind`` batch over ``hosts`` (in their order); a host without its inputs is left
    out with its problem."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    defaults = defaults or {}
    batch = Batch()
    for host in (str(h) for h in hosts):
        variables = hostvars.get(host)
        if not isinstance(variables, Mapping):
            batch.problems[host] = f"{host}: no host variables"
            continue
        if kind == "enlist":
            made = enlist_entry(host, variables)
        else:
            made = deploy_entry(host, variables, defaults)
        if isinstance(made, str):
            batch.problems[host] = made
        else:
            batch.entries.append(made)
    return batch
