"""Linear forwarding tables (LFTs): what each switch does with a packet for a destination LID.

The subnet manager (OpenSM, or UFM's OpenSM) programs one table per switch; a packet follows
them hop by hop, so the tables, not any idea of "a minimal route", decide which links a pair of
HCAs loads. Operators dump them in three shapes, all read here into one :class:`Tables`:

* ``ibroute LID`` / ``dump_lfts.sh`` (infiniband-diags), one block per switch::

      Unicast lids [0x0-0x5] of switch Lid 1 guid 0x0000000000200000 (Switch1):
        Lid  Out   Destination
             Port     Info
      0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'Hca1')
      4 valid lids dumped

  (``dump_lfts.sh -D`` writes ``of switch DR path slid 0; dlid 0; 0,1 guid 0x...``);
* OpenSM's own ``opensm-lfts.dump``: the same, with ``#`` instead of ``:`` and ``N lids dumped``;
* ``ibdiagnet2.fdbs`` (``ibdiagnet -r`` / ``--routing``)::

      osm_ucast_mgr_dump_ucast_routes: Switch 0x0002c9030068ec10
      LID    : Port : Hops : Optimal
      0x0001 : UNREACHABLE
      0x0002 : 003  : 00   : yes

A line of no known shape stops the read with its line number; a block whose count line
disagrees with the entries read is rejected (a truncated dump must not pass for a whole one).
Port 255 (and ``UNREACHABLE``) is "no route": tracing a pair through it fails, naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import SWITCH, Topology, normalise_guid

#: LFT entry meaning "drop": no route to that LID.
NO_ROUTE = 255


@dataclass
class Tables:
    """Switch GUID -> {destination LID: output port}. ``adaptive`` is True when the dump (or
    the operator) says adaptive routing is on: then the tables are the static fall-back and
    traffic may take any equal-cost up-port at run time."""

    lfts: dict[str, dict[int, int]] = field(default_factory=dict)
    source: str = ""
    form: str = ""
    adaptive: bool = False
    notes: list[str] = field(default_factory=list)

    def port(self, switch: str, lid: int) -> int | None:
        table = self.lfts.get(switch)
        if table is None:
            return None
        port = table.get(lid)
        return None if port is None or port == NO_ROUTE else port


_IBROUTE_HEAD = re.compile(
    r"^Unicast lids \[[^\]]*\] of switch (?:Lid (?P<lid>\d+)|DR path [^()]*?)\s*"
    r"guid (?P<guid>0x[0-9a-fA-F]+)\s*\((?P<desc>.*)\):?\s*$"
)
_IBROUTE_ENTRY = re.compile(r"^(?P<lid>0x[0-9a-fA-F]+)\s+(?P<port>\d+)\s*(?:[:#].*)?$")
_IBROUTE_COUNT = re.compile(r"^(?P<n>\d+) (?:valid )?lids dumped\s*$")
_IBROUTE_SKIP = re.compile(r"^(?:Lid\s+Out|Port\s+Info|ibwarn:)")
_FDBS_HEAD = re.compile(r"^osm_ucast_mgr_dump_ucast_routes:\s*Switch\s+(?P<guid>0x[0-9a-fA-F]+)")
_FDBS_ENTRY = re.compile(
    r"^(?P<lid>0x[0-9a-fA-F]+)\s*:\s*(?:(?P<port>\d+)\s*(?::.*)?|(?P<none>UNREACHABLE)\s*)$"
)
_FDBS_SKIP = re.compile(r"^(?:LID\s*:|#)")
_PLFT = re.compile(r"^PLFT_NUM:\s*(\d+)")


def parse(text: str, source: str = "forwarding tables") -> Tables:
    """Read any of the three forms (told apart by their switch header lines)."""
    if _FDBS_HEAD.search(text) or re.search(r"^osm_ucast_mgr_dump_ucast_routes", text, re.M):
        return _parse_fdbs(text, source)
    if re.search(r"^Unicast lids", text, re.M):
        return _parse_ibroute(text, source)
    raise FabricInputError(
        source,
        0,
        "no switch tables: expected ibroute/dump_lfts.sh ('Unicast lids ... of switch') or "
        "ibdiagnet2.fdbs ('osm_ucast_mgr_dump_ucast_routes: Switch') output",
    )


def _parse_ibroute(text: str, source: str) -> Tables:
    tables = Tables(source=source, form="ibroute")
    current: dict[int, int] | None = None
    guid = ""
    head_line = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or _IBROUTE_SKIP.match(line):
            continue
        m = _IBROUTE_HEAD.match(line)
        if m:
            guid = _guid(m["guid"], source, number)
            if guid in tables.lfts:
                raise FabricInputError(source, number, f"switch {m['guid']} dumped twice")
            current = tables.lfts[guid] = {}
            head_line = number
            continue
        m = _IBROUTE_ENTRY.match(line)
        if m:
            if current is None:
                raise FabricInputError(source, number, "LFT entry before any 'Unicast lids' line")
            current[int(m["lid"], 16)] = int(m["port"])
            continue
        m = _IBROUTE_COUNT.match(line)
        if m:
            if current is None:
                raise FabricInputError(source, number, "'lids dumped' before any switch")
            n = int(m["n"])
            # ibroute counts the entries it printed; opensm-lfts.dump prints its top LID
            if "valid" in line and n != len(current):
                raise FabricInputError(
                    source,
                    number,
                    f"switch 0x{guid} (line {head_line}): {n} lids dumped but {len(current)} read",
                )
            current = None
            continue
        raise FabricInputError(source, number, f"not an ibroute/dump_lfts line: {line[:80]!r}")
    if current is not None:
        raise FabricInputError(
            source, head_line, f"switch 0x{guid}: table ends without its 'lids dumped' line"
        )
    return tables


def _parse_fdbs(text: str, source: str) -> Tables:
    tables = Tables(source=source, form="ibdiagnet2.fdbs")
    current: dict[int, int] | None = None
    plft = 0
    skipped_plft = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or _FDBS_SKIP.match(line):
            continue
        m = _FDBS_HEAD.match(line)
        if m:
            guid = _guid(m["guid"], source, number)
            if guid in tables.lfts:
                raise FabricInputError(source, number, f"switch {m['guid']} listed twice")
            current = tables.lfts[guid] = {}
            plft = 0
            continue
        m = _PLFT.match(line)
        if m:
            plft = int(m[1])
            continue
        m = _FDBS_ENTRY.match(line)
        if m:
            if current is None:
                raise FabricInputError(source, number, "FDB entry before any switch line")
            if plft:
                skipped_plft += 1
                continue
            current[int(m["lid"], 16)] = NO_ROUTE if m["none"] else int(m["port"])
            continue
        raise FabricInputError(source, number, f"not an ibdiagnet2.fdbs line: {line[:80]!r}")
    if skipped_plft:
        tables.notes.append(
            f"{skipped_plft} entries of private LFTs (PLFT_NUM > 0) not used: only LFT 0 is traced"
        )
    return tables


def _guid(text: str, source: str, number: int) -> str:
    try:
        return normalise_guid(text)
    except ValueError:
        raise FabricInputError(source, number, f"not a GUID: {text!r}") from None


def load(path: str | Path, adaptive: bool | None = None) -> Tables:
    """Read a dump from a file. ``adaptive=None`` looks for ``ibdiagnet2.ar`` next to an
    ``ibdiagnet2.fdbs`` (ibdiagnet writes it when switches have adaptive routing on): a
    non-empty one marks the tables adaptive."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FabricInputError(str(path), 0, f"cannot read: {exc.strerror or exc}") from exc
    tables = parse(text, str(path))
    if adaptive is None:
        ar = path.with_name("ibdiagnet2.ar")
        adaptive = ar.is_file() and any(
            line.strip() and not line.startswith("#")
            for line in ar.read_text(errors="replace").splitlines()
        )
        if adaptive:
            tables.notes.append(f"{ar} present: adaptive routing is on")
    tables.adaptive = bool(adaptive)
    return tables


def check_against(tables: Tables, topo: Topology) -> list[str]:
    """Switches of the topology with no table, and tables of switches the topology lacks."""
    switches = {n.guid for n in topo.nodes.values() if n.kind == SWITCH}
    out = [
        f"no forwarding table for switch {topo.nodes[g].name} (0x{g})"
        for g in sorted(switches - set(tables.lfts))
    ]
    out += [
        f"table for 0x{g}: no such switch in the topology"
        for g in sorted(set(tables.lfts) - switches)
    ]
    return out


# --- rendering (the lab's generator writes its tables in these forms) ---------------------


def render_ibroute(tables: Tables, topo: Topology) -> str:
    """``dump_lfts.sh`` output: each switch's table, destinations described."""
    by_lid = {n.lid: n for n in topo.nodes.values() if n.lid is not None}
    out = []
    for guid in sorted(tables.lfts):
        node = topo.nodes[guid]
        table = tables.lfts[guid]
        top = max(table, default=0)
        out.append(
            f"Unicast lids [0x0-0x{top:x}] of switch Lid {node.lid} guid 0x{guid} "
            f"({node.description}):"
        )
        out.append("  Lid  Out   Destination")
        out.append("       Port     Info ")
        for lid in sorted(table):
            dest = by_lid.get(lid)
            if dest is None:
                info = "unknown node and type"
            else:
                kind = "Switch" if dest.kind == SWITCH else "Channel Adapter"
                info = f"{kind} portguid 0x{dest.guid}: '{dest.description}'"
            out.append(f"0x{lid:04x} {table[lid]:03d} : ({info})")
        out.append(f"{len(table)} valid lids dumped ")
    return "\n".join(out) + "\n"


def render_fdbs(tables: Tables) -> str:
    """``ibdiagnet2.fdbs``: hops and optimal columns are not known here and written as 00/yes
    (ibdiagnet's own values; the reader ignores them)."""
    out = ["# This database file was generated by racksmith's lab (ibdiagnet2.fdbs form)", ""]
    for guid in sorted(tables.lfts):
        out.append(f"osm_ucast_mgr_dump_ucast_routes: Switch 0x{guid}")
        out.append("LID    : Port : Hops : Optimal")
        for lid, port in sorted(tables.lfts[guid].items()):
            if port == NO_ROUTE:
                out.append(f"0x{lid:04x} : UNREACHABLE")
            else:
                out.append(f"0x{lid:04x} : {port:03d}  : 00   : yes")
        out.append("")
    return "\n".join(out) + "\n"
