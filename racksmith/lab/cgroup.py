"""One cgroup per test host, so hosts do not share (and race on) one cgroup tree.

With ``--keep-unit`` and no systemd on the controller, systemd-nspawn puts every container in
``<its own cgroup>/payload``; started from the same cgroup, all hosts shared one ``payload``
tree, so every host's systemd created and removed the same directories
(``payload/system.slice/<unit>``). A unit starting on one host could find its cgroup just
removed by another and fail with status 219/CGROUP (seen when the MAAS simulator deployed
four hosts at once), and per-unit accounting mixed all hosts. The supervise wrapper therefore
moves itself into ``racksmith/<machine>`` of every hierarchy systemd tracks processes in (the
named ``systemd`` v1 hierarchy and cgroup2) before it starts nspawn, and removes it afterwards."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

ROOT = "racksmith"


def tracking_hierarchies(mounts_text: str) -> list[Path]:
    """Mount points of the hierarchies systemd uses to track processes (pure)."""
    found = []
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        kind, options = fields[2], fields[3].split(",")
        if kind == "cgroup2" or (kind == "cgroup" and "name=systemd" in options):
            found.append(Path(fields[1]))
    return found


def enter(name: str, *, mounts_text: str | None = None) -> list[Path]:
    """Move this process into ``racksmith/<name>`` of each tracking hierarchy; return them."""
    if mounts_text is None:
        mounts_text = Path("/proc/mounts").read_text()
    entered = []
    for base in tracking_hierarchies(mounts_text):
        group = base / ROOT / name
        group.mkdir(parents=True, exist_ok=True)
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
        entered.append(group)
    return entered


def remove(groups: list[Path]) -> None:
    """Remove the host's cgroups, deepest first (cgroupfs only removes empty directories);
    this process must have left them first (see :func:`leave`)."""
    for group in groups:
        if not group.is_dir():
            continue
        subdirs = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for path in [*subdirs, group]:
            with contextlib.suppress(OSError):
                path.rmdir()


def leave(groups: list[Path]) -> None:
    """Move this process back to the parent of ``racksmith/`` so its cgroups can go."""
    for group in groups:
        with contextlib.suppress(OSError):
            (group.parent.parent / "cgroup.procs").write_text(f"{os.getpid()}\n")
