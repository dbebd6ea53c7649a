"""The lab's closed network: one bridge per lab, one network namespace + veth per test host.

Nothing here routes anywhere: the bridge is attached to no physical NIC, hosts get no default
route, and ``ip_forward`` is left alone. Names derive from the bridge so that two labs on one
machine (distinct bridges and subnets) never collide; interface names obey the kernel's
15-character limit.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import subprocess

from racksmith.lab.errors import LabError
from racksmith.lab.proc import run

IFNAMSIZ = 15
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")


def check_host_name(name: str) -> str:
    """A test host's name becomes a hostname, a netns name and a directory: keep it plain."""
    if not _HOST_NAME.match(name):
        raise LabError(
            f"host name {name!r} is not a valid hostname (lower-case letters, digits, '-')"
        )
    return name


def veth_name(bridge: str, ip: str, prefixlen: int = 24) -> str:
    """Controller-side veth of the host at ``ip`` on ``bridge``: ``<bridge>-<host number>``.

    The host number (the address within its /``prefixlen``: the last octet on a /24, up to 511
    on a /23) is unique on the subnet and the bridge is unique on the machine, so the pair is
    unique; when the readable form would exceed 15 characters a hash of the bridge stands in.
    """
    number = int(ipaddress.IPv4Address(ip)) & ((1 << (32 - prefixlen)) - 1)
    octet = str(number)
    name = f"{bridge}-{octet}"
    if len(name) <= IFNAMSIZ:
        return name
    digest = hashlib.sha256(bridge.encode()).hexdigest()[:8]
    return f"rs{digest}-{octet}"


def netns_name(bridge: str, host: str) -> str:
    """Namespace names are file names under /run/netns, so only uniqueness matters."""
    return f"{bridge}-{host}"


def bridge_mac(bridge: str) -> str:
    """A fixed, locally administered MAC for the bridge, from its name.

    Why: a Linux bridge without an address of its own takes the lowest MAC among its ports, so
    it changes whenever a test host's veth or a VM's tap with a lower one joins or leaves. The
    hosts' ARP entries for the controller then point at a MAC nobody answers for until they
    expire: apt through the controller's cache failed with "connection timed out" on every
    demo host while another scenario's hosts came and went on the same bridge.
    """
    digest = hashlib.sha256(f"racksmith-bridge:{bridge}".encode()).digest()
    return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))


def bridge_commands(bridge: str, address: str) -> list[list[str]]:
    """Create (or repair) the bridge with the controller's address ``address`` (CIDR) and its
    fixed MAC (:func:`bridge_mac`)."""
    return [
        ["ip", "link", "add", bridge, "type", "bridge"],
        ["ip", "link", "set", bridge, "address", bridge_mac(bridge)],
        ["ip", "addr", "replace", address, "dev", bridge],
        ["ip", "link", "set", bridge, "up"],
    ]


def host_commands(
    *, bridge: str, netns: str, veth: str, address: str, mac: str | None
) -> list[list[str]]:
    """Namespace + veth pair whose inner end is ``eth0`` (with ``mac``, when given).

    Deliberately no default route: anything off the lab subnet fails at once.
    """
    peer = ["peer", "name", "eth0"]
    if mac:
        if not _MAC.match(mac):
            raise LabError(f"MAC {mac!r} is not of the form 02:5a:00:01:01:00")
        peer += ["address", mac]
    return [
        ["ip", "netns", "add", netns],
        ["ip", "link", "add", veth, "type", "veth", *peer, "netns", netns],
        ["ip", "link", "set", veth, "master", bridge, "up"],
        ["ip", "-n", netns, "addr", "add", address, "dev", "eth0"],
        ["ip", "-n", netns, "link", "set", "eth0", "up"],
        ["ip", "-n", netns, "link", "set", "lo", "up"],
    ]


def link_exists(name: str) -> bool:
    return (
        subprocess.run(
            ["ip", "link", "show", "dev", name], capture_output=True, check=False
        ).returncode
        == 0
    )


def netns_exists(name: str) -> bool:
    return name in netns_list()


def netns_list() -> list[str]:
    out = run(["ip", "-j", "netns", "list"], check=False).strip()
    try:
        return [entry["name"] for entry in json.loads(out or "[]")]
    except (ValueError, KeyError, TypeError):
        return []


def bridge_ports(bridge: str) -> list[str]:
    out = run(["ip", "-j", "link", "show", "master", bridge], check=False).strip()
    try:
        return [entry["ifname"] for entry in json.loads(out or "[]")]
    except (ValueError, KeyError, TypeError):
        return []


def stale_addresses(addr_json: str, controller_ip: str, prefixlen: int) -> list[str]:
    """The controller's address on the bridge with another prefix length (``ip -j addr show``
    output): left from before the rack grew past one /24, it would keep a second route."""
    try:
        links = json.loads(addr_json or "[]")
        infos = [info for link in links for info in link.get("addr_info", [])]
    except (ValueError, AttributeError, TypeError):
        return []
    return [
        f"{info['local']}/{info['prefixlen']}"
        for info in infos
        if info.get("local") == controller_ip and info.get("prefixlen") != prefixlen
    ]


def ensure_bridge(bridge: str, controller_ip: str, prefixlen: int = 24) -> None:
    commands = bridge_commands(bridge, f"{controller_ip}/{prefixlen}")
    existed = link_exists(bridge)
    if existed:
        commands = commands[1:]
    for argv in commands:
        run(argv)
    if existed:
        shown = run(["ip", "-j", "addr", "show", "dev", bridge], check=False)
        for address in stale_addresses(shown, controller_ip, prefixlen):
            run(["ip", "addr", "del", address, "dev", bridge], check=False)


def delete_bridge(bridge: str) -> None:
    """Remove the bridge and every veth still attached to it (ports outlive their bridge)."""
    for port in bridge_ports(bridge):
        run(["ip", "link", "del", port], check=False)
    if link_exists(bridge):
        run(["ip", "link", "del", bridge])


def create_host_net(*, bridge: str, netns: str, veth: str, address: str, mac: str | None) -> None:
    delete_host_net(netns=netns, veth=veth)  # a crashed run must not poison this one
    try:
        for argv in host_commands(bridge=bridge, netns=netns, veth=veth, address=address, mac=mac):
            run(argv)
    except LabError:
        delete_host_net(netns=netns, veth=veth)
        raise


def delete_host_net(*, netns: str, veth: str) -> None:
    """Delete the veth explicitly: `ip netns del` only drops the name while anything (an SSH
    ControlPersist socket, say) still holds the namespace, and its veth would live on."""
    if link_exists(veth):
        run(["ip", "link", "del", veth], check=False)
    if netns_exists(netns):
        run(["ip", "netns", "del", netns], check=False)
