"""``iblinkinfo`` output (default and ``--line`` forms): parse into a :class:`Topology`.

``--line`` form, one port per line with both GUIDs (wrapped here)::

    0xfc6a1c0300a00001 "MF0;ib-leaf-001:MQM9790/U1"   1   33[  ]
      ==( 4X 106.25 Gbps Active/  LinkUp)==>  0xfc6a1c0300a00081  129    1[  ]
      "MF0;ib-spine-001:MQM9790/U1" ( )

Default form: a ``Switch: 0x<guid> <desc>:`` or ``CA: <desc>:`` header, then port lines that
name the peer by LID only; peers are resolved once every node's LID is known. A port in
``Down/ Polling`` has no peer: it is kept in ``Topology.down_ports`` (a cable that does not
train is exactly what the cabling check looks for).

iblinkinfo prints the per-lane rate: ``4X 106.25 Gbps`` is a 400 Gb/s NDR link.
"""

from __future__ import annotations

import re

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import (
    HCA,
    SWITCH,
    Link,
    Node,
    PortRef,
    Topology,
    normalise_guid,
    speed_from_rate,
)

_LINK = (
    r"(?P<lid>\d+)\s+(?P<port>\d+)\[[^\]]*\]\s*==\(\s*"
    r"(?:(?P<width>\d+)X\s+(?P<rate>[\d.]+)\s+Gbps\s+)?(?P<state>\w+)/\s*(?P<phys>[\w ]+?)\s*\)==>"
    r"\s*(?:(?P<pguid>0x[0-9a-fA-F]+)\s+)?(?:(?P<plid>\d+)\s+(?P<pport>\d+))?\s*\[[^\]]*\]\s*"
    r'"(?P<pdesc>[^"]*)"'
)
_LINE_FORM = re.compile(r'^(?P<guid>0x[0-9a-fA-F]+)\s+"(?P<desc>[^"]*)"\s+' + _LINK)
_SWITCH_HDR = re.compile(r"^Switch:\s+(?P<guid>0x[0-9a-fA-F]+)\s+(?P<desc>.*):\s*$")
_CA_HDR = re.compile(r"^CA:\s+(?P<desc>.*):\s*$")
_SWITCH_PORT = re.compile(r"^" + _LINK)
_CA_PORT = re.compile(r"^(?P<guid>0x[0-9a-fA-F]+)\s+" + _LINK)


class _Pending:
    __slots__ = ("guid", "m", "number")

    def __init__(self, guid: str, m: re.Match, number: int):
        self.guid, self.m, self.number = guid, m, number


def parse(text: str, source: str = "iblinkinfo") -> Topology:
    """Parse either iblinkinfo form; raises :class:`FabricInputError` naming the bad line."""
    topo = Topology(source=source)
    pending: list[_Pending] = []
    lids: dict[int, str] = {}
    max_port: dict[str, int] = {}
    header: tuple[str, str | None, str] | None = None  # (kind, guid, desc)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE_FORM.match(line)
        if m:
            guid = normalise_guid(m["guid"])
            topo.add_node(Node(guid=guid, kind=HCA, description=m["desc"]))
            pending.append(_Pending(guid, m, number))
            lids.setdefault(int(m["lid"]), guid)
            continue
        hdr = _SWITCH_HDR.match(line)
        if hdr:
            header = (SWITCH, normalise_guid(hdr["guid"]), hdr["desc"].strip())
            topo.add_node(Node(guid=header[1], kind=SWITCH, description=header[2]))
            continue
        hdr = _CA_HDR.match(line)
        if hdr:
            header = (HCA, None, hdr["desc"].strip())
            continue
        m = _CA_PORT.match(line) if header and header[0] == HCA else _SWITCH_PORT.match(line)
        if m is None or header is None:
            raise FabricInputError(source, number, f"not an iblinkinfo line: {line[:80]!r}")
        guid = header[1] or normalise_guid(m["guid"])
        topo.add_node(Node(guid=guid, kind=header[0], description=header[2]))
        pending.append(_Pending(guid, m, number))
        lids.setdefault(int(m["lid"]), guid)
    if not pending:
        raise FabricInputError(source, 0, "no port lines: is this iblinkinfo output?")
    for item in pending:
        max_port[item.guid] = max(max_port.get(item.guid, 0), int(item.m["port"]))
    for item in pending:
        _add(topo, item, lids, max_port, source)
    for guid, node in topo.nodes.items():
        node.ports = max(node.ports, max_port.get(guid, 0))
        if node.description.startswith("MF0;") or node.ports > 2:
            node.kind = SWITCH
    return topo


def _add(
    topo: Topology, item: _Pending, lids: dict[int, str], max_port: dict[str, int], source: str
) -> None:
    m = item.m
    node = topo.nodes[item.guid]
    if node.lid is None:
        node.lid = int(m["lid"])
    local = PortRef(item.guid, int(m["port"]))
    if m["pport"] is None:
        topo.down_ports.append(local)
        return
    if m["pguid"]:
        peer_guid = normalise_guid(m["pguid"])
    else:
        peer_guid = lids.get(int(m["plid"]), "")
        if not peer_guid:
            raise FabricInputError(
                source, item.number, f"peer LID {m['plid']} is not any node's LID in this output"
            )
    if peer_guid not in topo.nodes:
        topo.add_node(Node(guid=peer_guid, kind=HCA, description=m["pdesc"], lid=int(m["plid"])))
    peer = PortRef(peer_guid, int(m["pport"]))
    max_port[peer_guid] = max(max_port.get(peer_guid, 0), peer.port)
    speed = speed_from_rate(float(m["rate"])) if m["rate"] else None
    if m["rate"] and speed is None:
        raise FabricInputError(source, item.number, f"unknown lane rate {m['rate']} Gbps")
    width = int(m["width"]) if m["width"] else None
    known = topo.add_link(Link(local, peer, width, speed, state=m["state"], line=item.number))
    if known is not None and {known.a, known.b} != {local, peer}:
        raise FabricInputError(
            source,
            item.number,
            f"{topo.describe(local)} -> {topo.describe(peer)} contradicts line {known.line}",
        )


def render_line_form(topo: Topology) -> str:
    """Render ``topo`` as ``iblinkinfo --line`` prints it (for tests and the generator)."""
    out = []
    ends: list[tuple[str, int, PortRef, Link]] = []
    for link in topo.links:
        ends.append((link.a.guid, link.a.port, link.b, link))
        ends.append((link.b.guid, link.b.port, link.a, link))
    rates = {"NDR": "106.25", "HDR": "53.125", "EDR": "25.78125", "XDR": "212.5"}
    for guid, port, peer, link in sorted(ends, key=lambda e: (e[0], e[1])):
        node, other = topo.nodes[guid], topo.nodes[peer.guid]
        rate = rates.get(link.speed or "", "106.25")
        out.append(
            f'0x{guid} "{node.description}" {node.lid or 0:>6} {port:>4}[  ] '
            f"==( {link.width or 4}X {rate:>13} Gbps Active/  LinkUp)==>  "
            f'0x{peer.guid} {other.lid or 0:>6} {peer.port:>4}[  ] "{other.description}" ( )'
        )
    for ref in topo.down_ports:
        node = topo.nodes[ref.guid]
        out.append(
            f'0x{ref.guid} "{node.description}" {node.lid or 0:>6} {ref.port:>4}[  ] '
            '==(                Down/ Polling)==>             [  ] "" ( )'
        )
    return "\n".join(out) + "\n"
