"""Which disk the OS goes on: a rule over stable disk identities, and the pick it makes.

MAAS's default boot disk is the lowest-id block device, and ids follow the kernel's random
enumeration at commissioning (maas-api.md §6): the OS once landed on a data NVMe. So after
every commissioning racksmith picks the disk by what does not move (serial, model,
``id_path``, size), and refuses to guess when the rule matches no disk or several.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from racksmith.maas.errors import BootDiskError, MaasConfigError
from racksmith.maas.model import BlockDevice

_UNITS = {
    "": 1,
    "B": 1,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "KI": 2**10,
    "MI": 2**20,
    "GI": 2**30,
    "TI": 2**40,
}
TIE_BREAKS = ("error", "serial", "id_path")
LAYOUTS = ("flat", "lvm", "bcache", "vmfs6", "vmfs7", "custom", "blank")


def parse_size(value: Any, *, field: str) -> int:
    """``480G``, ``447GiB``, ``3.84TB`` or a byte count -> bytes (SI unless ``i``)."""
    if isinstance(value, bool):
        raise MaasConfigError(f"boot disk rule: {field} must be a size, not a boolean")
    if isinstance(value, (int, float)):
        return int(value)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?)?B?\s*", str(value), re.IGNORECASE)
    if not match:
        raise MaasConfigError(
            f"boot disk rule: {field} {value!r} is not a size like 480G or 3.84TB"
        )
    number, unit = match.groups()
    return int(float(number) * _UNITS[(unit or "").upper()])


@dataclass(frozen=True)
class BootDiskRule:
    """All given criteria must hold. Text criteria are shell globs (``DELLBOSS*``)."""

    serial: str | None = None
    model: str | None = None
    id_path: str | None = None
    min_size: int | None = None
    max_size: int | None = None
    tie_break: str = "error"

    FIELDS = ("serial", "model", "id_path", "size", "min_size", "max_size", "tie_break")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> BootDiskRule:
        if not data:
            raise MaasConfigError(
                "boot disk rule is empty: give at least one of serial, model, id_path, size"
            )
        unknown = sorted(set(data) - set(cls.FIELDS))
        if unknown:
            raise MaasConfigError(
                f"boot disk rule: unknown key(s) {unknown}; known: {list(cls.FIELDS)}"
            )
        values = {k: v for k, v in data.items() if v not in (None, "")}
        min_size = max_size = None
        if "size" in values:
            if "min_size" in values or "max_size" in values:
                raise MaasConfigError("boot disk rule: give size, or min_size/max_size, not both")
            # An exact size within 1% absorbs vendors' rounding (480 GB vs 480103981056 bytes).
            exact = parse_size(values["size"], field="size")
            min_size, max_size = int(exact * 0.99), int(exact * 1.01)
        if "min_size" in values:
            min_size = parse_size(values["min_size"], field="min_size")
        if "max_size" in values:
            max_size = parse_size(values["max_size"], field="max_size")
        tie_break = str(values.get("tie_break", "error"))
        if tie_break not in TIE_BREAKS:
            raise MaasConfigError(f"boot disk rule: tie_break must be one of {list(TIE_BREAKS)}")
        rule = cls(
            serial=values.get("serial"),
            model=values.get("model"),
            id_path=values.get("id_path"),
            min_size=min_size,
            max_size=max_size,
            tie_break=tie_break,
        )
        if not any((rule.serial, rule.model, rule.id_path, min_size, max_size)):
            raise MaasConfigError("boot disk rule has no criterion (serial, model, id_path, size)")
        return rule

    def describe(self) -> str:
        parts = [
            f"{k}={v!r}"
            for k, v in (("serial", self.serial), ("model", self.model), ("id_path", self.id_path))
            if v
        ]
        if self.min_size is not None:
            parts.append(f"size>={self.min_size / 1e9:.0f}GB")
        if self.max_size is not None:
            parts.append(f"size<={self.max_size / 1e9:.0f}GB")
        return " ".join(parts)

    def matches(self, disk: BlockDevice) -> bool:
        if disk.type != "physical":
            return False
        for pattern, value in (
            (self.serial, disk.serial),
            (self.model, disk.model),
            (self.id_path, disk.id_path),
        ):
            if pattern and not fnmatch.fnmatchcase(value, pattern):
                return False
        if self.min_size is not None and disk.size < self.min_size:
            return False
        return not (self.max_size is not None and disk.size > self.max_size)

    def pick(self, disks: Iterable[BlockDevice], *, where: str = "") -> BlockDevice:
        """The one disk the rule selects; BootDiskError naming the candidates otherwise."""
        disks = list(disks)
        chosen = [d for d in disks if self.matches(d)]
        prefix = f"{where}: " if where else ""
        if not chosen:
            seen = "; ".join(d.describe() for d in disks) or "no block devices"
            raise BootDiskError(
                f"{prefix}no disk matches boot disk rule ({self.describe()}); disks: {seen}"
            )
        if len(chosen) > 1:
            if self.tie_break == "error":
                seen = "; ".join(d.describe() for d in chosen)
                raise BootDiskError(
                    f"{prefix}{len(chosen)} disks match boot disk rule "
                    f"({self.describe()}): {seen}; narrow the rule or set tie_break: serial|id_path"
                )
            chosen.sort(key=lambda d: getattr(d, self.tie_break))
        return chosen[0]
