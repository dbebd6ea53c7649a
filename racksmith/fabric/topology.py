"""Read a topology file whatever tool wrote it (ibnetdiscover, ``ibnetdiscover -p`` or
iblinkinfo, either form)."""

from __future__ import annotations

import re
from pathlib import Path

from racksmith.fabric import iblinkinfo, ibnetdiscover
from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import Topology

_IBNETDISCOVER = re.compile(r'^(Switch|Ca|Rt)\s+\d+\s+"[SHR]-', re.MULTILINE)


def parse(text: str, source: str) -> Topology:
    """ibnetdiscover output has ``Switch``/``Ca`` blocks; anything else is read as iblinkinfo."""
    if _IBNETDISCOVER.search(text):
        return ibnetdiscover.parse(text, source)
    if ibnetdiscover.P_FORM.search(text):
        return ibnetdiscover.parse_ports(text, source)
    return iblinkinfo.parse(text, source)


def load(path: str | Path) -> Topology:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FabricInputError(str(path), 0, f"cannot read: {exc.strerror or exc}") from exc
    return parse(text, str(path))
