"""MAAS JSON in, typed objects out: machines, block devices, events, node statuses.

Pure parsing, no I/O (the client fetches, this interprets), so the shapes can be tested on
their own and the lifecycle code reads ``machine.status is NodeStatus.READY`` instead of
dictionary lookups scattered through the logic.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from racksmith.maas.errors import MaasMalformedError

T = TypeVar("T")


class _WrongType(ValueError):
    """A field of a MAAS record has a type no MAAS sends; the message names the field."""


def _typed(data: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    """``data[key]`` when it is a ``kind`` (absent or null: ``default``), else a clear error
    (before: "'str' object has no attribute 'get'" reached the operator)."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        want = {list: "a JSON list", dict: "a JSON object", int: "a number"}.get(kind, "text")
        raise _WrongType(f"field {key!r} should be {want}, got {_kind(value)}")
    return value


def _objects(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = _typed(data, key, list, [])
    for item in items:
        if not isinstance(item, dict):
            raise _WrongType(f"field {key!r} should list JSON objects, holds {_kind(item)}")
    return items


def _number(data: dict[str, Any], key: str, default: int | None = None) -> int:
    """An integer field (MAAS sends numbers; a digit string is accepted too)."""
    value = data.get(key)
    if value is None and default is not None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value)
    if value is None:
        raise KeyError(key)
    raise _WrongType(f"field {key!r} should be a number, got {_kind(value)}")


def _guarded(what: str, build: Callable[[dict[str, Any]], T], data: Any) -> T:
    """Run a record parser; any shape problem becomes one clear MaasMalformedError naming
    the record and the field, never Python's own text."""
    if not isinstance(data, dict):
        raise MaasMalformedError(f"{what}: expected a JSON object, got {_kind(data)}")
    try:
        return build(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        ident = data.get("system_id") or data.get("id") or "?"
        ident = ident if isinstance(ident, (str, int)) else "?"
        if isinstance(exc, KeyError):
            detail = f"missing field {exc}"
        elif isinstance(exc, _WrongType):
            detail = str(exc)
        else:  # a shape this parser did not foresee: say so without Python's wording
            detail = "a field has a type or value MAAS does not send"
        raise MaasMalformedError(f"{what} {str(ident)[:40]}: {detail}") from None


def _kind(data: Any) -> str:
    if isinstance(data, str):
        return "an HTML page" if data.lstrip()[:1] == "<" else f"text ({data[:40]!r})"
    return {list: "a JSON list", dict: "a JSON object", type(None): "nothing"}.get(
        type(data), f"JSON {type(data).__name__}"
    )


def expect_list(what: str, data: Any) -> list[Any]:
    """``data`` when it is a JSON list, else a MaasMalformedError naming what came instead."""
    if not isinstance(data, list):
        raise MaasMalformedError(f"{what}: expected a JSON list, got {_kind(data)}")
    return data


def parse_machines(data: Any, what: str = "GET machines/") -> list[Machine]:
    """A machine listing -> machines; anything else is a MaasMalformedError, never a crash."""
    return [Machine.from_json(m) for m in expect_list(what, data)]


class NodeStatus(enum.IntEnum):
    """MAAS ``NODE_STATUS`` (enum.py). Names are the lowercase filter names of ``?status=``."""

    NEW = 0
    COMMISSIONING = 1
    FAILED_COMMISSIONING = 2
    MISSING = 3
    READY = 4
    RESERVED = 5
    DEPLOYED = 6
    RETIRED = 7
    BROKEN = 8
    DEPLOYING = 9
    ALLOCATED = 10
    FAILED_DEPLOYMENT = 11
    RELEASING = 12
    RELEASING_FAILED = 13  # "Releasing failed", not "Failed releasing"
    DISK_ERASING = 14
    FAILED_DISK_ERASING = 15
    RESCUE_MODE = 16
    ENTERING_RESCUE_MODE = 17
    FAILED_ENTERING_RESCUE_MODE = 18
    EXITING_RESCUE_MODE = 19
    FAILED_EXITING_RESCUE_MODE = 20
    TESTING = 21
    FAILED_TESTING = 22

    @property
    def filter_name(self) -> str:
        return self.name.lower()

    @property
    def display(self) -> str:
        """The ``status_name`` MAAS shows (``Failed deployment``)."""
        return _DISPLAY.get(self, self.name.replace("_", " ").capitalize())

    @property
    def is_failure(self) -> bool:
        return self.name.startswith("FAILED") or self in (
            NodeStatus.RELEASING_FAILED,
            NodeStatus.BROKEN,
        )


#: States from which MAAS accepts ``release`` (maas-api.md §2).
RELEASABLE = frozenset(
    {
        NodeStatus.ALLOCATED,
        NodeStatus.RESERVED,
        NodeStatus.BROKEN,
        NodeStatus.DEPLOYING,
        NodeStatus.DEPLOYED,
        NodeStatus.FAILED_DEPLOYMENT,
        NodeStatus.FAILED_DISK_ERASING,
        NodeStatus.RELEASING_FAILED,
    }
)

_DISPLAY = {
    NodeStatus.FAILED_ENTERING_RESCUE_MODE: "Failed to enter rescue mode",
    NodeStatus.FAILED_EXITING_RESCUE_MODE: "Failed to exit rescue mode",
}


def _name(value: Any) -> str:
    """``{"name": "default", ...}`` or a bare string -> the name."""
    if isinstance(value, dict):
        return str(value.get("name") or "")
    return "" if value is None else str(value)


@dataclass(frozen=True)
class BlockDevice:
    id: int
    name: str
    path: str
    id_path: str
    model: str
    serial: str
    size: int
    type: str
    tags: tuple[str, ...]
    partitions: int
    used_for: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlockDevice:
        return _guarded("block device", cls._build, data)

    @classmethod
    def _build(cls, data: dict[str, Any]) -> BlockDevice:
        return cls(
            id=_number(data, "id"),
            name=str(data.get("name") or ""),
            path=str(data.get("path") or ""),
            id_path=str(data.get("id_path") or ""),
            model=str(data.get("model") or ""),
            serial=str(data.get("serial") or ""),
            size=_number(data, "size", 0),
            type=str(data.get("type") or "physical"),
            tags=tuple(str(t) for t in _typed(data, "tags", list, [])),
            partitions=len(_typed(data, "partitions", list, [])),
            used_for=str(data.get("used_for") or ""),
        )

    def describe(self) -> str:
        gb = self.size / 1e9
        return f"id {self.id} {self.name} model={self.model!r} serial={self.serial!r} {gb:.0f} GB"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "id_path": self.id_path,
            "model": self.model,
            "serial": self.serial,
            "size": self.size,
        }


@dataclass(frozen=True)
class Machine:
    system_id: str
    hostname: str
    description: str
    status: NodeStatus
    status_name: str
    status_message: str
    error_description: str
    owner: str | None
    architecture: str
    power_type: str
    power_state: str
    macs: tuple[str, ...]
    boot_mac: str
    ip_addresses: tuple[str, ...]
    tag_names: tuple[str, ...]
    pool: str
    zone: str
    domain: str
    osystem: str
    distro_series: str
    hwe_kernel: str
    boot_disk: BlockDevice | None
    locked: bool

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Machine:
        return _guarded("machine", cls._build, data)

    @classmethod
    def _build(cls, data: dict[str, Any]) -> Machine:
        system_id = str(data["system_id"])  # first: a record without one is named by it
        interfaces = _objects(data, "interface_set")
        macs = tuple(
            str(i.get("mac_address", "")).lower() for i in interfaces if i.get("mac_address")
        )
        boot = _typed(data, "boot_interface", dict, {})
        boot_disk = _typed(data, "boot_disk", dict, None)
        status = _number(data, "status")
        if status not in NodeStatus._value2member_map_:
            raise _WrongType(f"field 'status' is {status}, not a MAAS node status")
        return cls(
            system_id=system_id,
            hostname=str(data.get("hostname") or ""),
            description=str(data.get("description") or ""),
            status=NodeStatus(status),
            status_name=str(data.get("status_name") or ""),
            status_message=str(data.get("status_message") or ""),
            error_description=str(data.get("error_description") or ""),
            owner=data.get("owner"),
            architecture=str(data.get("architecture") or ""),
            power_type=str(data.get("power_type") or ""),
            power_state=str(data.get("power_state") or "unknown"),
            macs=macs,
            boot_mac=str(boot.get("mac_address") or (macs[0] if macs else "")).lower(),
            ip_addresses=tuple(str(ip) for ip in _typed(data, "ip_addresses", list, [])),
            tag_names=tuple(str(t) for t in _typed(data, "tag_names", list, [])),
            pool=_name(data.get("pool")),
            zone=_name(data.get("zone")),
            domain=_name(data.get("domain")),
            osystem=str(data.get("osystem") or ""),
            distro_series=str(data.get("distro_series") or ""),
            hwe_kernel=str(data.get("hwe_kernel") or ""),
            boot_disk=BlockDevice.from_json(boot_disk) if boot_disk is not None else None,
            locked=bool(data.get("locked")),
        )

    @property
    def label(self) -> str:
        return f"{self.hostname} ({self.system_id})" if self.hostname else self.system_id

    def summary(self) -> dict[str, Any]:
        """What modules and the CLI report: identity, state, addresses, pinned boot disk."""
        return {
            "system_id": self.system_id,
            "hostname": self.hostname,
            "status": int(self.status),
            "status_name": self.status_name or self.status.display,
            "owner": self.owner,
            "pxe_mac": self.boot_mac,
            "ip_addresses": list(self.ip_addresses),
            "tags": list(self.tag_names),
            "pool": self.pool,
            "zone": self.zone,
            "osystem": self.osystem,
            "distro_series": self.distro_series,
            "hwe_kernel": self.hwe_kernel,
            "boot_disk": self.boot_disk.as_dict() if self.boot_disk else None,
            "error_description": self.error_description,
        }


@dataclass(frozen=True)
class Event:
    id: int
    level: str
    created: str
    type: str
    description: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        return _guarded("event", cls._build, data)

    @classmethod
    def _build(cls, data: dict[str, Any]) -> Event:
        return cls(
            id=_number(data, "id", 0),
            level=str(data.get("level") or ""),
            created=str(data.get("created") or ""),
            type=str(data.get("type") or ""),
            description=str(data.get("description") or ""),
        )

    @property
    def text(self) -> str:
        return f"{self.type} - {self.description}" if self.description else self.type

    def line(self) -> str:
        return f"{self.created} {self.level}: {self.text}"


def parse_events(data: Any) -> list[Event]:
    """``events/?op=query`` result -> events, newest first (as MAAS returns them)."""
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise MaasMalformedError("events/?op=query did not return {'events': [...]}")
    return [Event.from_json(e) for e in data["events"]]
