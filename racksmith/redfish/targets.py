"""BMC targets: what an operator types (addresses, CIDRs, ranges, ports) as ``host:port`` pairs.

Grammar of one spec (whitespace-separated or one per list item)::

    10.0.0.5            one address (dotted quad, four decimal octets), default port
    10.0.0.5:8443       with a port
    127.0.0.1:8443-8450 a port range (the lab: many BMCs on one address)
    10.0.0.0/28         every usable host of a network
    10.0.0.10-10.0.0.40 an address range; ``10.0.0.10-40`` abbreviates the last octet
    [fd00::5]:443       IPv6, always in brackets; ``[fd00::]/120`` a network
    bmc01.example.net   a DNS name, only when the site enables names (``allow_names``)

Every spec means exactly one thing, decided here and never by the system resolver: ``127.1``,
``10.0.5``, ``010.0.0.1`` or ``999.1.1.1`` are errors, not host names that ``getaddrinfo``
would quietly turn into 127.0.0.1, 10.0.0.5 or a DNS query (the BMC password would go to
that host). A name is resolved once (:func:`resolve`), and the address actually contacted is
kept in :attr:`Target.address` and reported. Sizes are computed before anything is expanded,
so a typo like ``10.0.0.0/16:1-65535`` is refused at once instead of filling memory.

A spec that is not understood is an error naming the spec, never silently skipped.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from racksmith.transport import numeric_host

DEFAULT_PORT = 443
#: Refuse to expand more than this many targets from one inventory (a /8 typo is not a rack).
MAX_TARGETS = 65536

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?$")
_NUMERIC = re.compile(r"^[0-9.]+$")  # every label numeric: an address attempt, never a name
_IPV4_SHORT_RANGE = re.compile(r"^([0-9]{1,3}(?:\.[0-9]{1,3}){3})-([0-9]{1,3})$")

Resolver = Callable[[str, int], str]


class TargetError(ValueError):
    """A target spec could not be understood; the message quotes it."""


@dataclass(frozen=True, order=True)
class Target:
    """One BMC endpoint. ``host`` is what was asked for (an address or a name); ``address`` is
    the IP that is contacted (equal to ``host`` for addresses, set by :func:`resolve` for
    names)."""

    host: str
    port: int = DEFAULT_PORT
    address: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.address and is_ip(self.host):
            object.__setattr__(self, "address", self.host)

    @property
    def is_name(self) -> bool:
        return not is_ip(self.host)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, scheme: str = "https") -> str:
        """The URL to connect to: the resolved address (the name goes in SNI/Host instead)."""
        where = self.address or self.host
        host = f"[{where}]" if ":" in where else where
        return f"{scheme}://{host}:{self.port}"


def is_ip(text: str) -> bool:
    """An IPv4 or IPv6 address literal (never a name for the resolver)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _ports(text: str | None, spec: str, default_port: int) -> range:
    if text is None or text == "":
        return range(default_port, default_port + 1)
    match = re.fullmatch(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", text)  # ASCII: no full-width digits
    if not match:
        raise TargetError(f"target {spec!r}: port {text!r} is not a number or a range N-M")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if not 1 <= low <= high <= 65535:
        raise TargetError(f"target {spec!r}: port range {text!r} is outside 1-65535 or reversed")
    return range(low, high + 1)


def _split_port(spec: str) -> tuple[str, str | None]:
    """Separate ``host[:ports]``; IPv6 must be in brackets."""
    if spec.startswith("["):
        match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](/[0-9]{1,3})?(?::(.+))?", spec)
        if not match:
            raise TargetError(f"target {spec!r}: expected [IPv6] or [IPv6]/PREFIX, then :PORT")
        return match.group(1) + (match.group(2) or ""), match.group(3)
    if spec.count(":") > 1:
        raise TargetError(f"target {spec!r}: write IPv6 addresses in brackets, e.g. [fd00::5]")
    host, _, ports = spec.partition(":")
    return host, ports or None


def _ipv4(text: str, spec: str) -> ipaddress.IPv4Address:
    """Four decimal octets, no leading zeros: the only IPv4 spelling accepted."""
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        raise TargetError(
            f"target {spec!r}: {text!r} is not a dotted-quad IPv4 address (four octets 0-255)"
        ) from None


class _Hosts:
    """The addresses of one spec, counted before they are listed."""

    def __init__(self, host: str, spec: str, allow_names: bool) -> None:
        self.spec = spec
        self._network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
        self._first = self._last = 0
        self._version = 4
        self._name: str | None = None
        if "/" in host:
            try:
                self._network = ipaddress.ip_network(host, strict=True)
            except ValueError as exc:
                raise TargetError(f"target {spec!r}: {exc}") from None
            if self._network.version == 4:
                _ipv4(host.split("/")[0], spec)  # no '10.1/16' shorthand either
            if self._network.num_addresses <= 2 and self._network.network_address.is_unspecified:
                raise TargetError(f"target {spec!r}: holds the unspecified address")
        elif re.fullmatch(r"[0-9.]+-[0-9.]+", host):
            first, _, last = host.partition("-")
            short = _IPV4_SHORT_RANGE.match(host)
            if short:
                last = first.rsplit(".", 1)[0] + "." + short.group(2)
            start, end = _ipv4(first, spec), _ipv4(last, spec)
            if int(end) < int(start):
                raise TargetError(f"target {spec!r}: the range ends before it starts")
            if start.is_unspecified:
                raise TargetError(f"target {spec!r}: starts at the unspecified address 0.0.0.0")
            self._first, self._last = int(start), int(end)
        elif is_ip(host):
            address = ipaddress.ip_address(host)
            if address.version == 4:
                _ipv4(host, spec)
            elif not spec.startswith("["):
                raise TargetError(f"target {spec!r}: write IPv6 addresses in brackets")
            elif address.ipv4_mapped is not None:  # [::ffff:127.0.0.1] is 127.0.0.1: one BMC
                address = address.ipv4_mapped
            if address.is_unspecified:
                raise TargetError(
                    f"target {spec!r}: {host!r} is the unspecified address (to a connect it "
                    "means this host); give the BMC's own address"
                )
            self._first = self._last = int(address)
            self._version = address.version
        elif _NUMERIC.match(host) or numeric_host(host):
            raise TargetError(
                f"target {spec!r}: {host!r} is not a dotted-quad IPv4 address "
                "(four octets 0-255); it is never treated as a host name"
            )
        elif _HOSTNAME.match(host):
            if not allow_names:
                raise TargetError(
                    f"target {spec!r}: host names are disabled; give the BMC's address, or "
                    "enable names (allow_names / --allow-names) to resolve each name once"
                )
            self._name = host.lower().rstrip(".")
        else:
            raise TargetError(f"target {spec!r}: not an address, network, range or host name")

    def __len__(self) -> int:
        if self._name is not None:
            return 1
        if self._network is not None:
            size = self._network.num_addresses
            if size <= 2:
                return size
            return size - 2 if self._network.version == 4 else size - 1  # as hosts() lists them
        return self._last - self._first + 1

    def __iter__(self):
        if self._name is not None:
            yield self._name
        elif self._network is not None:
            hosts = self._network.hosts() if self._network.num_addresses > 2 else self._network
            yield from (str(ip) for ip in hosts)
        else:
            make = ipaddress.IPv4Address if self._version == 4 else ipaddress.IPv6Address
            yield from (str(make(n)) for n in range(self._first, self._last + 1))


def _plan(spec: str, default_port: int, allow_names: bool) -> tuple[_Hosts, range]:
    spec = spec.strip()
    if not spec:
        raise TargetError("empty target")
    host, ports = _split_port(spec)
    port_range = _ports(ports, spec, default_port)
    hosts = _Hosts(host, spec, allow_names)
    size = len(hosts) * len(port_range)
    if size > MAX_TARGETS:
        raise TargetError(
            f"target {spec!r}: {len(hosts)} addresses x {len(port_range)} ports = {size} "
            f"targets, more than {MAX_TARGETS}; narrow the range"
        )
    return hosts, port_range


def parse(
    spec: str, default_port: int = DEFAULT_PORT, *, allow_names: bool = False
) -> list[Target]:
    """Expand one spec into targets, in address order (sizes checked first)."""
    hosts, port_range = _plan(spec, default_port, allow_names)
    return [Target(h, p) for h in hosts for p in port_range]


def count(spec: str, default_port: int = DEFAULT_PORT, *, allow_names: bool = False) -> int:
    """How many targets ``spec`` names, without listing them."""
    hosts, port_range = _plan(spec, default_port, allow_names)
    return len(hosts) * len(port_range)


def expand(
    specs: Iterable[str] | str,
    default_port: int = DEFAULT_PORT,
    *,
    allow_names: bool = False,
) -> list[Target]:
    """Expand many specs (a list, or one whitespace/comma separated string), first seen wins.

    Every spec is checked and sized before any is expanded; no specs at all is an error (a
    command that asks nothing must not succeed).
    """
    if isinstance(specs, str):
        specs = re.split(r"[\s,]+", specs.strip())
    specs = [str(s).strip() for s in specs if str(s).strip()]
    if not specs:
        raise TargetError("no targets given")
    total = sum(count(s, default_port, allow_names=allow_names) for s in specs)
    if total > MAX_TARGETS:
        raise TargetError(f"{total} targets in all, more than {MAX_TARGETS}; narrow the ranges")
    seen: dict[Target, None] = {}
    for spec in specs:
        for target in parse(spec, default_port, allow_names=allow_names):
            seen.setdefault(target, None)
    return list(seen)


def system_resolver(name: str, port: int) -> str:
    """The first TCP address the system resolver gives for ``name``."""
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TargetError(f"target {name!r}: cannot resolve ({exc})") from None
    if not infos:
        raise TargetError(f"target {name!r}: the resolver returned no address")
    return str(infos[0][4][0])


def resolve(found: Iterable[Target], resolver: Resolver = system_resolver) -> list[Target]:
    """Each name resolved exactly once (all its ports share the answer); addresses unchanged.

    A name that does not resolve keeps an empty ``address``; the client reports it as
    unreachable for that BMC alone. A name that resolves to an address:port already listed
    (``localhost:8443`` beside ``127.0.0.1:8443``) is that BMC again and is dropped: one BMC
    is asked once, whatever its spellings.
    """
    answers: dict[str, str] = {}
    out = []
    contacted: set[tuple[str, int]] = {(t.address, t.port) for t in found if t.address}
    for target in found:
        if target.address:
            out.append(target)
            continue
        if target.host not in answers:
            try:
                answers[target.host] = resolver(target.host, target.port)
            except TargetError:
                answers[target.host] = ""
        address = answers[target.host]
        if address and (address, target.port) in contacted:
            continue
        contacted.add((address, target.port))
        out.append(Target(target.host, target.port, address))
    return out
