# racksmith.core filters of the zfs_pool role's one probe: thin adapters over racksmith.disks,
# where the probe, the split of its output and the disk decision live and are unit-tested.
# Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith import disks
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    disks = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name: str) -> None:
    if disks is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def zfs_probe_argv(settle_timeout=30):
    _need_library("zfs_probe_argv")
    try:
        return disks.probe_argv(int(settle_timeout))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"zfs_probe_argv: {exc}") from exc


def zfs_probe_plan(
    probe_output,
    pool,
    level="raidz2",
    wipe=(),
    exclude=(),
    expected_disks=0,
    pool_options=None,
    fs_options=None,
    mountpoint="",
    check_mode=False,
):
    _need_library("zfs_probe_plan")
    if not isinstance(probe_output, str):
        raise AnsibleFilterError(
            f"zfs_probe_plan: expected the probe's stdout (text), got {type(probe_output).__name__}"
        )
    try:
        return disks.plan_from_probe(
            probe_output,
            check_mode=bool(check_mode),
            pool=str(pool),
            level=str(level),
            wipe=[str(w) for w in wipe or []],
            exclude=[str(e) for e in exclude or []],
            expected_disks=int(expected_disks or 0),
            pool_options={str(k): str(v) for k, v in (pool_options or {}).items()},
            fs_options={str(k): str(v) for k, v in (fs_options or {}).items()},
            mountpoint=str(mountpoint or ""),
        ).as_dict()
    except ValueError as exc:  # DiskPlanError
        raise AnsibleFilterError(f"zfs_probe_plan: {exc}") from exc


class FilterModule:
    """The zfs_pool role's probe and its decision (see racksmith.disks)."""

    def filters(self):
        return {"zfs_probe_argv": zfs_probe_argv, "zfs_probe_plan": zfs_probe_plan}
