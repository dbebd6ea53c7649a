"""The MAAS 2.0 API surface of the simulator: resources, ``op`` dispatch, handlers, describe.

One table (:data:`RESOURCES`) drives both dispatch and ``describe/``, the document
python-libmaas builds its client from, so what the simulator says it serves is exactly what it
serves. Dispatch follows piston: the resource is chosen by path, the handler by whether the
request is signed (anonymous handler otherwise), the action by verb plus ``op`` (query string
first, then body); an unknown pair is 400 ``Unrecognised signature: method=GET op=deploy``.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from racksmith.lab.maassim.errors import (
    ApiError,
    bad_request,
    conflict,
    field_errors,
    forbidden,
    nginx_504,
    not_found,
)
from racksmith.lab.maassim.oauth import User
from racksmith.lab.maassim.render import blockdevice_json, event_json, machine_json, tag_json
from racksmith.lab.maassim.state import DISTROS, KERNELS, S, SimMachine, Store

API = "/MAAS/api/2.0/"
_MAC = re.compile(r"^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$", re.IGNORECASE)
_HOSTNAME = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_TAG = re.compile(r"^[a-zA-Z0-9_-]+$")
ARCHES = ("amd64/generic", "arm64/generic")
POWER_FIELDS = {
    "redfish": {
        "power_address": "Redfish address",
        "power_user": "Redfish user",
        "power_pass": "Redfish password",
    },
    "ipmi": {"power_address": "IP address"},
    "manual": {},
    "": {},
}
RETRY_503 = {"Retry-After": "10"}


@dataclass
class Ctx:
    """One request as handlers see it."""

    store: Store
    method: str
    user: User | None
    args: dict[str, str]  # URI parameters (system_id, id, name)
    params: dict[str, list[str]]  # query for GET/DELETE, body for POST/PUT
    host: str

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.params.get(name)
        return values[0] if values else default

    def getlist(self, name: str) -> list[str]:
        return list(self.params.get(name, []))

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.get(name)
        if value is None:
            return default
        return value.strip().lower() in ("true", "1", "yes", "on")

    @property
    def username(self) -> str:
        return self.user.username if self.user else ""

    def require_admin(self) -> None:
        if self.user is None or not self.user.is_superuser:
            raise forbidden()

    def machine(self) -> SimMachine:
        return self.store.get(self.args["system_id"])


@dataclass(frozen=True)
class Action:
    method: str
    op: str | None
    fn: Callable[[Ctx], Any]
    doc: str = ""

    @property
    def name(self) -> str:
        return (
            self.op
            or {"GET": "read", "POST": "create", "PUT": "update", "DELETE": "delete"}[self.method]
        )


@dataclass(frozen=True)
class Resource:
    name: str  # the auth handler's class name in MAAS, e.g. "MachineHandler"
    path: str  # "/MAAS/api/2.0/machines/{system_id}/"
    doc: str
    auth: tuple[Action, ...] = ()
    anon: tuple[Action, ...] = ()
    anon_name: str | None = None
    pattern: re.Pattern = field(init=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))

    @property
    def params(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)


# -- helpers -------------------------------------------------------------------------------


def _int(ctx: Ctx, name: str, default: int | None = None) -> int | None:
    value = ctx.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise field_errors({name: ["Enter a whole number."]}) from None


def _mac(value: str) -> str | None:
    value = value.strip()
    return value.lower().replace("-", ":") if _MAC.match(value) else None


def _power_parameters(ctx: Ctx) -> dict[str, str]:
    """``power_parameters`` (a JSON string, what python-libmaas sends) or ``power_parameters_*``."""
    params: dict[str, str] = {}
    raw = ctx.get("power_parameters")
    if raw:
        try:
            decoded = json.loads(raw)
        except ValueError:
            raise field_errors({"power_parameters": ["Enter a valid JSON object."]}) from None
        if not isinstance(decoded, dict):
            raise field_errors({"power_parameters": ["Enter a valid JSON object."]})
        params.update({str(k): str(v) for k, v in decoded.items()})
    for name, values in ctx.params.items():
        if name.startswith("power_parameters_") and name != "power_parameters_skip_check":
            params[name.removeprefix("power_parameters_")] = values[0]
    return params


def _check_power(power_type: str, params: dict[str, str], skip: bool) -> None:
    if power_type not in POWER_FIELDS:
        raise field_errors(
            {
                "power_type": [
                    f"Select a valid choice. {power_type} is not one of the available choices."
                ]
            }
        )
    if skip:
        return
    missing = [
        f"{label}: This field is required."
        for key, label in POWER_FIELDS[power_type].items()
        if not params.get(key)
    ]
    if missing:
        raise field_errors({"power_parameters": missing})


def _check_choice(ctx: Ctx, name: str, choices) -> str | None:
    value = ctx.get(name)
    if value and value not in choices:
        raise field_errors(
            {name: ["Select a valid choice. That choice is not one of the available choices."]}
        )
    return value


def _check_hostname(store: Store, hostname: str, exclude: str | None = None) -> None:
    if not _HOSTNAME.match(hostname):
        raise field_errors(
            {"hostname": [f"Invalid hostname: {hostname!r} is not a valid DNS label."]}
        )
    if any(m.hostname == hostname and m.system_id != exclude for m in store.machines.values()):
        raise field_errors({"hostname": ["Node with this Hostname already exists."]})


# -- version, describe, users, config --------------------------------------------------------


def version(ctx: Ctx) -> dict:
    return {
        "capabilities": [
            "networks-management",
            "static-ipaddresses",
            "ipv6-deployment-ubuntu",
            "devices-management",
            "storage-deployment-ubuntu",
            "network-deployment-ubuntu",
            "bridging-interface-ubuntu",
            "bridging-automatic-ubuntu",
            "authenticate-api",
        ],
        "version": "3.5.4",
        "subversion": "racksmith-sim",
    }


def _handler_doc(name: str, resource: Resource, actions, host: str) -> dict:
    return {
        "name": name,
        "doc": resource.doc,
        "params": resource.params,
        "path": resource.path,
        "uri": f"http://{host}{resource.path}",
        "actions": [
            {
                "name": a.name,
                "method": a.method,
                "op": a.op,
                "restful": a.op is None,
                "doc": a.doc or a.name,
            }
            for a in actions
        ],
    }


def describe(ctx: Ctx) -> dict:
    resources = []
    for res in RESOURCES:
        resources.append(
            {
                "name": res.name,
                "auth": _handler_doc(res.name, res, res.auth, ctx.host) if res.auth else None,
                "anon": (
                    _handler_doc(res.anon_name or f"Anon{res.name}", res, res.anon, ctx.host)
                    if res.anon
                    else None
                ),
            }
        )
    return {"doc": "MAAS API", "hash": API_HASH, "resources": resources}


def whoami(ctx: Ctx) -> dict:
    user = ctx.user
    return {
        "username": user.username,
        "email": f"{user.username}@lab.invalid",
        "is_superuser": user.is_superuser,
        "is_local": True,
        "resource_uri": f"{API}users/{user.username}/",
    }


def get_config(ctx: Ctx) -> Any:
    name = ctx.get("name")
    if name not in ctx.store.config:
        raise field_errors({"name": [f"{name!r} is not a valid config name."]})
    return ctx.store.config[name]


def set_config(ctx: Ctx) -> Any:
    ctx.require_admin()
    name, value = ctx.get("name"), ctx.get("value")
    if name != "node_timeout":
        raise field_errors({"name": [f"{name!r} is not a config name this simulator sets."]})
    try:
        ctx.store.config[name] = int(value or "")
    except ValueError:
        raise field_errors({"value": ["Enter a whole number."]}) from None
    ctx.store.dirty()
    return "OK"


def boot_resources(ctx: Ctx) -> list:
    return [
        {
            "id": i,
            "type": "Synced",
            "name": name,
            "architecture": "amd64/generic",
            "resource_uri": f"{API}boot-resources/{i}/",
        }
        for i, name in enumerate(DISTROS.values(), start=1)
    ]


def zones(ctx: Ctx) -> list:
    return [
        {"id": i, "name": n, "description": d} for i, (n, d) in enumerate(ctx.store.zones.items())
    ]


def pools(ctx: Ctx) -> list:
    return [
        {"id": i, "name": n, "description": d} for i, (n, d) in enumerate(ctx.store.pools.items())
    ]


def create_pool(ctx: Ctx) -> dict:
    ctx.require_admin()
    name = ctx.get("name") or ""
    if not _TAG.match(name):
        raise field_errors({"name": ["This field is required."]})
    if name in ctx.store.pools:
        raise field_errors({"name": ["Resource pool with this Name already exists."]})
    ctx.store.pools[name] = ctx.get("description", "") or ""
    ctx.store.dirty()
    return {"id": len(ctx.store.pools) - 1, "name": name, "description": ctx.store.pools[name]}


# -- machines collection ------------------------------------------------------------------------


def list_machines(ctx: Ctx) -> list:
    store = ctx.store
    macs = []
    for raw in ctx.getlist("mac_address"):
        if not _mac(raw):
            raise field_errors({"mac_address": ["Invalid parameter: invalid MAC address format"]})
        macs.append(raw)  # exact text match, like MAAS's __in on a text column (§2.2)
    statuses = []
    for name in ctx.getlist("status"):
        try:
            statuses.append(S[name.upper()])
        except KeyError:
            raise field_errors({"status": [f"'{name}' is not a valid status."]}) from None
    filters = {
        "hostname": set(ctx.getlist("hostname")),
        "id": set(ctx.getlist("id")),
        "zone": set(ctx.getlist("zone")),
        "pool": set(ctx.getlist("pool")),
        "domain": set(ctx.getlist("domain")),
        "tags": set(ctx.getlist("tags")),
    }
    out = []
    for m in store.machines.values():
        if macs and not set(macs) & set(m.macs):
            continue
        if statuses and m.state not in statuses:
            continue
        if filters["hostname"] and m.hostname not in filters["hostname"]:
            continue
        if filters["id"] and m.system_id not in filters["id"]:
            continue
        if filters["zone"] and m.zone not in filters["zone"]:
            continue
        if filters["pool"] and m.pool not in filters["pool"]:
            continue
        if filters["domain"] and m.domain not in filters["domain"]:
            continue
        if filters["tags"] and not filters["tags"] <= set(m.tags):
            continue
        out.append(machine_json(store, m))
    return out


def create_machine(ctx: Ctx) -> dict:
    store = ctx.store
    errors: dict[str, list[str]] = {}
    arch = ctx.get("architecture")
    if not arch:
        errors["architecture"] = ["This field is required."]
    else:
        arch = arch if "/" in arch else f"{arch}/generic"
        if arch not in ARCHES:
            errors["architecture"] = [
                f"'{arch}' is not a valid architecture.  It should be one of: "
                + ", ".join(f"'{a}'" for a in ARCHES)
                + "."
            ]
    raw_macs = ctx.getlist("mac_addresses")
    macs: list[str] = []
    if not raw_macs:
        errors["mac_addresses"] = ["This field is required."]
    for raw in raw_macs:
        mac = _mac(raw)
        if mac is None:
            errors.setdefault("mac_addresses", []).append(f"'{raw}' is not a valid MAC address.")
            continue
        owner = store.by_mac(mac)
        if owner is not None:
            errors.setdefault("mac_addresses", []).append(
                f"MAC address {mac} already in use on {owner.hostname}."
            )
        macs.append(mac)
    if errors:
        raise field_errors(errors)
    hostname = ctx.get("hostname")
    if hostname:
        _check_hostname(store, hostname)
    power_type = ctx.get("power_type", "") or ""
    params = _power_parameters(ctx)
    if ctx.user is not None:  # anonymous enlistment does not validate power
        _check_power(power_type, params, ctx.flag("power_parameters_skip_check"))
    _check_choice(ctx, "pool", store.pools)
    _check_choice(ctx, "zone", store.zones)
    machine = store.create_machine(
        hostname=hostname,
        macs=macs,
        architecture=arch,
        power_type=power_type,
        power_parameters=params,
        commission=ctx.flag("commission", default=True),
        user=ctx.user,
        extra={
            k: ctx.get(k) or "" for k in ("description", "pool", "zone", "domain", "min_hwe_kernel")
        },
    )
    if store.take_machine_fault(machine, "create_504"):
        raise nginx_504()  # the machine exists; only the answer is lost (§4)
    return machine_json(store, machine)


def collection_power_parameters(ctx: Ctx) -> dict:
    ctx.require_admin()
    ids = ctx.getlist("id") or list(ctx.store.machines)
    return {sid: dict(ctx.store.get(sid).power_parameters) for sid in ids}


# -- one machine --------------------------------------------------------------------------------


def read_machine(ctx: Ctx) -> dict:
    return machine_json(ctx.store, ctx.machine())


def update_machine(ctx: Ctx) -> dict:
    store, m = ctx.store, ctx.machine()
    if m.locked:
        raise forbidden()
    hostname = ctx.get("hostname")
    if hostname and hostname != m.hostname:
        _check_hostname(store, hostname, exclude=m.system_id)
    _check_choice(ctx, "pool", store.pools)
    _check_choice(ctx, "zone", store.zones)
    new_type = ctx.get("power_type")
    params = _power_parameters(ctx)
    power_type, merged = m.power_type, m.power_parameters
    if new_type is not None or params:
        ctx.require_admin()
        power_type = m.power_type if new_type is None else new_type
        merged = params if power_type != m.power_type else {**m.power_parameters, **params}
        _check_power(power_type, merged, ctx.flag("power_parameters_skip_check"))
    # Everything is validated: apply all or nothing, like a Django form save.
    m.power_type, m.power_parameters = power_type, merged
    if hostname:
        m.hostname = hostname
    for key in ("description", "pool", "zone", "domain", "min_hwe_kernel"):
        value = ctx.get(key)
        if value is not None:
            setattr(m, key, value)
    store.dirty()
    return machine_json(store, m)


def delete_machine(ctx: Ctx) -> None:
    ctx.require_admin()
    m = ctx.machine()
    if m.lab_server and m.power_state == "on":
        ctx.store.hosts.shutdown(m.lab_server)
    del ctx.store.machines[m.system_id]
    ctx.store.dirty()


def _busy(ctx: Ctx, m: SimMachine) -> None:
    """The ``maas_busy`` fault: the rack controller's RPC is down once (503 + Retry-After)."""
    if ctx.store.take_machine_fault(m, "maas_busy"):
        raise ApiError(
            503,
            "Unable to get RPC connection for rack controller 'rack-01' (4y3h7n).",
            headers=dict(RETRY_503),
        )


def commission(ctx: Ctx) -> dict:
    m = ctx.machine()
    _busy(ctx, m)
    if not ctx.user.is_superuser:
        raise forbidden()
    ctx.store.start_commissioning(m, ctx.user)
    return machine_json(ctx.store, m)


def deploy(ctx: Ctx) -> dict:
    store, m = ctx.store, ctx.machine()
    _busy(ctx, m)
    series_raw = ctx.get("distro_series") or "jammy"
    series = series_raw.split("/")[-1]
    if series not in DISTROS or (series_raw.count("/") and not series_raw.startswith("ubuntu/")):
        choices = ", ".join(f"'{d}'" for d in ["", *DISTROS.values()])
        raise field_errors(
            {
                "distro_series": [
                    f"'{series_raw}' is not a valid distro_series.  It should be one of: {choices}."
                ]
            }
        )
    kernel = ctx.get("hwe_kernel") or KERNELS[series][0]
    if kernel not in KERNELS[series]:
        raise bad_request(f"{kernel} is not available for ubuntu/{series} on {m.architecture}.")
    if m.state not in (S.READY, S.ALLOCATED):
        raise conflict(f"Can't deploy a machine that is in the '{m.state.display}' state")
    store.start_deploying(
        m,
        ctx.user,
        distro=series,
        kernel=kernel,
        user_data=ctx.get("user_data") or "",
        comment=ctx.get("comment") or "",
    )
    return machine_json(store, m)


def release(ctx: Ctx) -> dict:
    m = ctx.machine()
    _busy(ctx, m)
    ctx.store.release(
        m,
        ctx.user,
        erase=ctx.flag("erase"),
        secure=ctx.flag("secure_erase"),
        quick=ctx.flag("quick_erase"),
        comment=ctx.get("comment") or "",
    )
    return machine_json(ctx.store, m)


def abort(ctx: Ctx) -> dict:
    m = ctx.machine()
    ctx.store.abort(m, ctx.user)
    return machine_json(ctx.store, m)


def mark_broken(ctx: Ctx) -> dict:
    m = ctx.machine()
    comment = ctx.get("comment") or ctx.get("error_description") or ""
    ctx.store.mark_broken(m, ctx.user, comment)
    return machine_json(ctx.store, m)


def mark_fixed(ctx: Ctx) -> dict:
    m = ctx.machine()
    ctx.store.mark_fixed(m, ctx.user)
    return machine_json(ctx.store, m)


def power_on(ctx: Ctx) -> dict:
    m = ctx.machine()
    if m.owner is None:
        raise conflict("Can't start node: it hasn't been allocated.")
    m.power_state = "on"
    ctx.store.dirty()
    return machine_json(ctx.store, m)


def power_off(ctx: Ctx) -> dict:
    m = ctx.machine()
    if m.owner is None and not ctx.user.is_superuser:
        raise forbidden()
    ctx.store._power_off(m)
    ctx.store.dirty()
    return machine_json(ctx.store, m)


def query_power_state(ctx: Ctx) -> dict:
    m = ctx.machine()
    if "power_fails" in m.faults:
        raise ApiError(503, "Failed to query node's BMC - Unable to power control the node.")
    return {"state": m.power_state}


def machine_power_parameters(ctx: Ctx) -> dict:
    ctx.require_admin()
    return dict(ctx.machine().power_parameters)


def set_storage_layout(ctx: Ctx) -> dict:
    m = ctx.machine()
    ctx.require_admin()
    if m.state is not S.READY:
        raise conflict("Cannot change the storage layout on a machine that is not Ready.")
    layout = ctx.get("storage_layout") or "flat"
    if layout not in ("flat", "lvm", "bcache", "vmfs6", "vmfs7", "custom", "blank"):
        raise field_errors(
            {
                "storage_layout": [
                    f"Select a valid choice. {layout} is not one of the available choices."
                ]
            }
        )
    root = _int(ctx, "root_device", m.boot_disk_id)
    if root not in {d["id"] for d in m.block_devices}:
        raise field_errors(
            {
                "root_device": [
                    "Select a valid choice. That choice is not one of the available choices."
                ]
            }
        )
    ctx.store.apply_layout(m, layout, root)
    return machine_json(ctx.store, m)


# -- block devices, results, events, tags --------------------------------------------------------


def _node(ctx: Ctx) -> SimMachine:
    try:
        return ctx.machine()
    except ApiError:
        raise not_found("Node") from None


def list_blockdevices(ctx: Ctx) -> list:
    m = _node(ctx)
    return [blockdevice_json(m, d) for d in sorted(m.block_devices, key=lambda d: d["id"])]


def _blockdevice(ctx: Ctx) -> tuple[SimMachine, dict]:
    m = _node(ctx)
    dev = next((d for d in m.block_devices if str(d["id"]) == ctx.args["id"]), None)
    if dev is None:
        raise not_found("BlockDevice")
    return m, dev


def read_blockdevice(ctx: Ctx) -> dict:
    m, dev = _blockdevice(ctx)
    return blockdevice_json(m, dev)


def set_boot_disk(ctx: Ctx) -> str:
    m, dev = _blockdevice(ctx)
    ctx.require_admin()
    if dev.get("type", "physical") != "physical":
        raise bad_request("Cannot set a virtual block device as the boot disk.")
    if m.state is not S.READY:
        raise conflict("Cannot set as boot disk because the machine is not Ready.")
    m.boot_disk_id = dev["id"]  # only the pointer moves; the layout stays where it was (§6)
    ctx.store.dirty()
    return "OK"


def download_result(ctx: Ctx) -> str:
    m = _node(ctx)
    text = m.logs.get(ctx.args["id"])
    if text is None:
        raise not_found("ScriptSet")
    return text


def query_events(ctx: Ctx) -> dict:
    level = (ctx.get("level") or "INFO").upper()
    from racksmith.lab.maassim.state import LEVELS

    if level not in LEVELS:
        raise bad_request(f"Unrecognised log level: {level}")
    limit = _int(ctx, "limit", 100)
    if limit > 1000:
        raise bad_request(f"Requested number of events {limit} is greater than limit: 1000")
    events = ctx.store.query_events(
        nodes=ctx.getlist("id"),
        hostnames=ctx.getlist("hostname"),
        macs=[m.lower() for m in ctx.getlist("mac_address")],
        level=level,
        limit=limit,
        after=_int(ctx, "after"),
        before=_int(ctx, "before"),
    )
    uri = f"{API}events/?op=query&limit={limit}"
    return {
        "count": len(events),
        "events": [event_json(e) for e in events],
        "next_uri": f"{uri}&before={events[-1]['id']}" if events else uri,
        "prev_uri": f"{uri}&after={events[0]['id']}" if events else uri,
    }


def list_tags(ctx: Ctx) -> list:
    return [tag_json(t) for t in ctx.store.tags.values()]


def create_tag(ctx: Ctx) -> dict:
    ctx.require_admin()
    name = ctx.get("name") or ""
    if not name:
        raise field_errors({"name": ["This field is required."]})
    if not _TAG.match(name):
        raise field_errors({"name": ["Invalid character in tag name."]})
    if name in ctx.store.tags:
        raise field_errors({"name": ["Tag with this Name already exists."]})
    tag = {
        "name": name,
        "comment": ctx.get("comment") or "",
        "definition": ctx.get("definition") or "",
        "kernel_opts": ctx.get("kernel_opts") or "",
    }
    ctx.store.tags[name] = tag
    ctx.store.dirty()
    return tag_json(tag)


def _tag(ctx: Ctx) -> dict:
    tag = ctx.store.tags.get(ctx.args["name"])
    if tag is None:
        raise not_found("Tag")
    return tag


def read_tag(ctx: Ctx) -> dict:
    return tag_json(_tag(ctx))


def update_nodes(ctx: Ctx) -> dict:
    ctx.require_admin()
    tag = _tag(ctx)
    if tag["definition"]:
        raise conflict("Cannot update nodes of a tag with a definition.")
    added = removed = 0
    for sid in ctx.getlist("add"):
        m = ctx.store.machines.get(sid)
        if m is None:
            raise field_errors({"add": [f"Unknown node(s): {sid}."]})
        if tag["name"] not in m.tags:
            m.tags.append(tag["name"])
            added += 1
    for sid in ctx.getlist("remove"):
        m = ctx.store.machines.get(sid)
        if m is not None and tag["name"] in m.tags:
            m.tags.remove(tag["name"])
            removed += 1
    ctx.store.dirty()
    return {"added": added, "removed": removed}


def tag_machines(ctx: Ctx) -> list:
    name = _tag(ctx)["name"]
    return [machine_json(ctx.store, m) for m in ctx.store.machines.values() if name in m.tags]


# -- the test API (not MAAS): fault injection and clock control ----------------------------------


def sim_faults(ctx: Ctx) -> dict:
    ctx.require_admin()
    target = ctx.get("machine") or ""
    store = ctx.store
    m = (
        store.machines.get(target)
        or store.by_mac(target.lower())
        or next((x for x in store.machines.values() if x.hostname == target), None)
    )
    if m is None:
        raise not_found("Machine")
    store.set_faults(m, ctx.getlist("add"), ctx.getlist("remove"))
    return {"system_id": m.system_id, "faults": m.faults}


def sim_http_faults(ctx: Ctx) -> dict:
    ctx.require_admin()
    rule = {k: ctx.get(k) for k in ("method", "path", "op", "body") if ctx.get(k)}
    rule["status"] = _int(ctx, "status", 503)
    rule["count"] = _int(ctx, "count", 1)
    if ctx.get("retry_after"):
        rule["retry_after"] = ctx.get("retry_after")
    if ctx.get("stall"):
        rule["stall"] = float(ctx.get("stall"))
    rule["after"] = ctx.flag("after")
    ctx.store.add_http_fault(**rule)
    return {"queued": len(ctx.store.http_faults)}


def sim_clock(ctx: Ctx) -> dict:
    ctx.require_admin()
    try:
        ctx.store.clock.skew = float(ctx.get("skew") or 0)
    except ValueError:
        raise field_errors({"skew": ["Enter a number of seconds."]}) from None
    return {"skew": ctx.store.clock.skew, "wall": time.time() + ctx.store.clock.skew}


def sim_stats(ctx: Ctx) -> dict:
    return {"requests": dict(ctx.store.stats), "machines": len(ctx.store.machines)}


def A(method: str, op: str | None, fn, doc: str = "") -> Action:
    return Action(method, op, fn, doc)


RESOURCES: tuple[Resource, ...] = (
    Resource(
        "VersionHandler",
        f"{API}version/",
        "Information about this MAAS instance.",
        anon=(A("GET", None, version),),
        anon_name="VersionHandler",
    ),
    Resource(
        "DescribeHandler",
        f"{API}describe/",
        "Describe the API.",
        anon=(A("GET", None, describe),),
        anon_name="DescribeHandler",
    ),
    Resource(
        "UsersHandler",
        f"{API}users/",
        "Manage the user accounts of this MAAS.",
        auth=(A("GET", "whoami", whoami, "Returns the currently logged in user."),),
    ),
    Resource(
        "MaasHandler",
        f"{API}maas/",
        "Manage the MAAS server.",
        auth=(A("GET", "get_config", get_config), A("POST", "set_config", set_config)),
    ),
    Resource(
        "BootResourcesHandler",
        f"{API}boot-resources/",
        "Manage the boot resources.",
        auth=(A("GET", None, boot_resources),),
    ),
    Resource(
        "ZonesHandler", f"{API}zones/", "Manage physical zones.", auth=(A("GET", None, zones),)
    ),
    Resource(
        "ResourcePoolsHandler",
        f"{API}resourcepools/",
        "Manage resource pools.",
        auth=(A("GET", None, pools), A("POST", None, create_pool)),
    ),
    Resource(
        "MachinesHandler",
        f"{API}machines/",
        "Manage the collection of all the machines.",
        auth=(
            A("GET", None, list_machines, "List machines, optionally filtered."),
            A("POST", None, create_machine, "Create a new machine."),
            A("GET", "power_parameters", collection_power_parameters),
        ),
        anon=(A("POST", None, create_machine, "Anonymous enlistment: a New machine."),),
        anon_name="AnonMachinesHandler",
    ),
    Resource(
        "MachineHandler",
        f"{API}machines/{{system_id}}/",
        "Manage an individual machine.",
        auth=(
            A("GET", None, read_machine),
            A("PUT", None, update_machine),
            A("DELETE", None, delete_machine),
            A("POST", "commission", commission),
            A("POST", "deploy", deploy),
            A("POST", "release", release),
            A("POST", "abort", abort),
            A("POST", "mark_broken", mark_broken),
            A("POST", "mark_fixed", mark_fixed),
            A("POST", "power_on", power_on),
            A("POST", "power_off", power_off),
            A("GET", "query_power_state", query_power_state),
            A("GET", "power_parameters", machine_power_parameters),
            A("POST", "set_storage_layout", set_storage_layout),
        ),
    ),
    Resource(
        "BlockDevicesHandler",
        f"{API}nodes/{{system_id}}/blockdevices/",
        "Manage block devices on a machine.",
        auth=(A("GET", None, list_blockdevices),),
    ),
    Resource(
        "BlockDeviceHandler",
        f"{API}nodes/{{system_id}}/blockdevices/{{id}}/",
        "Manage a block device on a machine.",
        auth=(A("GET", None, read_blockdevice), A("POST", "set_boot_disk", set_boot_disk)),
    ),
    Resource(
        "NodeScriptResultHandler",
        f"{API}nodes/{{system_id}}/results/{{id}}/",
        "Manage node script results.",
        auth=(A("GET", "download", download_result),),
    ),
    Resource(
        "EventsHandler",
        f"{API}events/",
        "Retrieve filtered node events.",
        auth=(A("GET", "query", query_events),),
    ),
    Resource(
        "TagsHandler",
        f"{API}tags/",
        "Manage all tags known to MAAS.",
        auth=(A("GET", None, list_tags), A("POST", None, create_tag)),
    ),
    Resource(
        "TagHandler",
        f"{API}tags/{{name}}/",
        "Manage a Tag object.",
        auth=(
            A("GET", None, read_tag),
            A("POST", "update_nodes", update_nodes),
            A("GET", "machines", tag_machines),
        ),
    ),
)

#: The test API: same auth and dispatch, deliberately absent from describe/.
SIM_RESOURCES: tuple[Resource, ...] = (
    Resource("SimFaults", "/MAAS/sim/faults/", "", auth=(A("POST", None, sim_faults),)),
    Resource(
        "SimHttpFaults", "/MAAS/sim/http-faults/", "", auth=(A("POST", None, sim_http_faults),)
    ),
    Resource("SimClock", "/MAAS/sim/clock/", "", auth=(A("POST", None, sim_clock),)),
    Resource("SimStats", "/MAAS/sim/stats/", "", auth=(A("GET", None, sim_stats),)),
)

API_HASH = hashlib.sha1(  # noqa: S324 (an identifier, like MAAS's own API hash)
    json.dumps([(r.path, [a.name for a in r.auth + r.anon]) for r in RESOURCES]).encode()
).hexdigest()
