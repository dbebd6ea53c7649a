"""The lab rack specification (``inventory/lab/rack.yml``) as typed, validated objects.

Every lab component (host lab, BMC emulation, MAAS simulator) reads the rack through this
module, so a server's identity is defined exactly once: the BMC reports the same PXE MAC that
the test host's ``eth0`` carries and that MAAS enlists.
"""

from __future__ import annotations

import hashlib
import ipaddress
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

#: Faults the lab knows how to inject. Components ignore faults that are not theirs.
KNOWN_FAULTS = frozenset(
    {
        "bmc_unreachable",  # BMC port closed
        "bmc_auth_failed",  # BMC rejects the lab credentials (401)
        "bmc_slow",  # BMC answers past the per-BMC deadline
        "bmc_503",  # BMC answers 503 (RAC0218 session limit) until it recovers
        "bmc_malformed",  # BMC returns JSON that is not Redfish
        "missing_gpu",  # one GPU absent from the Processors collection
        "bmc_hang",  # BMC accepts connections but never answers
        "bmc_busy",  # BMC session table full (leaked sessions): 503 RAC0218 on every login
        "bmc_reset",  # BMC resets every connection after login (RST)
        "bmc_empty_systems",  # Systems collection has no members (after a job-queue clear)
        "bmc_empty_nics",  # no EthernetInterfaces members (iDRAC 7.00); adapters still list MACs
        "bmc_clock_skew",  # BMC clock runs hours ahead of the controller
        "bmc_clock_locked",  # BMC clock runs hours ahead and refuses to be set
        "bmc_boot_quirk",  # boot PATCH answers 400 "depends on other attribute(s)", yet applies
        "bmc_sel_psu",  # the BMC's log holds a Critical "power supply input lost" entry
        "firmware_old",  # the BIOS runs a version behind the lab's baseline (iDRAC models)
        "flash_fails",  # every firmware update task ends in Exception (iDRAC models; rollouts)
        "commission_fails",  # MAAS commissioning fails with an event
        "deploy_fails",  # MAAS deployment fails with an installation log
        "power_fails",  # MAAS power action fails, machine reverts to New
        "deploy_timeout",  # MAAS deployment never reports back: node_timeout fails it
        "maas_busy",  # MAAS answers one 503 with Retry-After (rack controller RPC down)
        "create_504",  # MAAS's nginx answers 504 to a create that succeeded
    }
)

#: What each fault breaks, so a generated rack mixes them (``racksmith lab rack --faults``).
FAULT_KINDS: dict[str, str] = {
    **{name: "bmc" for name in KNOWN_FAULTS if name.startswith("bmc_")},
    **dict.fromkeys(
        ("commission_fails", "deploy_fails", "power_fails", "deploy_timeout", "maas_busy",
         "create_504"),
        "maas",
    ),
    "missing_gpu": "hardware",
    "firmware_old": "hardware",
    "flash_fails": "bmc",  # acts only when a firmware update is sent: site.yml is unaffected
}  # fmt: skip

DEFAULT_SPEC = Path(__file__).resolve().parents[2] / "inventory" / "lab" / "rack.yml"

# Address plan (docs/lab.md). Servers 1..30 sit at .20-.49 of the lab's /24, as always; the
# rest of that /24 stays with the controller (.1), molecule (.50-.199) and spare (.240-.254).
# A rack with more servers gets the whole /23 around the prefix: servers 31..284 take .1-.254
# of the other /24 of that /23, so a rack of up to 284 servers never touches the first
# /24's blocks, and a rack of 30 or fewer keeps exactly its /24.
FIRST_BLOCK = 30
MAX_INDEX = FIRST_BLOCK + 254


def server_ip(prefix: str, index: int) -> str:
    """The address of server ``index`` on the lab network of ``prefix`` (``192.168.250``)."""
    if not 1 <= index <= MAX_INDEX:
        raise ValueError(f"server index {index} is outside 1..{MAX_INDEX}")
    if index <= FIRST_BLOCK:
        return f"{prefix}.{19 + index}"  # .20 upwards: the demo rack's address block
    return str(upper_block(prefix).network_address + (index - FIRST_BLOCK))


def upper_block(prefix: str) -> ipaddress.IPv4Network:
    """The other /24 of the /23 that holds ``prefix``.0/24 (250 -> 251, 247 -> 246)."""
    lower = ipaddress.IPv4Network(f"{prefix}.0/24")
    return next(n for n in lower.supernet(new_prefix=23).subnets(new_prefix=24) if n != lower)


class SpecError(ValueError):
    """The rack file is wrong; the message names the file and the field."""


@dataclass(frozen=True)
class Server:
    index: int
    name: str
    model: str
    ip: str
    bmc_port: int
    faults: frozenset[str] = field(default_factory=frozenset)

    @property
    def service_tag(self) -> str:
        """Seven upper-case alphanumerics, like a Dell service tag (``F54P1G3``)."""
        digest = hashlib.sha256(f"racksmith-lab-tag-{self.index}".encode()).hexdigest()
        return ("L" + digest.upper())[:7].replace("0", "X")

    @property
    def serial(self) -> str:
        return f"CNLAB{self.index:09d}"

    @property
    def uuid(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"racksmith-lab:server:{self.index}"))

    def mac(self, port: int) -> str:
        """Locally administered, unicast MACs: ``02:5a:<index 2 bytes>:<port>:00``."""
        hi, lo = divmod(self.index, 256)
        return f"02:5a:{hi:02x}:{lo:02x}:{port:02x}:00"

    def gpu_serial(self, slot: int) -> str:
        """Thirteen digits, like an NVIDIA board serial (``1654422007043``); one per GPU slot."""
        return f"16549{self.index:05d}{slot:03d}"

    @property
    def pxe_mac(self) -> str:
        """The first integrated port (``NIC.Integrated.1-1-1``) is the PXE port in the lab."""
        return self.mac(1)


@dataclass(frozen=True)
class RackSpec:
    path: Path
    bridge: str
    prefix: str
    apt_proxy_port: int
    bmc_listen: str
    bmc_base_port: int
    bmc_scheme: str
    maas_listen: str
    servers: tuple[Server, ...]

    @property
    def controller_ip(self) -> str:
        return f"{self.prefix}.1"

    @property
    def prefixlen(self) -> int:
        """24 while every server fits the first block (.20-.49); 23 once one does not."""
        return 24 if all(s.index <= FIRST_BLOCK for s in self.servers) else 23

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"{self.controller_ip}/{self.prefixlen}", strict=False)

    def server(self, name: str) -> Server:
        for server in self.servers:
            if server.name == name:
                return server
        raise KeyError(f"no server named {name!r} in {self.path}")

    def by_mac(self, mac: str) -> Server | None:
        mac = mac.lower()
        return next((s for s in self.servers if s.pxe_mac == mac), None)


def _require(mapping: dict, key: str, where: str, path: Path):
    if not isinstance(mapping, dict) or key not in mapping:
        raise SpecError(f"{path}: missing '{where}{key}'")
    return mapping[key]


def load(path: Path | str = DEFAULT_SPEC) -> RackSpec:
    """Parse and validate the rack file; raise SpecError naming the file and field."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: cannot read rack spec: {exc}") from exc
    net = _require(data, "network", "", path)
    bmc = _require(data, "bmc", "", path)
    maas = _require(data, "maas", "", path)
    prefix = str(_require(net, "prefix", "network.", path))
    try:
        ipaddress.IPv4Network(f"{prefix}.0/24")
    except ValueError as exc:
        raise SpecError(f"{path}: network.prefix {prefix!r} is not a /24 prefix") from exc
    bridge = str(_require(net, "bridge", "network.", path))
    if len(bridge) > 15:
        raise SpecError(f"{path}: network.bridge {bridge!r} is longer than 15 characters")
    base_port = int(_require(bmc, "base_port", "bmc.", path))
    if not 1 <= base_port <= 65535 - MAX_INDEX:
        raise SpecError(f"{path}: bmc.base_port {base_port} leaves no room for the servers' ports")
    servers = []
    seen: set[str] = set()
    indexes: set[int] = set()
    for i, raw in enumerate(_require(data, "servers", "", path)):
        where = f"servers[{i}]."
        index = int(_require(raw, "index", where, path))
        name = str(_require(raw, "name", where, path))
        if not 1 <= index <= MAX_INDEX:
            raise SpecError(
                f"{path}: {where}index {index} is outside 1..{MAX_INDEX} (1..{FIRST_BLOCK}: "
                f".20-.49 of {prefix}.0/24; above: .1-.254 of {upper_block(prefix)})"
            )
        if index in indexes:
            raise SpecError(f"{path}: {where}index {index} is used twice")
        indexes.add(index)
        if len(name) > 12 or name in seen:
            raise SpecError(f"{path}: {where}name {name!r} is a duplicate or over 12 chars")
        seen.add(name)
        faults = frozenset(raw.get("faults") or ())
        unknown = faults - KNOWN_FAULTS
        if unknown:
            raise SpecError(f"{path}: {where}faults has unknown {sorted(unknown)}")
        servers.append(
            Server(
                index=index,
                name=name,
                model=str(_require(raw, "model", where, path)),
                ip=server_ip(prefix, index),
                bmc_port=base_port + index - 1,
                faults=faults,
            )
        )
    return RackSpec(
        path=path,
        bridge=bridge,
        prefix=prefix,
        apt_proxy_port=int(net.get("apt_proxy_port", 3142)),
        bmc_listen=str(bmc.get("listen", "127.0.0.1")),
        bmc_base_port=base_port,
        bmc_scheme=str(bmc.get("scheme", "https")),
        maas_listen=str(maas.get("listen", "127.0.0.1:5240")),
        servers=tuple(servers),
    )
