"""``ibnetdiscover`` topology files: parse into a :class:`Topology`, and render one (the
generator writes test fabrics in this form).

The format, one block per node::

    vendid=0x2c9
    switchguid=0xfc6a1c0300a00001(fc6a1c0300a00001)
    Switch  65 "S-fc6a1c0300a00001"     # "MF0;ib-leaf-001:MQM9790/U1" enhanced port 0 lid 1 lmc 0
    [1]     "H-e09d730300000001"[1](e09d730300000001)   # "gpu0001 mlx5_0" lid 100 4xNDR
    [33]    "S-fc6a1c0300a00081"[1]         # "MF0;ib-spine-001:MQM9790/U1" lid 129 4xNDR

    Ca      1 "H-e09d730300000001"      # "gpu0001 mlx5_0"
    [1](e09d730300000001)  "S-fc6a1c0300a00001"[1]  # lid 100 lmc 0 "MF0;ib-leaf-001:.." lid 1 4xNDR

Every link is listed from both ends; the two reports must agree, or the file is rejected with
the line of the second one.
"""

from __future__ import annotations

import re

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import HCA, SWITCH, Link, Node, PortRef, Topology, speed_rank

_NODE = re.compile(
    r'^(?P<type>Switch|Ca|Rt)\s+(?P<ports>\d+)\s+"(?P<tag>[SHR])-(?P<guid>[0-9a-fA-F]{1,16})"'
    r'\s*(?:#\s*"(?P<desc>[^"]*)"(?P<rest>.*))?$'
)
_PORT = re.compile(
    r"^\[(?P<port>\d+)\](?:\((?P<pguid>[0-9a-fA-F]+)\))?\s*"
    r'"(?P<tag>[SHR])-(?P<guid>[0-9a-fA-F]{1,16})"\[(?P<peer_port>\d+)\]'
    r"(?:\((?P<peer_pguid>[0-9a-fA-F]+)\))?\s*(?:#(?P<comment>.*))?$"
)
_LID = re.compile(r"\blid\s+(\d+)")
_RATE = re.compile(r"\b(\d+)x([A-Z0-9]+)\s*$")
_PEER_DESC = re.compile(r'"([^"]*)"')
_OWN_LID = re.compile(r"^\s*lid (\d+)\b")  # a Ca port line: its own LID comes first
_PEER_LID = re.compile(r'"[^"]*"\s+lid (\d+)')  # the peer's, after its description
_HEADER = re.compile(r"^[a-z]+guid=|^vendid=|^devid=|^sysimgguid=")
_KINDS = {"Switch": SWITCH, "Ca": HCA, "Rt": HCA}
_TAG_KINDS = {"S": SWITCH, "H": HCA, "R": HCA}


def parse(text: str, source: str = "ibnetdiscover") -> Topology:
    """Parse ``ibnetdiscover`` output; raises :class:`FabricInputError` naming the bad line."""
    topo = Topology(source=source)
    current: Node | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or _HEADER.match(line):
            continue
        node = _NODE.match(line)
        if node:
            lid = _LID.search(node["rest"] or "")
            current = topo.add_node(
                Node(
                    guid=node["guid"].lower().rjust(16, "0"),
                    kind=_KINDS[node["type"]],
                    description=node["desc"] or "",
                    ports=int(node["ports"]),
                    lid=int(lid.group(1)) if lid else None,
                )
            )
            continue
        port = _PORT.match(line)
        if port is None:
            raise FabricInputError(source, number, f"not an ibnetdiscover line: {line[:80]!r}")
        if current is None:
            raise FabricInputError(source, number, "port line before any Switch/Ca line")
        _add_port_line(topo, current, port, source, number)
    if not topo.nodes:
        raise FabricInputError(source, 0, "no Switch or Ca entries: is this ibnetdiscover output?")
    return topo


def _add_port_line(topo: Topology, node: Node, m: re.Match, source: str, number: int) -> None:
    local = PortRef(node.guid, int(m["port"]))
    peer_guid = m["guid"].lower().rjust(16, "0")
    peer = PortRef(peer_guid, int(m["peer_port"]))
    comment = m["comment"] or ""
    if peer_guid not in topo.nodes:
        descs = _PEER_DESC.findall(comment)
        topo.add_node(
            Node(guid=peer_guid, kind=_TAG_KINDS[m["tag"]], description=descs[-1] if descs else "")
        )
    own = _OWN_LID.match(comment) if node.kind == HCA else None
    if own and node.lid is None:
        node.lid = int(own.group(1))  # an HCA's LID is on its port line, not its node line
    plid = _PEER_LID.search(comment)
    if plid and topo.nodes[peer_guid].lid is None:
        topo.nodes[peer_guid].lid = int(plid.group(1))
    rate = _RATE.search(comment)
    width = int(rate.group(1)) if rate else None
    speed = rate.group(2) if rate else None
    if speed is not None and speed_rank(speed) < 0:
        raise FabricInputError(source, number, f"unknown link speed {speed!r}")
    known = topo.add_link(Link(local, peer, width, speed, line=number))
    if known is None:
        return
    if {known.a, known.b} != {local, peer}:
        raise FabricInputError(
            source,
            number,
            f"{topo.describe(local)} -> {topo.describe(peer)} contradicts line {known.line} "
            f"({topo.describe(known.a)} -> {topo.describe(known.b)})",
        )
    if known.width is None:
        known.width, known.speed = width, speed


def render(topo: Topology) -> str:
    """Render ``topo`` as ibnetdiscover prints it (switches first, then HCAs, by GUID)."""
    ends: dict[str, list[tuple[int, PortRef, Link]]] = {}
    for link in topo.links:
        ends.setdefault(link.a.guid, []).append((link.a.port, link.b, link))
        ends.setdefault(link.b.guid, []).append((link.b.port, link.a, link))
    out = ["#", "# Topology file: generated by racksmith lab fabric", "#", ""]
    for node in topo.switches() + topo.hcas():
        is_switch = node.kind == SWITCH
        tag = "S" if is_switch else "H"
        out.append("vendid=0x2c9")
        out.append(f"devid={'0xd2f2' if is_switch else '0x1021'}")
        out.append(f"sysimgguid=0x{node.guid}")
        out.append(f"{'switchguid' if is_switch else 'caguid'}=0x{node.guid}")
        lid = f" lid {node.lid}" if node.lid is not None else ""
        if is_switch:
            out.append(
                f'Switch\t{node.ports} "S-{node.guid}"\t\t# "{node.description}" '
                f"enhanced port 0{lid} lmc 0"
            )
        else:
            out.append(f'Ca\t{node.ports} "{tag}-{node.guid}"\t\t# "{node.description}"')
        for port, peer, link in sorted(ends.get(node.guid, []), key=lambda e: e[0]):
            other = topo.nodes[peer.guid]
            otag = "S" if other.kind == SWITCH else "H"
            rate = f" {link.width}x{link.speed}" if link.width and link.speed else ""
            plid = f" lid {other.lid}" if other.lid is not None else ""
            if is_switch:
                pguid = f"({other.guid})" if other.kind == HCA else ""
                out.append(
                    f'[{port}]\t"{otag}-{other.guid}"[{peer.port}]{pguid}\t\t'
                    f'# "{other.description}"{plid}{rate}'
                )
            else:
                own = f" lid {node.lid} lmc 0" if node.lid is not None else ""
                out.append(
                    f'[{port}]({node.guid})\t"{otag}-{other.guid}"[{peer.port}]\t\t'
                    f'#{own} "{other.description}"{plid}{rate}'
                )
        out.append("")
    return "\n".join(out) + "\n"


# --- ``ibnetdiscover -p`` (one line per port) ------------------------------------------------

_P_LINE = re.compile(
    r"^(?P<type>CA|SW|RT)\s+(?P<lid>\d+)\s+(?P<port>\d+)\s+(?P<guid>0x[0-9a-fA-F]+)\s+"
    r"(?P<width>\d+)x\s+(?P<speed>\S+)"
    r"(?:\s+-\s+(?P<ptype>CA|SW|RT)\s+(?P<plid>\d+)\s+(?P<pport>\d+)\s+"
    r"(?P<pguid>0x[0-9a-fA-F]+)\s+\(\s*'(?P<desc>[^']*)'\s+-\s+'(?P<pdesc>[^']*)'\s*\)"
    r"|\s+'(?P<alone>[^']*)')\s*$"
)
P_FORM = re.compile(r"^(?:CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s+\d+x\s", re.MULTILINE)
_P_KIND = {"SW": SWITCH, "CA": HCA, "RT": HCA}


def parse_ports(text: str, source: str = "ibnetdiscover -p") -> Topology:
    """``ibnetdiscover -p``: ``SW 1719 1 0x... 4x EDR - SW 1516 1 0x... ( 'a' - 'b' )``, or a
    port with no peer (``4x ???  'name'``: down). GUIDs are port GUIDs (a switch's is its node
    GUID; an HCA port's stands for its adapter here). LIDs come with every port."""
    topo = Topology(source=source)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _P_LINE.match(line)
        if m is None:
            raise FabricInputError(source, number, f"not an ibnetdiscover -p line: {line[:80]!r}")
        guid = m["guid"][2:].lower().rjust(16, "0")
        desc = m["desc"] if m["desc"] is not None else m["alone"]
        kind = _P_KIND[m["type"]]
        node = topo.add_node(Node(guid, kind, desc, int(m["port"]), int(m["lid"])))
        node.ports = max(node.ports, int(m["port"]))
        local = PortRef(guid, int(m["port"]))
        if m["pguid"] is None:
            topo.down_ports.append(local)
            continue
        pguid = m["pguid"][2:].lower().rjust(16, "0")
        pkind = _P_KIND[m["ptype"]]
        peer = topo.add_node(Node(pguid, pkind, m["pdesc"], 0, int(m["plid"])))
        peer.ports = max(peer.ports, int(m["pport"]))
        speed = m["speed"] if speed_rank(m["speed"]) >= 0 else None
        known = topo.add_link(
            Link(local, PortRef(pguid, int(m["pport"])), int(m["width"]), speed, line=number)
        )
        if known is not None and {known.a, known.b} != {local, PortRef(pguid, int(m["pport"]))}:
            raise FabricInputError(
                source, number, f"{topo.describe(local)} contradicts line {known.line}"
            )
    if not topo.nodes:
        raise FabricInputError(source, 0, "no CA/SW lines: is this ibnetdiscover -p output?")
    return topo
