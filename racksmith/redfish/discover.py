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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any

from racksmith.redfish import parse
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.redfish.targets import Target, resolve
from racksmith.secrets import redact

log = logging.getLogger(__name__)

SYSTEMS = "/redfish/v1/Systems"
FIRMWARE_INVENTORY = "/redfish/v1/UpdateService/FirmwareInventory"
EXTRAS = frozenset({"firmware", "infiniband", "pcie", "memory"})
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
    pxe_rules: tuple[str, ...] = parse.DEFAULT_PXE_RULES
    extras: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not (self.deadline > 0 and math.isfinite(self.deadline)):  # NaN: no deadline at all
            raise ValueError(f"deadline must be a positive number of seconds, not {self.deadline}")
        unknown = set(self.extras) - EXTRAS
        if unknown:
            raise ValueError(f"unknown extras {sorted(unknown)}; choose from {sorted(EXTRAS)}")
        parse.validate_pxe_rules(self.pxe_rules)


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
        return out


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


def collect(client: RedfishClient, options: DiscoveryOptions) -> parse.HostFacts:
    """Fetch and parse one BMC's facts; raises RedfishError/ParseError when it cannot."""
    systems = client.get_collection(SYSTEMS)
    if not systems:
        raise parse.ParseError(
            ErrorKind.INCOMPLETE,
            "Systems collection is empty (iDRAC may be rebuilding its inventory)",
        )
    system = parse.parse_system(systems[0])
    notes: list[str] = []
    if len(systems) > 1:
        notes.append(f"{len(systems)} systems behind this BMC; facts are from {system.uri}")

    processors = client.get_collection(system.processors_uri) if system.processors_uri else []
    gpus = parse.gpus(processors)
    if gpus and parse.gpus_need_firmware(gpus) and system.dell_video_uri:
        gpus = parse.gpus(processors, client.get_collection(system.dell_video_uri))

    nics: list[parse.Nic] = []
    if system.ethernet_interfaces_uri:
        nics = parse.nics_from_ethernet_interfaces(
            client.get_collection(system.ethernet_interfaces_uri)
        )
    infiniband: list[parse.InfinibandAdapter] = []
    if not nics or "infiniband" in options.extras:
        adapters, functions = _collect_adapters(client, system)
        if not nics:
            nics = parse.nics_from_device_functions(functions)
            notes.append("EthernetInterfaces listed no NICs; MACs come from NetworkDeviceFunctions")
        infiniband = parse.infiniband_adapters(adapters, functions)

    manager = None
    if system.manager_uris:
        manager = parse.parse_manager(client.get(system.manager_uris[0]))

    firmware = (
        parse.firmware_inventory(client.get_collection(FIRMWARE_INVENTORY))
        if "firmware" in options.extras
        else []
    )
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
        pxe=parse.choose_pxe(nics, options.pxe_rules),
        gpus=tuple(gpus),
        infiniband=tuple(infiniband),
        firmware=tuple(firmware),
        pcie=tuple(pcie),
        memory=tuple(memory),
        notes=tuple(notes),
    )
    parse.require_complete(facts, options.pxe_rules)
    return facts


def discover_one(target: Target, credentials: Credentials, options: DiscoveryOptions) -> BmcResult:
    """One BMC, never raising: the deadline starts now, the session is always closed."""
    started = time.monotonic()
    client = RedfishClient(target, credentials, options.client, deadline=Deadline(options.deadline))
    facts: parse.HostFacts | None = None
    error: RedfishError | None = None
    try:
        with client:
            facts = collect(client, options)
    except RedfishError as exc:
        exc.bmc = str(target)
        exc.reason = redact(exc.reason)
        error = exc
    except Exception as exc:  # a parser bug or an absurd document must not stop the rack
        log.debug("%s: unexpected error", target, exc_info=True)
        error = RedfishError(
            ErrorKind.MALFORMED,
            redact(f"unexpected {type(exc).__name__}: {exc}")[:300],
            bmc=str(target),
        )
    result = BmcResult(
        bmc=str(target),
        facts=facts,
        error=error,
        address=client.target.address,
        elapsed=time.monotonic() - started,
        requests=client.stats.requests,
        auth=client.stats.auth,
        sessions_created=client.stats.sessions_created,
        sessions_deleted=client.stats.sessions_deleted,
    )
    level = logging.DEBUG if result.ok else logging.INFO
    outcome = f"{error.kind.value}: {error.reason}" if error else "ok"
    log.log(
        level, "%s: %s in %.2fs (%d requests)", target, outcome, result.elapsed, result.requests
    )
    return result


def flag_duplicates(results: Sequence[BmcResult]) -> list[BmcResult]:
    """Mark every BMC whose MAC, serial, service tag or UUID is also claimed by another BMC."""
    claims: dict[tuple[str, str], list[str]] = {}
    for result in results:
        if result.facts is None:
            continue
        f = result.facts
        keys = [("MAC", n.mac) for n in f.nics]
        keys += [("serial", f.system.serial), ("service tag", f.system.service_tag)]
        if f.system.uuid:
            keys.append(("UUID", f.system.uuid))
        for key in dict.fromkeys(keys):
            claims.setdefault(key, []).append(result.bmc)
    clashes: dict[str, list[str]] = {}
    for (what, value), bmcs in claims.items():
        if len(bmcs) > 1:
            for bmc in bmcs:
                others = ", ".join(b for b in bmcs if b != bmc)
                clashes.setdefault(bmc, []).append(f"{what} {value} also reported by {others}")
    out = []
    for result in results:
        if result.bmc in clashes:
            reason = "duplicate identity: " + "; ".join(clashes[result.bmc])
            result = replace(
                result, error=RedfishError(ErrorKind.DUPLICATE, reason, bmc=result.bmc)
            )
        out.append(result)
    return out


def discover(
    targets: Iterable[Target],
    credentials: Credentials,
    options: DiscoveryOptions | None = None,
    *,
    progress: Callable[[int, int, BmcResult], None] | None = None,
) -> list[BmcResult]:
    """All targets, at most ``options.concurrency`` at a time; results in target order."""
    options = options or DiscoveryOptions()
    targets = resolve(targets)  # each name once, before any BMC is asked
    if not targets:
        return []
    results: dict[Target, BmcResult] = {}
    workers = min(options.concurrency, len(targets))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="redfish") as pool:
        futures = {pool.submit(discover_one, t, credentials, options): t for t in targets}
        for done, future in enumerate(as_completed(futures), 1):
            result = future.result()  # discover_one never raises
            results[futures[future]] = result
            if progress:
                progress(done, len(targets), result)
    return flag_duplicates([results[t] for t in targets])
