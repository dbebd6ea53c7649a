"""BMC targets: what an operator types (addresses, CIDRs, ranges, ports) as ``host:port`` pairs.

Grammar of one spec (whitespace-separated or one per list item)::

    10.0.0.5            one address, default port
    10.0.0.5:8443       with a port
    127.0.0.1:8443-8450 a port range (the lab: many BMCs on one address)
    10.0.0.0/28         every usable host of a network (netaddr)
    10.0.0.10-10.0.0.40 an address range; ``10.0.0.10-40`` abbreviates the last octet
    [fd00::5]:443       IPv6 with a port; bmc01.example.net[:port] for DNS names

A spec that is not understood is an error naming the spec, never silently skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import netaddr

DEFAULT_PORT = 443
#: Refuse to expand more than this many targets from one inventory (a /8 typo is not a rack).
MAX_TARGETS = 65536

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


class TargetError(ValueError):
    """A target spec could not be understood; the message quotes it."""


@dataclass(frozen=True, order=True)
class Target:
    host: str
    port: int = DEFAULT_PORT

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, scheme: str = "https") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


def _ports(text: str | None, spec: str, default_port: int) -> list[int]:
    if text is None or text == "":
        return [default_port]
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
    if not match:
        raise TargetError(f"target {spec!r}: port {text!r} is not a number or a range N-M")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if not 1 <= low <= high <= 65535:
        raise TargetError(f"target {spec!r}: port range {text!r} is outside 1-65535 or reversed")
    return list(range(low, high + 1))


def _split_port(spec: str) -> tuple[str, str | None]:
    """Separate ``host[:ports]``; IPv6 needs brackets when it carries a port."""
    if spec.startswith("["):
        match = re.fullmatch(r"\[([^\]]+)\](?::(.+))?", spec)
        if not match:
            raise TargetError(f"target {spec!r}: unbalanced brackets")
        return match.group(1), match.group(2)
    if spec.count(":") > 1:  # bare IPv6, no port
        return spec, None
    host, _, ports = spec.partition(":")
    return host, ports or None


def _hosts(host: str, spec: str) -> list[str]:
    try:
        if "/" in host:
            network = netaddr.IPNetwork(host)
            if network.size > MAX_TARGETS:
                raise TargetError(
                    f"target {spec!r}: {network.size} addresses is more than {MAX_TARGETS}"
                )
            hosts = list(network.iter_hosts()) if network.size > 2 else list(network)
            return [str(ip) for ip in hosts]
        if "-" in host and re.fullmatch(r"[0-9a-fA-F.:]+-[0-9a-fA-F.:]+", host):
            first, last = host.split("-", 1)
            if "." in first and "." not in last and ":" not in last:  # 10.0.0.10-40
                last = first.rsplit(".", 1)[0] + "." + last
            ip_range = netaddr.IPRange(first, last)
            if ip_range.size > MAX_TARGETS:
                raise TargetError(
                    f"target {spec!r}: {ip_range.size} addresses is more than {MAX_TARGETS}"
                )
            return [str(ip) for ip in ip_range]
        if netaddr.valid_ipv4(host, flags=netaddr.INET_PTON) or netaddr.valid_ipv6(host):
            return [str(netaddr.IPAddress(host))]
    except (netaddr.AddrFormatError, ValueError) as exc:
        if isinstance(exc, TargetError):
            raise
        raise TargetError(f"target {spec!r}: {exc}") from None
    if _HOSTNAME.match(host):
        return [host.lower()]
    raise TargetError(f"target {spec!r}: not an address, network, range or host name")


def parse(spec: str, default_port: int = DEFAULT_PORT) -> list[Target]:
    """Expand one spec into targets, in address order."""
    spec = spec.strip()
    if not spec:
        raise TargetError("empty target")
    host, ports = _split_port(spec)
    port_list = _ports(ports, spec, default_port)
    return [Target(h, p) for h in _hosts(host, spec) for p in port_list]


def expand(specs: Iterable[str] | str, default_port: int = DEFAULT_PORT) -> list[Target]:
    """Expand many specs (a list, or one whitespace/comma separated string), first seen wins."""
    if isinstance(specs, str):
        specs = re.split(r"[\s,]+", specs.strip())
    seen: dict[Target, None] = {}
    for spec in specs:
        if not str(spec).strip():
            continue
        for target in parse(str(spec), default_port):
            seen.setdefault(target, None)
            if len(seen) > MAX_TARGETS:
                raise TargetError(f"more than {MAX_TARGETS} targets; narrow the ranges")
    return list(seen)
