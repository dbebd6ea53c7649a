"""Docker storage settings that depend on the host's disks: a pure decision, used by the
``container_runtime`` role through the filter ``racksmith.core.docker_storage_driver``.

Why it exists: the ``zfs_pool`` role mounts its ``docker`` dataset at ``/var/lib/docker``, and
Docker's default ``overlay2`` driver refuses a ZFS backing filesystem before OpenZFS 2.2
(Ubuntu 22.04 ships 2.1.5, Debian 12 2.1.11): dockerd then fails to start with "backing file
system is unsupported for this graph driver". Found by the VM lane, the first place a real
pool sat under Docker. On ZFS the ``zfs`` driver is Docker's documented choice.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Drivers that run on any backing filesystem (they copy, not overlay): a site that chose one
#: keeps it.
_ANY_FILESYSTEM = frozenset({"vfs", "zfs", "btrfs", "devicemapper"})


@dataclass(frozen=True)
class StorageChoice:
    driver: str
    reason: str  # empty when the site's choice stands


def storage_driver(wanted: str, data_root_fstype: str) -> StorageChoice:
    """The storage driver Docker can run with, given the site's choice and the filesystem
    that holds Docker's data root (``findmnt -n -o FSTYPE --target``)."""
    wanted = (wanted or "").strip()
    fstype = (data_root_fstype or "").strip().lower()
    if not fstype:
        raise ValueError(
            "the filesystem type of Docker's data root is empty (findmnt printed nothing)"
        )
    if fstype == "zfs" and wanted not in _ANY_FILESYSTEM:
        return StorageChoice(
            "zfs",
            f"Docker's data root is on ZFS, where {wanted or 'the default driver'} cannot run "
            "(OpenZFS < 2.2): using the zfs storage driver",
        )
    return StorageChoice(wanted, "")
