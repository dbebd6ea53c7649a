"""Ansible filter ``racksmith.core.zfs_disk_plan``: which disks a ZFS pool is built on.

A thin adapter over :func:`racksmith.disks.plan`, where the rules live and are unit-tested:
every whole disk that is not the OS disk, by ``/dev/disk/by-id``; disks carrying partitions,
filesystems or pool labels refused unless in the wipe list; an existing pool imported.
"""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

try:
    from racksmith.disks import parse_by_id, parse_zpool_import, plan
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    plan = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: zfs_disk_plan
  author: racksmith developers
  version_added: "0.1.0"
  short_description: decide the ZFS pool's disks, or whether to import or refuse
  description:
    - Candidates are whole disks with nothing mounted (never the OS disk), not removable, with a
      /dev/disk/by-id name; the pool is built on by-id names only.
    - A disk with a partition table, a filesystem or a ZFS label is refused (naming it) unless
      its by-id name is in I(wipe). Any refusal refuses the whole pool.
    - A pool of that name that is imported is left alone; one that can be imported is imported.
  positional: _input
  options:
    _input:
      description: >-
        C(lsblk --json --bytes -o) with racksmith.disks.LSBLK_COLUMNS, as text or parsed
      type: raw
      required: true
    by_id:
      description: C(find /dev/disk/by-id -maxdepth 1 -type l -printf '%f %l\\n') output
      type: str
      required: true
    pool:
      description: pool name
      type: str
      required: true
    level:
      description: raidz1, raidz2, raidz3, mirror or stripe
      type: str
      default: raidz2
    wipe:
      description: by-id names (or paths) of disks that may be wiped
      type: list
      default: []
    exclude:
      description: by-id names (or kernel names) never to use
      type: list
      default: []
    expected_disks:
      description: exact number of data disks the site expects (0 = any)
      type: int
      default: 0
    imported:
      description: C(zpool list -H -o name) output (text or list)
      type: raw
      default: []
    importable:
      description: C(zpool import) output (text) or a list of pool names
      type: raw
      default: []
    pool_options:
      description: C(-o) pool properties
      type: dict
      default: {}
    fs_options:
      description: C(-O) file system properties of the root dataset
      type: dict
      default: {}
    mountpoint:
      description: C(-m) mountpoint of the root dataset
      type: str
      default: ""
"""

EXAMPLES = """
- name: Decide what to do
  ansible.builtin.set_fact:
    _zfs_pool_plan: "{{ _lsblk.stdout | racksmith.core.zfs_disk_plan(by_id=_by_id.stdout,
                        pool=zfs_pool_name, level=zfs_pool_level, wipe=zfs_pool_wipe) }}"
"""

RETURN = """
  _value:
    description: >-
      C(action) (exists, import, create, refuse), C(message), C(disks) (by-id paths),
      C(wipe), C(refused) (disk, reason), C(skipped) (kname, reason), C(commands) (argv lists)
      and C(shell) (the same, as shell-quoted lines)
    type: dict
"""


def _names(value, parse) -> list[str]:
    if isinstance(value, str):
        return parse(value)
    return [str(v) for v in value or []]


def zfs_disk_plan(
    lsblk,
    by_id,
    pool,
    level="raidz2",
    wipe=(),
    exclude=(),
    expected_disks=0,
    imported=(),
    importable=(),
    pool_options=None,
    fs_options=None,
    mountpoint="",
):
    if plan is None:
        raise AnsibleFilterError(
            f"zfs_disk_plan needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    try:
        parsed = json.loads(lsblk) if isinstance(lsblk, str) else lsblk
        return plan(
            parsed,
            parse_by_id(by_id if isinstance(by_id, str) else "\n".join(by_id)),
            pool=str(pool),
            level=str(level),
            wipe=[str(w) for w in wipe or []],
            exclude=[str(e) for e in exclude or []],
            expected_disks=int(expected_disks or 0),
            imported=_names(imported, lambda text: text.split()),
            importable=_names(importable, parse_zpool_import),
            pool_options={str(k): str(v) for k, v in (pool_options or {}).items()},
            fs_options={str(k): str(v) for k, v in (fs_options or {}).items()},
            mountpoint=str(mountpoint or ""),
        ).as_dict()
    except ValueError as exc:  # DiskPlanError, and text that is not lsblk's JSON
        raise AnsibleFilterError(f"zfs_disk_plan: {exc}") from exc


class FilterModule:
    """racksmith's ZFS disk choice (see racksmith.disks.plan)."""

    def filters(self):
        return {"zfs_disk_plan": zfs_disk_plan}
