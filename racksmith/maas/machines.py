"""Machine records: find by PXE MAC, create or update only what differs, tags, mark broken.

Idempotence is the point (maas-api.md §8.5): look up by *lowercase* MAC before creating
(MAAS's MAC filter is an exact text match and iDRAC reports uppercase), treat "MAC already in
use" as "exists", re-read after a 504 or timeout on create (the create may have succeeded),
and compare before writing so a rerun reports ``changed=false``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from racksmith.maas.client import MaasClient
from racksmith.maas.errors import (
    MaasAuthError,
    MaasBadRequest,
    MaasConfigError,
    MaasServerError,
    MaasTransportError,
    MachineStateError,
)
from racksmith.maas.model import Machine, NodeStatus, parse_machines
from racksmith.macs import require_mac

_HOSTNAME = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_TAG = re.compile(r"^[A-Za-z0-9_-]+$")
POWER_TYPES = ("redfish", "ipmi", "manual")


def normalise_mac(mac: str) -> str:
    """The project's one normaliser (:func:`racksmith.macs.normalize_mac`), for a MAC that must
    be there: anything else is a MaasConfigError naming the value."""
    try:
        return require_mac(mac)
    except ValueError as exc:
        raise MaasConfigError(str(exc)) from None


@dataclass(frozen=True)
class MachineSpec:
    """What a machine record should look like. ``power_parameters`` holds the BMC password:
    it is sent to MAAS and compared, never logged or returned."""

    hostname: str
    pxe_mac: str
    power_type: str = "redfish"
    power_parameters: Mapping[str, str] = field(default_factory=dict)
    architecture: str = "amd64/generic"
    pool: str | None = None
    zone: str | None = None
    domain: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "pxe_mac", normalise_mac(self.pxe_mac))
        if not _HOSTNAME.match(self.hostname or ""):
            raise MaasConfigError(f"hostname {self.hostname!r} is not a valid DNS label")
        if self.power_type not in POWER_TYPES:
            raise MaasConfigError(
                f"power_type {self.power_type!r} is not one of {list(POWER_TYPES)}"
            )
        if self.power_type == "redfish":
            missing = [
                k
                for k in ("power_address", "power_user", "power_pass")
                if not self.power_parameters.get(k)
            ]
            if missing:
                raise MaasConfigError(
                    f"redfish power needs {', '.join(missing)} for {self.hostname}"
                )
        bad = [t for t in self.tags if not _TAG.match(t)]
        if bad:
            raise MaasConfigError(f"tag names must be letters, digits, '-' or '_': {bad}")

    def __repr__(self) -> str:  # the password must not reach a traceback
        return f"MachineSpec(hostname={self.hostname!r}, pxe_mac={self.pxe_mac!r})"


@dataclass
class Outcome:
    """The result of one idempotent step: what it did (in words) and whether anything changed."""

    machine: Machine | None = None
    changed: bool = False
    actions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    diff: dict[str, Any] | None = None  # before/after for Ansible's --diff (set by the modules)

    def did(self, action: str) -> None:
        self.changed = True
        self.actions.append(action)

    def merge(self, other: Outcome) -> Outcome:
        self.changed |= other.changed
        self.actions.extend(other.actions)
        self.warnings.extend(other.warnings)
        if other.machine is not None:
            self.machine = other.machine
        return self

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "actions": list(self.actions),
            "warnings": list(self.warnings),
            "machine": self.machine.summary() if self.machine else None,
            **({"diff": self.diff} if self.diff is not None else {}),
        }


def read(client: MaasClient, system_id: str) -> Machine:
    return Machine.from_json(client.get(f"machines/{system_id}/"))


def find(
    client: MaasClient, *, mac: str | None = None, hostname: str | None = None
) -> Machine | None:
    """The machine owning ``mac`` (preferred) or named ``hostname``; None if there is none."""
    if mac:
        found = client.get("machines/", {"mac_address": normalise_mac(mac)})
    elif hostname:
        found = client.get("machines/", {"hostname": hostname})
    else:
        raise MaasConfigError("find a machine by mac or hostname")
    machines = parse_machines(found)
    if len(machines) > 1:
        names = ", ".join(m.label for m in machines)
        raise MachineStateError(f"{mac or hostname} matches several machines: {names}")
    return machines[0] if machines else None


def _create_fields(spec: MachineSpec) -> list[tuple[str, str]]:
    data = [
        ("architecture", spec.architecture),
        ("mac_addresses", spec.pxe_mac),
        ("hostname", spec.hostname),
        ("power_type", spec.power_type),
        # racksmith commissions explicitly, so that the pre-commission state is known and a
        # silent revert to New can be told apart from success.
        ("commission", "false"),
    ]
    data += [(f"power_parameters_{k}", str(v)) for k, v in spec.power_parameters.items()]
    for name in ("pool", "zone", "domain", "description"):
        value = getattr(spec, name)
        if value:
            data.append((name, value))
    return data


def create(client: MaasClient, spec: MachineSpec) -> Machine:
    """Create the record; if MAAS's answer is lost (504, timeout) or the MAC exists, re-read."""
    try:
        return Machine.from_json(client.post("machines/", _create_fields(spec)))
    except (MaasServerError, MaasTransportError) as exc:
        if isinstance(exc, MaasServerError) and exc.status not in (502, 504):
            raise
        found = find(client, mac=spec.pxe_mac)
        if found is None:
            raise
        return found
    except MaasBadRequest as exc:
        if "already in use" not in " ".join(exc.field_errors.get("mac_addresses", [])):
            raise
        found = find(client, mac=spec.pxe_mac)
        if found is None:
            raise
        return found


def _differences(client: MaasClient, machine: Machine, spec: MachineSpec) -> dict[str, str]:
    """Fields whose MAAS value differs from the spec (power parameters need one extra read)."""
    diff: dict[str, str] = {}
    if machine.hostname != spec.hostname:
        diff["hostname"] = spec.hostname
    for name in ("pool", "zone", "domain"):
        want = getattr(spec, name)
        if want and getattr(machine, name) != want:
            diff[name] = want
    if spec.description is not None and machine.description != spec.description:
        diff["description"] = spec.description
    power_changed = machine.power_type != spec.power_type
    if not power_changed and spec.power_parameters:
        current = client.get(f"machines/{machine.system_id}/", op="power_parameters") or {}
        power_changed = any(
            str(current.get(k, "")) != str(v) for k, v in spec.power_parameters.items()
        )
    if power_changed:
        diff["power_type"] = spec.power_type
        diff.update({f"power_parameters_{k}": str(v) for k, v in spec.power_parameters.items()})
    return diff


def _describe_diff(diff: Mapping[str, str]) -> str:
    names = sorted({"power parameters" if k.startswith("power_") else k for k in diff})
    return ", ".join(names)


def ensure(client: MaasClient, spec: MachineSpec, *, check_mode: bool = False) -> Outcome:
    """Make the record match ``spec`` (create, or update only what differs), then its tags."""
    outcome = Outcome()
    machine = find(client, mac=spec.pxe_mac)
    if machine is None:
        if check_mode:
            outcome.did(f"would create {spec.hostname} with PXE MAC {spec.pxe_mac}")
            return outcome
        machine = create(client, spec)
        outcome.did(f"created {machine.label} with PXE MAC {spec.pxe_mac}")
    else:
        diff = _differences(client, machine, spec)
        if diff:
            if check_mode:
                outcome.did(f"would update {machine.label}: {_describe_diff(diff)}")
            else:
                machine = Machine.from_json(client.put(f"machines/{machine.system_id}/", diff))
                outcome.did(f"updated {machine.label}: {_describe_diff(diff)}")
    outcome.machine = machine
    return outcome.merge(ensure_tags(client, machine, spec.tags, check_mode=check_mode))


def ensure_tags(
    client: MaasClient, machine: Machine, tags: Iterable[str], *, check_mode: bool = False
) -> Outcome:
    """Add the missing manual tags (creating them if needed). Tags are never removed here."""
    outcome = Outcome(machine=machine)
    missing = [t for t in dict.fromkeys(tags) if t not in machine.tag_names]
    if not missing:
        return outcome
    if check_mode:
        outcome.did(f"would tag {machine.label}: {', '.join(missing)}")
        return outcome
    existing = {t["name"] for t in client.get("tags/")}
    for tag in missing:
        if tag not in existing:
            try:
                client.post("tags/", {"name": tag, "comment": "racksmith", "definition": ""})
            except MaasBadRequest as exc:
                if "already exists" not in exc.summary:
                    raise
        client.post(f"tags/{tag}/", {"add": machine.system_id}, op="update_nodes", idempotent=True)
    outcome.machine = read(client, machine.system_id)
    outcome.did(f"tagged {machine.label}: {', '.join(missing)}")
    return outcome


def mark_broken(
    client: MaasClient, machine: Machine, reason: str, *, check_mode: bool = False
) -> Outcome:
    """Quarantine in MAAS: status Broken with the reason as ``error_description``."""
    outcome = Outcome(machine=machine)
    if not reason.strip():
        raise MaasConfigError("mark_broken needs a reason")
    if machine.status is NodeStatus.BROKEN:
        if machine.error_description != reason:
            outcome.warnings.append(
                f"{machine.label} is already Broken ({machine.error_description!r}); reason kept"
            )
        return outcome
    if check_mode:
        outcome.did(f"would mark {machine.label} broken: {reason}")
        return outcome
    try:
        data = client.post(f"machines/{machine.system_id}/", {"comment": reason}, op="mark_broken")
    except MaasAuthError as exc:
        if exc.status != 403:
            raise
        raise MachineStateError(
            f"MAAS refused to mark {machine.label} broken (403): only the machine's owner "
            f"({machine.owner or 'nobody'}) may; deploy and quarantine as the same MAAS user"
        ) from None
    outcome.machine = Machine.from_json(data)
    outcome.did(f"marked {machine.label} broken: {reason}")
    return outcome
