"""What commissioning "discovers" on a simulated machine: CPUs, memory, disks, NICs.

Disks are the interesting part. Real MAAS numbers block devices in the order the kernel
enumerated them during commissioning, which is random across boots, and the lowest id becomes
the default boot disk (maas-api.md §6). So every commissioning here shuffles the order in
which the same physical disks get their (new) ids and ``nvmeN`` names, while serial, model
and ``id_path`` stay put: exactly what racksmith's boot-disk rule must cope with.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class DiskModel:
    model: str
    size: int
    bus: str  # "ata" (BOSS card) or "nvme"
    tags: tuple[str, ...] = ("ssd",)


@dataclass(frozen=True)
class Profile:
    product: str
    cpu_count: int
    cpu_speed: int  # MHz
    memory: int  # MiB
    disks: tuple[tuple[DiskModel, int], ...]


BOSS = DiskModel("DELLBOSS VD", 480_103_981_056, "ata")
CM6 = DiskModel("Dell Ent NVMe CM6 RI 3.84TB", 3_840_755_982_336, "nvme")
P5600 = DiskModel("Dell Ent NVMe P5600 MU U.2 1.6TB", 1_600_321_314_816, "nvme")

#: Keyed by the rack spec's ``model``; unknown models get the GPU server.
PROFILES: dict[str, Profile] = {
    "hgx-h200-8gpu": Profile("PowerEdge XE9680", 224, 2000, 2_097_152, ((BOSS, 1), (CM6, 8))),
    "r750-h100pcie": Profile("PowerEdge R750", 72, 2600, 524_288, ((BOSS, 1), (P5600, 4))),
}
DEFAULT_PROFILE = "hgx-h200-8gpu"


def profile(model: str | None) -> Profile:
    return PROFILES.get(model or DEFAULT_PROFILE, PROFILES[DEFAULT_PROFILE])


def _digest(seed: str, what: str, n: int) -> str:
    return hashlib.sha256(f"{seed}/{what}".encode()).hexdigest()[:n]


def physical_disks(seed: str, model: str | None) -> list[dict]:
    """The machine's disks in a fixed order, each with its stable identity."""
    disks = []
    for disk_model, count in profile(model).disks:
        for k in range(count):
            if disk_model.bus == "ata":
                serial = _digest(seed, f"boss{k}", 16)
                id_path = f"/dev/disk/by-id/ata-{disk_model.model.replace(' ', '_')}_{serial}"
            else:
                serial = "S6" + _digest(seed, f"nvme{k}", 10).upper()
                id_path = f"/dev/disk/by-id/nvme-{disk_model.model.replace(' ', '_')}_{serial}"
            disks.append(
                {
                    "model": disk_model.model,
                    "serial": serial,
                    "size": disk_model.size,
                    "bus": disk_model.bus,
                    "id_path": id_path,
                    "tags": list(disk_model.tags),
                }
            )
    return disks


def enumerate_disks(seed: str, model: str | None, rng: random.Random) -> list[dict]:
    """One commissioning's view: the same disks, in a random kernel enumeration order.

    Returns them in enumeration order (which is the order MAAS assigns ids in) with kernel
    names: the BOSS volume is ``sda``; NVMe namespaces are ``nvme0n1``... in a random order.
    """
    disks = physical_disks(seed, model)
    rng.shuffle(disks)
    nvme_names = iter(f"nvme{i}n1" for i in range(len(disks)))
    sata_names = iter(f"sd{chr(ord('a') + i)}" for i in range(26))
    for disk in disks:
        disk["name"] = next(nvme_names) if disk["bus"] == "nvme" else next(sata_names)
    return disks
