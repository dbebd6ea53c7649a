"""Which disks a ZFS data pool is built on: a pure decision, unit-tested, used by the
``zfs_pool`` role through the filter ``racksmith.core.zfs_disk_plan``.

Field lessons behind the rules: the OS lands on a different disk than expected, ``sdX`` and
``nvmeXnY`` names move between boots, and a re-run of an install must never destroy data. So:

- candidates are whole disks that hold nothing mounted (the OS disk, swap, anything in use is
  never touched), are not removable or read-only, and have a stable ``/dev/disk/by-id`` name;
  the pool is built on those names only, never on kernel names;
- a disk carrying a partition table, a filesystem or a pool label is refused, naming the disk
  and what it carries, unless it is named in an explicit wipe list;
- a pool of the wanted name that the host can import is imported, never re-created; one that
  is already imported is left alone;
- any refusal stops the whole plan: a RAIDZ built on fewer disks than the rack has is wrong
  and cannot be grown into the intended layout later.

Inputs are the host's own outputs: ``lsblk --json --bytes -o`` :data:`LSBLK_COLUMNS`, the
``/dev/disk/by-id`` links (``find ... -printf '%f %l\\n'``), ``zpool list -H -o name`` and
``zpool import`` (pools available for import). The role gets all four from one command,
:func:`probe_argv` (a task per listing costs the controller a round trip each, and about 8 s
each in the emulated VM lane); :func:`plan_from_probe` splits its output and decides.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

LSBLK_COLUMNS = "NAME,KNAME,TYPE,SIZE,RM,RO,FSTYPE,LABEL,PTTYPE,MOUNTPOINTS,SERIAL,MODEL,TRAN"
#: Minimum member disks per layout (a RAIDZ-n needs more than n disks to hold data).
MIN_DISKS = {"raidz1": 3, "raidz2": 4, "raidz3": 5, "mirror": 2, "stripe": 1}
#: Preferred by-id link kinds, best first: names that carry the model and serial are what an
#: operator reads off the drive's label; WWN/EUI names are stable too but opaque.
_BY_ID_PREFERENCE = ("nvme-", "ata-", "scsi-", "virtio-", "usb-", "wwn-", "nvme-eui.")
_NOT_DISKS = re.compile(r"^(loop|zram|ram|sr|fd|md|dm-|nbd)")
_POOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")


class DiskPlanError(ValueError):
    """An input the plan cannot be made from (names the input)."""


@dataclass(frozen=True)
class Disk:
    kname: str  # nvme0n1, sda: for messages only
    by_id: str  # /dev/disk/by-id/<name>: what the pool is built on
    size: int
    model: str = ""
    serial: str = ""
    carries: str = ""  # what wiping it destroys (empty: a blank disk)


@dataclass(frozen=True)
class Skipped:
    kname: str
    reason: str


@dataclass(frozen=True)
class Refused:
    disk: str  # by-id path when there is one, else the kernel name
    reason: str


@dataclass(frozen=True)
class DiskPlan:
    """What the role does: ``exists`` (nothing), ``import``, ``create`` or ``refuse``."""

    action: str
    pool: str
    message: str
    disks: tuple[Disk, ...] = ()
    wipe: tuple[Disk, ...] = ()
    refused: tuple[Refused, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    commands: tuple[tuple[str, ...], ...] = field(default=())

    @property
    def shell(self) -> list[str]:
        return [shlex.join(argv) for argv in self.commands]

    def as_dict(self) -> dict:
        return {
            "action": self.action,
            "pool": self.pool,
            "message": self.message,
            "disks": [d.by_id for d in self.disks],
            "disks_detail": [vars(d) for d in self.disks],
            "wipe": [d.by_id for d in self.wipe],
            "refused": [vars(r) for r in self.refused],
            "skipped": [vars(s) for s in self.skipped],
            "commands": [list(c) for c in self.commands],
            "shell": self.shell,
            "not_used": [f"{s.kname}: {s.reason}" for s in self.skipped],
        }


# --- parsing the host's outputs --------------------------------------------------------------


def parse_by_id(text: str) -> dict[str, list[str]]:
    """``name target`` lines of /dev/disk/by-id -> kernel name -> by-id names (no partitions)."""
    links: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise DiskPlanError(f"/dev/disk/by-id listing line {number}: expected 'name target'")
        name, target = parts
        if re.search(r"-part\d+$", name):
            continue
        links.setdefault(target.rsplit("/", 1)[-1], []).append(name)
    return links


def preferred_by_id(names: Iterable[str]) -> str | None:
    def rank(name: str) -> tuple[int, str]:
        # The most specific matching prefix wins ('nvme-eui.' over 'nvme-').
        matches = [i for i, p in enumerate(_BY_ID_PREFERENCE) if name.startswith(p)]
        return (max(matches) if matches else len(_BY_ID_PREFERENCE), name)

    ordered = sorted(names, key=rank)
    return ordered[0] if ordered else None


def parse_zpool_import(text: str) -> list[str]:
    """Pool names ``zpool import`` (no arguments) offers for import."""
    return re.findall(r"^\s*pool:\s*(\S+)\s*$", text, flags=re.MULTILINE)


def _mountpoints(node: Mapping) -> list[str]:
    found = [m for m in (node.get("mountpoints") or [node.get("mountpoint")]) if m]
    if node.get("fstype") == "swap":
        found.append("[SWAP]")
    for child in node.get("children") or []:
        found += _mountpoints(child)
    return found


def _flag(value) -> bool:
    return value in (True, 1, "1", "true")


# --- the decision ------------------------------------------------------------------------------


def _signature(node: Mapping) -> str | None:
    """What a whole disk already carries, or None when it is blank."""
    if node.get("fstype") == "zfs_member":
        label = node.get("label") or "unknown"
        return f"carries the label of ZFS pool {label!r}"
    if node.get("fstype"):
        return f"carries a {node['fstype']} filesystem signature"
    parts = [c for c in node.get("children") or [] if c.get("type") == "part"]
    if node.get("pttype") or parts:
        kind = node.get("pttype") or "partition"
        return f"has a {kind} partition table ({len(parts)} partitions)"
    for child in node.get("children") or []:
        if child.get("fstype") == "zfs_member":
            return f"holds ZFS pool {child.get('label') or 'unknown'!r}"
    return None


def plan(
    lsblk: Mapping,
    by_id: Mapping[str, Sequence[str]],
    *,
    pool: str,
    level: str = "raidz2",
    wipe: Sequence[str] = (),
    exclude: Sequence[str] = (),
    expected_disks: int = 0,
    imported: Sequence[str] = (),
    importable: Sequence[str] = (),
    pool_options: Mapping[str, str] | None = None,
    fs_options: Mapping[str, str] | None = None,
    mountpoint: str = "",
) -> DiskPlan:
    """Decide what to do for ``pool`` on a host (see the module docstring for the rules)."""
    if not _POOL_NAME.match(pool or ""):
        raise DiskPlanError(f"pool name {pool!r} is not a valid ZFS pool name")
    if level not in MIN_DISKS:
        raise DiskPlanError(f"level {level!r} is not one of {', '.join(MIN_DISKS)}")
    devices = lsblk.get("blockdevices") if isinstance(lsblk, Mapping) else None
    if not isinstance(devices, list):
        raise DiskPlanError("lsblk output has no 'blockdevices' list (run lsblk --json)")
    if pool in imported:
        return DiskPlan("exists", pool, f"pool {pool} is imported already; nothing to do")
    if pool in importable:
        argv = ("zpool", "import", "-d", "/dev/disk/by-id", pool)
        return DiskPlan(
            "import", pool, f"pool {pool} exists on this host's disks: importing it, not"
            " creating a new one", commands=(argv,),
        )  # fmt: skip

    wipe_names = {w.rsplit("/", 1)[-1] for w in wipe}
    excluded = {e.rsplit("/", 1)[-1] for e in exclude}
    chosen: list[Disk] = []
    to_wipe: list[Disk] = []
    refused: list[Refused] = []
    skipped: list[Skipped] = []
    seen_ids: set[str] = set()
    for node in devices:
        kname = node.get("kname") or node.get("name") or "?"
        if node.get("type") != "disk" or _NOT_DISKS.match(kname):
            continue
        names = list(by_id.get(kname, ()))
        seen_ids.update(names)
        best = preferred_by_id(names)
        mounts = _mountpoints(node)
        if mounts:
            what = "the OS disk" if "/" in mounts else "in use"
            skipped.append(Skipped(kname, f"{what} (mounted: {', '.join(sorted(set(mounts)))})"))
            if wipe_names.intersection(names):
                refused.append(Refused(f"/dev/disk/by-id/{best}", f"is {what}: never wiped"))
            continue
        if excluded.intersection(names) or kname in excluded:
            skipped.append(Skipped(kname, "excluded by the site (zfs_pool_exclude)"))
            continue
        if _flag(node.get("rm")) or _flag(node.get("ro")):
            skipped.append(Skipped(kname, "removable or read-only"))
            continue
        if best is None:
            refused.append(Refused(kname, "has no /dev/disk/by-id name (pools are never built"
                                          " on kernel names such as sdX/nvmeXnY)"))  # fmt: skip
            continue
        disk = Disk(
            kname=kname,
            by_id=f"/dev/disk/by-id/{best}",
            size=int(node.get("size") or 0),
            model=(node.get("model") or "").strip(),
            serial=(node.get("serial") or "").strip(),
        )
        carried = _signature(node)
        if carried and not wipe_names.intersection(names):
            refused.append(Refused(disk.by_id, f"{carried}; name it in zfs_pool_wipe to reuse it"))
            continue
        if carried:
            disk = replace(disk, carries=carried)
            to_wipe.append(disk)
        chosen.append(disk)

    unknown = sorted(wipe_names - seen_ids)
    refused += [Refused(f"/dev/disk/by-id/{u}", "is in the wipe list but not on this host")
                for u in unknown]  # fmt: skip
    if not refused and expected_disks and len(chosen) != expected_disks:
        refused.append(
            Refused(
                "-",
                f"found {len(chosen)} data disks, the site expects"
                f" {expected_disks}: {', '.join(d.kname for d in chosen)}",
            )
        )
    if not refused and len(chosen) < MIN_DISKS[level]:
        refused.append(Refused("-", f"{level} needs at least {MIN_DISKS[level]} disks,"
                                    f" found {len(chosen)}"))  # fmt: skip
    if refused:
        reasons = "; ".join(f"{r.disk}: {r.reason}" for r in refused)
        return DiskPlan(
            "refuse",
            pool,
            f"refusing to create pool {pool}: {reasons}",
            tuple(chosen),
            tuple(to_wipe),
            tuple(refused),
            tuple(skipped),
        )
    chosen.sort(key=lambda d: d.by_id)
    commands = [argv for d in to_wipe for argv in _wipe_argvs(d)]
    commands.append(_create_argv(pool, level, chosen, pool_options or {}, fs_options or {},
                                 mountpoint))  # fmt: skip
    return DiskPlan(
        "create", pool, f"creating {level} pool {pool} on {len(chosen)} disks",
        tuple(chosen), tuple(to_wipe), (), tuple(skipped), tuple(commands),
    )  # fmt: skip


def _wipe_argvs(disk: Disk) -> list[tuple[str, ...]]:
    """ZFS keeps two of its four labels at the end of the disk, out of wipefs's sight."""
    argvs = [("zpool", "labelclear", "-f", disk.by_id)] if "ZFS" in disk.carries else []
    return [*argvs, ("wipefs", "--all", "--force", disk.by_id)]


def _create_argv(
    pool: str,
    level: str,
    disks: Sequence[Disk],
    pool_options: Mapping[str, str],
    fs_options: Mapping[str, str],
    mountpoint: str,
) -> tuple[str, ...]:
    argv = ["zpool", "create"]
    for key, value in sorted(pool_options.items()):
        argv += ["-o", f"{key}={value}"]
    for key, value in sorted(fs_options.items()):
        argv += ["-O", f"{key}={value}"]
    if mountpoint:
        argv += ["-m", mountpoint]
    argv.append(pool)
    if level != "stripe":
        argv.append(level)
    argv += [d.by_id for d in disks]
    return tuple(argv)


# --- one probe for the role: every listing the plan reads, in one command ------------------------

_PROBE_MARK = "### racksmith-zfs-probe"
#: Sections of the probe's output, in order.
PROBE_SECTIONS = ("lsblk", "by-id", "imported", "importable")


def probe_argv(settle_timeout: int = 30) -> list[str]:
    """The one command (an argv for ``ansible.builtin.command``) that prints everything
    :func:`plan` reads, each part after a marker line: udev settles first (so that every disk has
    its /dev/disk/by-id links), then ``lsblk``, the by-id links, ``zpool list`` and
    ``zpool import``. lsblk, the links and udev must answer (the command fails otherwise); the
    two zpool listings end with their exit status, because a host whose ZFS tools are not
    installed yet (check mode on a new host) can still be planned, and ``zpool import`` exits 1
    when there is nothing to import. It only reads: the task may run in check mode."""
    if int(settle_timeout) < 1:
        raise DiskPlanError(
            f"settle timeout {settle_timeout!r} must be a positive number of seconds"
        )
    # each marker on a line of its own, even after output that lacks a final newline
    mark = f"printf '\\n{_PROBE_MARK} %s\\n'"
    script = (
        "set -e; "
        f"udevadm settle --timeout={int(settle_timeout)}; "
        f"{mark} lsblk; lsblk --json --bytes --output {LSBLK_COLUMNS}; "
        f"{mark} by-id; find /dev/disk/by-id -maxdepth 1 -type l -printf '%f %l\\n'; "
        f"{mark} imported; rc=0; zpool list -H -o name 2>&1 || rc=$?; "
        f'{mark} "rc $rc"; '
        f"{mark} importable; rc=0; zpool import 2>&1 || rc=$?; "
        f'{mark} "rc $rc"'
    )
    return ["/bin/sh", "-c", script]


@dataclass(frozen=True)
class Probe:
    """The probe's output, split: lsblk's JSON text, the by-id listing, and each zpool
    listing's text with its exit status."""

    lsblk: str
    by_id: str
    imported: str
    imported_rc: int
    importable: str
    importable_rc: int


def parse_probe(text: str) -> Probe:
    """Split :func:`probe_argv`'s output; fail, naming what is missing, on anything else."""
    if not isinstance(text, str):
        raise DiskPlanError(f"probe output must be text, got {type(text).__name__}")
    sections: dict[str, list[str]] = {}
    codes: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(_PROBE_MARK + " "):
            word = line[len(_PROBE_MARK) + 1 :].strip()
            if word.startswith("rc "):
                if current is None or not word[3:].strip().isdigit():
                    raise DiskPlanError(f"probe output: stray status line {line!r}")
                codes[current] = int(word[3:])
                continue
            if word not in PROBE_SECTIONS or word in sections:
                raise DiskPlanError(f"probe output: unexpected section {word!r}")
            current = word
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    missing = [name for name in PROBE_SECTIONS if name not in sections]
    if missing:
        raise DiskPlanError(
            f"probe output lacks the {', '.join(missing)} part (the probe did not finish)"
        )
    for name in ("imported", "importable"):
        if name not in codes:
            raise DiskPlanError(f"probe output: the {name} listing has no exit status")
    return Probe(
        lsblk="\n".join(sections["lsblk"]),
        by_id="\n".join(sections["by-id"]),
        imported="\n".join(sections["imported"]),
        imported_rc=codes["imported"],
        importable="\n".join(sections["importable"]),
        importable_rc=codes["importable"],
    )


@dataclass(frozen=True)
class ProbedPlan:
    """A plan made from the probe, and what the probe could not see (said with the plan)."""

    plan: DiskPlan
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {**self.plan.as_dict(), "notes": list(self.notes)}


def plan_from_probe(text: str, *, check_mode: bool = False, **options) -> ProbedPlan:
    """:func:`plan` over :func:`probe_argv`'s output. A zpool listing that failed fails the
    plan (naming it and its output), except in check mode, where the ZFS tools may not be
    installed yet: then no pool is known and the plan says so (``notes``)."""

    probe = parse_probe(text)
    notes: list[str] = []
    imported: list[str] = []
    importable: list[str] = []
    if probe.imported_rc == 0:
        # names only (one per line); a line with spaces is zpool talking, not a pool
        imported = [
            line.strip() for line in probe.imported.splitlines() if _POOL_NAME.match(line.strip())
        ]
    elif check_mode:
        notes.append("zpool is not installed yet: pools were not probed")
    else:
        raise DiskPlanError(
            f"zpool list failed (exit {probe.imported_rc}): {probe.imported.strip() or 'no output'}"
        )
    if probe.importable_rc in (0, 1):  # 1 with "no pools available to import" is the normal answer
        importable = parse_zpool_import(probe.importable)
    elif not check_mode:
        raise DiskPlanError(
            f"zpool import failed (exit {probe.importable_rc}): "
            f"{probe.importable.strip() or 'no output'}"
        )
    try:
        lsblk = json.loads(probe.lsblk)
    except ValueError as exc:
        raise DiskPlanError(f"probe output: lsblk did not print JSON ({exc})") from exc
    decided = plan(
        lsblk, parse_by_id(probe.by_id), imported=imported, importable=importable, **options
    )
    return ProbedPlan(decided, tuple(notes))
