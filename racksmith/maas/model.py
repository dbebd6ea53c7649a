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


def _guarded(what: str, build: Callable[[dict[str, Any]], T], data: Any) -> T:
    """Run a record parser; any shape problem becomes one clear MaasMalformedError."""
    if not isinstance(data, dict):
        raise MaasMalformedError(f"{what}: expected a JSON object, got {_kind(data)}")
    try:
        return build(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        ident = data.get("system_id") or data.get("id") or "?"
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)[:120]
        raise MaasMalformedError(f"{what} {ident}: {detail}") from None


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
            id=int(data["id"]),
            name=str(data.get("name") or ""),
            path=str(data.get("path") or ""),
            id_path=str(data.get("id_path") or ""),
            model=str(data.get("model") or ""),
            serial=str(data.get("serial") or ""),
            size=int(data.get("size") or 0),
            type=str(data.get("type") or "physical"),
            tags=tuple(data.get("tags") or ()),
            partitions=len(data.get("partitions") or ()),
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
        interfaces = data.get("interface_set") or []
        macs = tuple(
            str(i.get("mac_address", "")).lower() for i in interfaces if i.get("mac_address")
        )
        boot = data.get("boot_interface") or {}
        boot_disk = data.get("boot_disk")
        return cls(
            system_id=str(data["system_id"]),
            hostname=str(data.get("hostname") or ""),
            description=str(data.get("description") or ""),
            status=NodeStatus(int(data["status"])),
            status_name=str(data.get("status_name") or ""),
            status_message=str(data.get("status_message") or ""),
            error_description=str(data.get("error_description") or ""),
            owner=data.get("owner"),
            architecture=str(data.get("architecture") or ""),
            power_type=str(data.get("power_type") or ""),
            power_state=str(data.get("power_state") or "unknown"),
            macs=macs,
            boot_mac=str(boot.get("mac_address") or (macs[0] if macs else "")).lower(),
            ip_addresses=tuple(str(ip) for ip in data.get("ip_addresses") or ()),
            tag_names=tuple(data.get("tag_names") or ()),
            pool=_name(data.get("pool")),
            zone=_name(data.get("zone")),
            domain=_name(data.get("domain")),
            osystem=str(data.get("osystem") or ""),
            distro_series=str(data.get("distro_series") or ""),
            hwe_kernel=str(data.get("hwe_kernel") or ""),
            boot_disk=BlockDevice.from_json(boot_disk) if isinstance(boot_disk, dict) else None,
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
            id=int(data.get("id") or 0),
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
