"""Discover many BMCs at once: bounded concurrency, a deadline per BMC, one typed result each.

Wall time follows T ~ ceil(N/W) * R * d (N BMCs, W workers, R sequential requests per BMC,
d latency per request), so this module keeps R small: ``$expand`` where the BMC offers it,
only the collections the facts need, optional extras (firmware, InfiniBand, PCIe, memory)
only when asked. Requests to one BMC stay sequential (iDRACs are fragile under parallel load);
parallelism is across BMCs.

No BMC can fail the whole run: every exception becomes a :class:`BmcResult` with an error kind
and a reason. Two BMCs that claim the same MAC, serial, service tag or UUID are both flagged
as duplicates (never merged), because enlisting either by MAC could take over the other.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from racksmith.redfish import bmc_health, parse, pxe, vendors
from racksmith.redfish import firmware as fw
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target, resolve
from racksmith.secrets import redact

log = logging.getLogger(__name__)

SERVICE_ROOT = "/redfish/v1"
SYSTEMS = "/redfish/v1/Systems"
CHASSIS = "/redfish/v1/Chassis"
FIRMWARE_INVENTORY = "/redfish/v1/UpdateService/FirmwareInventory"
REGISTRIES = "/redfish/v1/Registries"
EXTRAS = frozenset({"firmware", "bios", "bmc_health", "infiniband", "pcie", "memory"})
#: Seconds per BMC (racksmith.redfish.options documents it for every surface).
DEFAULT_DEADLINE = 120.0
DEFAULT_CONCURRENCY = 64

#: Keys of every result, in this order (CLI JSON and docs rely on it).
PUBLIC_KEYS = (
    "bmc",
    "address",
    "service_tag",
    "serial",
    "model",
    "manufacturer",
    "uuid",
    "bmc_firmware",
    "bios_version",
    "power_state",
    "health",
    "nics",
    "pxe_mac",
    "pxe_rule",
    "gpus",
    "memory_gib",
    "error",
    "error_kind",
)


@dataclass(frozen=True)
class DiscoveryOptions:
    client: ClientOptions = field(default_factory=ClientOptions)
    concurrency: int = DEFAULT_CONCURRENCY
    deadline: float = DEFAULT_DEADLINE  # seconds per BMC, from its first request to its last
    #: None: each host's vendor profile rules (racksmith.redfish.pxe)
    pxe_rules: tuple[str, ...] | None = None
    extras: frozenset[str] = frozenset()
    vendor: str = vendors.AUTO  # a profile name to use for every BMC, or auto

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not (self.deadline > 0 and math.isfinite(self.deadline)):  # NaN: no deadline at all
            raise ValueError(f"deadline must be a positive number of seconds, not {self.deadline}")
        unknown = set(self.extras) - EXTRAS
        if unknown:
            raise ValueError(f"unknown extras {sorted(unknown)}; choose from {sorted(EXTRAS)}")
        if self.pxe_rules is not None:
            pxe.validate_pxe_rules(self.pxe_rules)
        if self.vendor != vendors.AUTO:
            vendors.profile_named(self.vendor)

    def rules_for(self, profile: vendors.VendorProfile) -> tuple[str, ...]:
        """The PXE rules for a host: the ones configured, else (None) its vendor profile's."""
        return pxe.rules_for(self.pxe_rules, profile.pxe_rules)


@dataclass(frozen=True)
class BmcResult:
    """One BMC's outcome. ``facts`` may be set together with ``error`` (a duplicate keeps its
    facts)."""

    bmc: str
    facts: parse.HostFacts | None
    error: RedfishError | None
    elapsed: float = 0.0
    address: str = ""  # the IP actually contacted (a name's one resolution)
    requests: int = 0
    auth: str | None = None
    sessions_created: int = 0
    sessions_deleted: int = 0
    #: where one BMC gave several results (a multi-node chassis): the ComputerSystem this one is
    #: about, known even when its facts are not; None for a BMC with one host
    system: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.facts is not None

    @property
    def group(self) -> str:
        return "bmc_ok" if self.ok else (self.error.group if self.error else "bmc_malformed")

    def as_dict(self) -> dict[str, Any]:
        """Every public key, facts or nulls, then ``error`` (reason or null) and ``error_kind``."""
        facts = self.facts.public() if self.facts else {}
        out: dict[str, Any] = {key: facts.get(key) for key in PUBLIC_KEYS}
        out["bmc"] = self.bmc
        out["address"] = self.address or None
        if self.facts is None:
            out["nics"] = []
            out["gpus"] = []
        out["error"] = self.error.reason if self.error else None
        out["error_kind"] = self.error.kind.value if self.error else None
        out.update({k: v for k, v in facts.items() if k not in out})
        out["system_uri"] = out.get("system_uri") or self.system
        return out

    @property
    def name(self) -> str:
        """The BMC, and the system where one BMC has several results (used in messages)."""
        return f"{self.bmc} ({self.system})" if self.system else self.bmc


def _collect_adapters(
    client: RedfishClient, system: parse.SystemInfo
) -> tuple[list[parse.Doc], dict[str, list[parse.Doc]]]:
    """Chassis NetworkAdapters and their functions (the MAC fallback and the InfiniBand source)."""
    if not system.chassis_uris:
        return [], {}
    chassis = client.get(system.chassis_uris[0])
    adapters_uri = parse.link(chassis, "NetworkAdapters")
    if not adapters_uri:
        return [], {}
    adapters = client.get_collection(adapters_uri)
    functions: dict[str, list[parse.Doc]] = {}
    for adapter in adapters:
        fn_uri = parse.link(adapter, "NetworkDeviceFunctions")
        adapter_id = str(adapter.get("Id") or adapter.get("@odata.id"))
        functions[adapter_id] = client.get_collection(fn_uri) if fn_uri else []
    return adapters, functions


def _pcie_gpus(
    client: RedfishClient, system: parse.SystemInfo, notes: list[str]
) -> list[parse.Gpu]:
    """GPUs among PCIe devices: the host's chassis first, then any chassis of the service; the
    first chassis that lists GPUs wins (Supermicro HGX: ``Chassis/1/PCIeDevices/GPU1..8``)."""
    seen: set[str] = set()

    def scan(chassis: parse.Doc) -> list[parse.Gpu]:
        uri = parse.link(chassis, "PCIeDevices")
        if not uri or uri in seen:
            return []
        seen.add(uri)
        devices = client.get_collection(uri)
        found = parse.gpus_from_pcie(devices)
        unnamed = [
            d for d in devices if vendors.is_gpu_device(d) and parse.link(d, "PCIeFunctions")
        ]
        if any(g.model is None for g in found) and unnamed:
            functions = {
                str(d.get("@odata.id")): client.get_collection(parse.link(d, "PCIeFunctions") or "")
                for d in unnamed
            }
            found = parse.gpus_from_pcie(devices, functions)
        if found:
            notes.append(f"GPUs from the PCIe devices of {chassis.get('@odata.id')}")
        return found

    for uri in system.chassis_uris:
        found = scan(client.get(uri))
        if found:
            return found
    for chassis in client.get_collection(CHASSIS):
        if chassis.get("@odata.id") not in system.chassis_uris:
            found = scan(chassis)
            if found:
                return found
    return []


def _hpe_device_gpus(
    client: RedfishClient, system: parse.SystemInfo, notes: list[str]
) -> list[parse.Gpu]:
    """GPUs from HPE iLO's OEM ``Devices`` of the host's chassis, each confirmed by its PCI
    function's display class (``parse.gpus_from_hpe_devices``)."""
    if not system.chassis_uris:
        return []
    chassis = client.get(system.chassis_uris[0])
    uri = parse.nested_link(chassis, "Oem", "Hpe", "Links", "Devices")
    if uri is None:
        return []
    devices = [d for d in client.get_collection(uri) if str(d.get("DeviceType")).upper() == "GPU"]
    functions: dict[str, parse.Doc] = {}
    for device in devices:
        for instance in device.get("DeviceInstances") or ():
            target = instance.get("@odata.id") if isinstance(instance, dict) else None
            if isinstance(target, str) and target.rstrip("/") not in functions:
                functions[target.rstrip("/")] = client.get(target)
    found = parse.gpus_from_hpe_devices(devices, functions)
    if found:
        skipped = len(devices) - len(found)
        left_out = f" ({skipped} typed GPU without a display function left out)" if skipped else ""
        notes.append(f"GPUs from HPE OEM devices of {chassis.get('@odata.id')}{left_out}")
    return found


def _gpus(
    client: RedfishClient,
    system: parse.SystemInfo,
    group: vendors.SystemGroup,
    profile: vendors.VendorProfile,
    notes: list[str],
) -> list[parse.Gpu]:
    """GPUs from the profile's sources, in its order; the first source that lists any wins, so
    a GPU seen both as a processor and as a PCIe device (Lenovo) is counted once."""
    for source in profile.gpu_sources:
        found: list[parse.Gpu] = []
        if source == "processors" and system.processors_uri:
            processors = client.get_collection(system.processors_uri)
            found = parse.gpus(processors)
            if (
                found
                and profile.dell_video
                and parse.gpus_need_firmware(found)
                and system.dell_video_uri
            ):
                found = parse.gpus(processors, client.get_collection(system.dell_video_uri))
        elif source == "baseboard":
            for board in group.baseboards:
                uri = parse.link(board, "Processors")
                board_gpus = parse.gpus(client.get_collection(uri)) if uri else []
                if board_gpus:
                    notes.append(f"GPUs from the baseboard system {board.get('@odata.id')}")
                found += board_gpus
        elif source == "pcie":
            found = _pcie_gpus(client, system, notes)
        elif source == "hpe-devices":
            found = _hpe_device_gpus(client, system, notes)
        if found:
            return found
    return []


class _BootOptions:
    """The host's boot order and boot options, fetched once, when a rule or a NIC source needs
    them."""

    def __init__(self, client: RedfishClient, host: parse.Doc) -> None:
        self._client = client
        boot = host.get("Boot")
        self.order = boot.get("BootOrder") if isinstance(boot, dict) else None
        self.uri = parse.link(boot, "BootOptions") if isinstance(boot, dict) else None
        self._docs: list[parse.Doc] | None = None

    def docs(self) -> list[parse.Doc]:
        if self._docs is None:
            self._docs = self._client.get_collection(self.uri) if self.uri else []
        return self._docs

    def pxe_macs(self) -> list[str]:
        if not isinstance(self.order, list) or not self.order or not self.uri:
            return []
        return pxe.pxe_boot_macs(self.order, self.docs())


def _identity_host(
    client: RedfishClient, host: parse.Doc, profile: vendors.VendorProfile, notes: list[str]
) -> parse.Doc:
    """The host system, with the identity of its chassis where the profile says the system
    carries none (NVIDIA GH200/GB200)."""
    if not (profile.identity_from_chassis and parse.lacks_identity(host)):
        return host
    source = parse.identity_chassis(host, client.get_collection(CHASSIS))
    if source is None:
        return host  # parse_system then names what is missing
    notes.append(f"manufacturer, model and serial from the chassis {source.get('@odata.id')}")
    return parse.with_chassis_identity(host, source)


def _bios_version(
    client: RedfishClient,
    system: parse.SystemInfo,
    profile: vendors.VendorProfile,
    inventory: list[fw.FirmwareItem],
    notes: list[str],
) -> parse.SystemInfo:
    """The BIOS version from the firmware inventory where the system has no ``BiosVersion``."""
    if system.bios_version or not profile.bios_inventory_id:
        return system
    wanted = profile.bios_inventory_id
    item = next((i for i in inventory if i.id == wanted and i.role == "active"), None)
    if item is None and not inventory:
        item = parse.firmware_inventory([client.get(f"{FIRMWARE_INVENTORY}/{wanted}")])[0]
    if item is None or not item.version:
        return system
    notes.append(f"BIOS version from the firmware inventory member {wanted}")
    return replace(system, bios_version=item.version)


def _bmc_health(client: RedfishClient, system_uri: str, notes: list[str]) -> dict[str, Any]:
    """The BMC's own health view (racksmith.redfish.bmc_health): logs, rollups, sensors. A part
    the BMC will not serve (404, malformed) leaves it ``UNKNOWN`` with the reason, never OK; a
    BMC that stops answering is the host's error, as for every other fact."""
    try:
        return bmc_health.read(client, system_uri=system_uri)
    except RedfishError as exc:
        if exc.kind not in (ErrorKind.HTTP, ErrorKind.MALFORMED):
            raise
        why = f"BMC health unreadable: {exc.kind.value}: {exc.reason}"
        notes.append(why)
        return {"status": "UNKNOWN", "causes": [], "findings": [], "unread": [why]}


def _bios(
    client: RedfishClient, host: parse.Doc, host_notes: list[str]
) -> parse.BiosSettings | None:
    """Current BIOS values, the pending ones from the settings object, the registry if the BMC
    publishes it. A settings object that cannot be read leaves the pending values unknown, a
    Bios resource that cannot be read leaves no settings at all (the compliance check then says
    UNKNOWN, never compliant); a missing registry is only a note. The host's other facts stand."""
    uri = parse.link(host, "Bios")
    if not uri:
        host_notes.append("the system links no Bios resource")
        return None
    try:
        bios = client.get(uri)
    except RedfishError as exc:
        host_notes.append(f"BIOS settings {uri} unreadable: {exc.kind.value}")
        return None
    notes: list[str] = []
    pending: parse.Doc | None = None
    known = True
    settings = parse.bios_settings_uri(bios)
    if settings and settings.rstrip("/") != uri.rstrip("/"):
        try:
            pending = client.get(settings)
        except RedfishError as exc:
            known = False
            notes.append(f"pending settings {settings} unreadable: {exc.kind.value}")
    registry = None
    registry_id = bios.get("AttributeRegistry")
    if isinstance(registry_id, str) and registry_id:
        registry = _registry(client, registry_id, notes)
    return parse.parse_bios(bios, pending, registry, notes, pending_known=known)


def _registry(client: RedfishClient, registry_id: str, notes: list[str]) -> parse.Doc | None:
    """The attribute registry the Bios resource names, through ``/redfish/v1/Registries``.

    The registry *file* entry may carry another version than the registry it points at (Dell:
    file ``BiosAttributeRegistry.v1_0_0`` serves ``BiosAttributeRegistry.v1_0_3``), so an entry
    is taken by its exact name, else by the name's stem; the document it locates must then be
    the registry named, or it is not used. Only that entry and that document are fetched."""
    stem = registry_id.split(".", 1)[0]
    try:
        entries = parse.member_links(client.get(REGISTRIES))
        names = {uri.rstrip("/").rsplit("/", 1)[-1]: uri for uri in entries}
        chosen = names.get(registry_id) or next(
            (u for n, u in names.items() if n.split(".", 1)[0] == stem), None
        )
        if chosen is None:
            notes.append(f"attribute registry {registry_id} not published by the BMC")
            return None
        entry = client.get(chosen)
        for location in entry.get("Location") or ():
            target = location.get("Uri") if isinstance(location, dict) else None
            if not isinstance(target, str):
                continue
            registry = client.get(target)
            if registry.get("Id") == registry_id:
                return registry
            notes.append(f"{target} is registry {registry.get('Id')}, not {registry_id}")
    except RedfishError as exc:  # ParseError included: a registry we cannot use is a note
        notes.append(f"attribute registry {registry_id} unreadable: {exc.kind.value}")
    return None


def _collect_host(
    client: RedfishClient,
    options: DiscoveryOptions,
    group: vendors.SystemGroup,
    profile: vendors.VendorProfile,
) -> parse.HostFacts:
    """One host's facts; raises :class:`parse.IncompleteHost` (with every fact read) when the
    PXE NIC cannot be decided, other RedfishErrors when the BMC cannot be read."""
    notes: list[str] = list(group.notes)
    host = _identity_host(client, group.host, profile, notes)
    system = parse.parse_system(host, profile.service_tag_fields)
    gpus = _gpus(client, system, group, profile, notes)
    boot = _BootOptions(client, host)

    nics: list[parse.Nic] = []
    if system.ethernet_interfaces_uri:
        nics = parse.nics_from_ethernet_interfaces(
            client.get_collection(system.ethernet_interfaces_uri)
        )
    if not nics and profile.nics_from_boot_options:
        nics = parse.nics_from_boot_options(boot.docs())
        if nics:
            notes.append("no EthernetInterfaces; MACs come from the network boot options")
    infiniband: list[parse.InfinibandAdapter] = []
    if not nics or "infiniband" in options.extras:
        adapters, functions = _collect_adapters(client, system)
        if not nics:
            nics = parse.nics_from_device_functions(functions)
            notes.append("EthernetInterfaces listed no NICs; MACs come from NetworkDeviceFunctions")
        infiniband = parse.infiniband_adapters(adapters, functions)

    rules = options.rules_for(profile)
    boot_macs = boot.pxe_macs() if "boot:pxe" in rules else []

    manager = None
    if system.manager_uris:
        manager = parse.parse_manager(client.get(system.manager_uris[0]))

    firmware: list[fw.FirmwareItem] = []
    firmware_error = None
    if "firmware" in options.extras:
        try:
            firmware = parse.firmware_inventory(client.get_collection(FIRMWARE_INVENTORY))
        except RedfishError as exc:
            if exc.kind not in (ErrorKind.HTTP, ErrorKind.MALFORMED):
                raise  # the BMC itself failed (timeout, auth, reset): the host's error
            # the host's other facts stand; a baseline check then says UNKNOWN, never compliant
            firmware_error = f"{FIRMWARE_INVENTORY} unreadable: {exc.kind.value}: {exc.reason}"
            notes.append(firmware_error)
    system = _bios_version(client, system, profile, firmware, notes)
    bios = _bios(client, host, notes) if "bios" in options.extras else None
    health = _bmc_health(client, system.uri, notes) if "bmc_health" in options.extras else None
    pcie = (
        parse.pcie_devices(client.get(u) for u in system.pcie_device_uris)
        if "pcie" in options.extras
        else []
    )
    memory = (
        parse.memory_modules(client.get_collection(system.memory_uri))
        if "memory" in options.extras and system.memory_uri
        else []
    )
    facts = parse.HostFacts(
        system=system,
        manager=manager,
        nics=tuple(nics),
        pxe=pxe.choose_pxe(nics, rules, boot_macs),
        gpus=tuple(gpus),
        infiniband=tuple(infiniband),
        firmware=tuple(firmware),
        firmware_error=firmware_error,
        bios=bios,
        bmc_health=health,
        pcie=tuple(pcie),
        memory=tuple(memory),
        notes=tuple(notes),
        vendor=profile.name,
    )
    parse.require_complete(facts, rules)
    return facts


@dataclass(frozen=True)
class HostOutcome:
    """One host behind a BMC: its facts (also when incomplete) and the error, if any."""

    facts: parse.HostFacts | None
    error: RedfishError | None
    system: str | None = None  # the system's @odata.id


def collect_all(client: RedfishClient, options: DiscoveryOptions) -> list[HostOutcome]:
    """Every host behind one BMC: one for a server (its baseboard systems attached), one per
    node for a multi-node chassis. Raises only when nothing host-specific could be read."""
    systems = client.get_collection(SYSTEMS)
    if not systems:
        raise parse.ParseError(
            ErrorKind.INCOMPLETE,
            "Systems collection is empty (iDRAC may be rebuilding its inventory)",
        )
    groups = vendors.partition_systems(systems)
    if not groups:
        ids = ", ".join(str(s.get("@odata.id")) for s in systems)
        raise parse.ParseError(
            ErrorKind.INCOMPLETE, f"no host among the systems ({ids}): none boots or has NICs"
        )
    root: parse.Doc | None = None
    outcomes = []
    for group in groups:
        if (
            root is None
            and options.vendor == vendors.AUTO
            and not vendors.manufacturer_decides(group.host)
        ):
            root = client.get(SERVICE_ROOT)
        profile = vendors.choose(group.host, root, options.vendor)
        uri = group.host.get("@odata.id")
        system = uri if isinstance(uri, str) else None
        try:
            facts = _collect_host(client, options, group, profile)
            outcomes.append(HostOutcome(facts, None, system))
        except parse.IncompleteHost as exc:
            outcomes.append(HostOutcome(exc.facts, exc, system))
        except parse.ParseError as exc:
            if len(groups) == 1:
                raise
            outcomes.append(HostOutcome(None, exc, system))
    return outcomes


def collect(client: RedfishClient, options: DiscoveryOptions) -> parse.HostFacts:
    """The first host's facts; raises its error (an IncompleteHost keeps the facts read)."""
    first = collect_all(client, options)[0]
    if first.error is not None:
        raise first.error
    assert first.facts is not None  # an outcome has facts or an error
    return first.facts


def discover_target(
    target: Target, credentials: Credentials, options: DiscoveryOptions
) -> list[BmcResult]:
    """One BMC, never raising: one result per host behind it (a multi-node chassis has several).
    The deadline starts now; the session is always closed. A host whose PXE NIC could not be
    decided keeps every fact that was read, next to its error."""
    started = time.monotonic()
    client = RedfishClient(target, credentials, options.client, deadline=Deadline(options.deadline))
    outcomes: list[HostOutcome] = []
    try:
        with client:
            outcomes = collect_all(client, options)
    except RedfishError as exc:
        outcomes = [HostOutcome(getattr(exc, "facts", None), exc)]
    except Exception as exc:  # a parser bug or an absurd document must not stop the rack
        log.debug("%s: unexpected error", target, exc_info=True)
        outcomes = [
            HostOutcome(
                None,
                RedfishError(
                    ErrorKind.MALFORMED, redact(f"unexpected {type(exc).__name__}: {exc}")[:300]
                ),
            )
        ]
    elapsed = time.monotonic() - started
    results = []
    for outcome in outcomes:
        error = outcome.error
        if error is not None:
            error.bmc = str(target)
            error.reason = redact(error.reason)
        result = BmcResult(
            bmc=str(target),
            facts=outcome.facts,
            error=error,
            address=client.target.address,
            elapsed=elapsed,
            requests=client.stats.requests,
            auth=client.stats.auth,
            sessions_created=client.stats.sessions_created,
            sessions_deleted=client.stats.sessions_deleted,
            system=outcome.system if len(outcomes) > 1 else None,
        )
        level = logging.DEBUG if result.ok else logging.INFO
        what = f"{error.kind.value}: {error.reason}" if error else "ok"
        log.log(level, "%s: %s in %.2fs (%d requests)", target, what, elapsed, result.requests)
        results.append(result)
    return results


def discover_one(target: Target, credentials: Credentials, options: DiscoveryOptions) -> BmcResult:
    """One BMC's first host (most BMCs have exactly one); see :func:`discover_target`."""
    return discover_target(target, credentials, options)[0]


def flag_duplicates(results: Sequence[BmcResult]) -> list[BmcResult]:
    """Mark every host whose MAC, serial, service tag or UUID is also claimed by another host
    (another BMC, or another node of the same chassis)."""
    claims: dict[tuple[str, str], list[int]] = {}
    for index, result in enumerate(results):
        if result.facts is None or result.error is not None:
            continue  # a failed host keeps its facts for the report, not for identity claims
        f = result.facts
        keys = [("MAC", n.mac) for n in f.nics]
        keys += [("serial", f.system.serial), ("service tag", f.system.service_tag)]
        if f.system.uuid:
            keys.append(("UUID", f.system.uuid))
        for key in dict.fromkeys(keys):
            claims.setdefault(key, []).append(index)
    clashes: dict[int, list[str]] = {}
    for (what, value), holders in claims.items():
        if len(holders) > 1:
            for index in holders:
                others = ", ".join(results[i].name for i in holders if i != index)
                clashes.setdefault(index, []).append(f"{what} {value} also reported by {others}")
    out = []
    for index, result in enumerate(results):
        if index in clashes:
            reason = "duplicate identity: " + "; ".join(clashes[index])
            result = replace(
                result, error=RedfishError(ErrorKind.DUPLICATE, reason, bmc=result.bmc)
            )
        out.append(result)
    return out


#: Seconds between two progress snapshots while no BMC finishes (a hung rack still reports).
PROGRESS_TICK = 1.0


@dataclass(frozen=True)
class DiscoveryProgress:
    """Where a discovery stands: BMCs (targets) answered, failed and pending, seconds since it
    began, and the hosts that failed since the previous snapshot. A BMC counts as failed when
    any of its hosts failed; duplicates are flagged only once every BMC has answered, so they
    are not counted here."""

    total: int
    answered: int
    failed: int
    elapsed: float
    new_failures: tuple[BmcResult, ...] = ()

    @property
    def pending(self) -> int:
        return self.total - self.answered - self.failed

    @property
    def finished(self) -> bool:
        return self.pending == 0


def discover(
    targets: Iterable[Target],
    credentials: Credentials,
    options: DiscoveryOptions | None = None,
    *,
    progress: Callable[[DiscoveryProgress], None] | None = None,
    tick: float = PROGRESS_TICK,
) -> list[BmcResult]:
    """All targets, at most ``options.concurrency`` at a time; results in target order.

    ``progress`` gets a :class:`DiscoveryProgress` whenever BMCs finish and at least every
    ``tick`` seconds while none does, then one last snapshot with nothing pending; it runs in
    the caller's thread, so it may print without locking."""
    options = options or DiscoveryOptions()
    targets = resolve(targets)  # each name once, before any BMC is asked
    if not targets:
        return []
    results: dict[Target, list[BmcResult]] = {}
    workers = min(options.concurrency, len(targets))
    started = time.monotonic()
    answered = failed = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="redfish") as pool:
        futures = {pool.submit(discover_target, t, credentials, options): t for t in targets}
        waiting = set(futures)
        while waiting:
            done, waiting = wait(
                waiting, timeout=tick if progress else None, return_when=FIRST_COMPLETED
            )
            new_failures: list[BmcResult] = []
            for future in done:
                found = future.result()  # discover_target never raises
                results[futures[future]] = found
                bad = [r for r in found if not r.ok]
                failed += bool(bad)
                answered += not bad
                new_failures += bad
            if progress:
                progress(
                    DiscoveryProgress(
                        total=len(targets),
                        answered=answered,
                        failed=failed,
                        elapsed=time.monotonic() - started,
                        new_failures=tuple(new_failures),
                    )
                )
    return flag_duplicates([r for t in targets for r in results[t]])
