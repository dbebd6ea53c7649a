"""Which host owns which HCA: the map the discover/validate flow hands to the cabling check.

A JSON object, host name or service tag -> the host's HCAs, either as a list of GUIDs in
device order (``mlx5_0`` first) or as an object device -> GUID::

    {"gpu0001": ["0xe09d730300000001", "0xe09d730300000002"],
     "5YQ7XY3": {"mlx5_0": "e09d730300000011", "mlx5_1": "e09d730300000012"}}

GUIDs are the HCA node GUIDs: ``/sys/class/infiniband/mlx5_N/node_guid`` on the host
(``e09d:7303:0000:1001``), ``ibstat``'s "Node GUID" (``0xe09d730300001001``) or bare hex.
With this map the cabling check names a miscabled HCA by its host even when the adapter
still carries its factory description (``MT4129 ConnectX7 Mellanox Technologies``), which
is how HCAs come out of the box.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from racksmith.fabric.errors import FabricInputError
from racksmith.fabric.model import normalise_guid


@dataclass(frozen=True)
class HcaOwner:
    host: str
    device: str

    @property
    def name(self) -> str:
        """The HCA as the wiring plan names it: ``host device``."""
        return f"{self.host} {self.device}"


def parse(text: str, source: str = "hosts.json") -> dict[str, HcaOwner]:
    """-> HCA node GUID -> owner."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FabricInputError(source, exc.lineno, f"not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FabricInputError(source, 0, "expected an object: host -> list of HCA GUIDs")
    owners: dict[str, HcaOwner] = {}
    for host, hcas in sorted(data.items()):
        if isinstance(hcas, list):
            items = [(f"mlx5_{i}", g) for i, g in enumerate(hcas)]
        elif isinstance(hcas, dict):
            items = sorted(hcas.items())
        else:
            raise FabricInputError(source, 0, f"host {host!r}: expected a list or object of GUIDs")
        for device, guid in items:
            try:
                key = normalise_guid(str(guid))
            except ValueError:
                raise FabricInputError(
                    source, 0, f"host {host!r}: {guid!r} is not a GUID"
                ) from None
            if key in owners:
                raise FabricInputError(
                    source, 0, f"GUID {guid} is listed for {owners[key].host} and {host}"
                )
            owners[key] = HcaOwner(str(host), str(device))
    return owners


def load(path: str | Path) -> dict[str, HcaOwner]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FabricInputError(str(path), 0, f"cannot read: {exc}") from exc
    return parse(text, str(path))
