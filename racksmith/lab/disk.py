"""A test host's root disk: an overlay on the shared, unpacked image, or a full copy.

Unpacking the 223 MB image for every host cost 1-4 s of disk-bound time per boot and 223 MB
of disk per host. With overlayfs the image is unpacked once per machine (read-only lower
layer under /var/cache/racksmith) and each host writes only its changes (upper layer), so a
boot costs a mount. Where overlayfs is unavailable (or ``RACKSMITH_LAB_ROOTFS=copy``) the
host gets a full copy, as before: same behaviour, slower.

A disk survives a power-off (``wipe=False``), like a machine's disk; a fresh deploy starts
from the image again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab import image
from racksmith.lab.errors import LabError


@dataclass(frozen=True)
class Disk:
    dir: Path  # $LAB_DIR/machines/NAME

    @property
    def root(self) -> Path:
        """What nspawn boots: the overlay mount point, or the copied tree."""
        return self.dir / "root"

    @property
    def upper(self) -> Path:
        return self.dir / "upper"

    @property
    def work(self) -> Path:
        return self.dir / "work"

    @property
    def lower_file(self) -> Path:
        """Which image tree this disk was made from (kept across power cycles)."""
        return self.dir / "lower"

    def present(self) -> bool:
        """Whether a disk from an earlier boot exists (overlay layers or a copied tree)."""
        overlay = self.upper.is_dir() and self.lower_file.exists()
        copied = not self.upper.exists() and (self.root / "etc").is_dir()
        return overlay or copied


def overlay_options(lower: Path, upper: Path, work: Path) -> str:
    for part in (lower, upper, work):
        if any(c in str(part) for c in ",:\\"):
            raise LabError(
                f"path {part} cannot be used in overlay mount options (',', ':', '\\\\')"
            )
    return f"lowerdir={lower},upperdir={upper},workdir={work}"


def is_mounted(path: Path) -> bool:
    return str(path) in image.mounts_under(path, Path("/proc/mounts").read_text())


def release(disk: Disk) -> None:
    """Unmount the overlay (lazily if something still holds it); layers stay on disk."""
    if is_mounted(disk.root):
        done = subprocess.run(["umount", str(disk.root)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", "-l", str(disk.root)], capture_output=True, check=False)


def prepare(disk: Disk, *, fresh: bool) -> str:
    """Make ``disk.root`` bootable; returns how ("overlay" or "copy")."""
    if fresh:
        release(disk)
        for part in (disk.root, disk.upper, disk.work):
            image.remove_tree(part)
        disk.lower_file.unlink(missing_ok=True)
    if is_mounted(disk.root):
        return "overlay"
    if not fresh and not disk.upper.exists() and (disk.root / "etc").is_dir():
        return "copy"  # an earlier boot made a full copy
    if os.environ.get("RACKSMITH_LAB_ROOTFS", "overlay") == "overlay":
        try:
            _mount_overlay(disk)
            return "overlay"
        except LabError as exc:
            if not fresh and disk.upper.exists():
                raise  # the host's disk is this overlay; a copy would silently lose it
            print(
                f"[lab] overlayfs unavailable ({exc}); copying the image instead", file=sys.stderr
            )
            for part in (disk.root, disk.upper, disk.work):
                image.remove_tree(part)
            disk.lower_file.unlink(missing_ok=True)
    image.unpack(image.ensure_image(), disk.root)
    return "copy"


def _mount_overlay(disk: Disk) -> None:
    recorded = Path(disk.lower_file.read_text().strip()) if disk.lower_file.exists() else None
    lower = recorded if recorded and recorded.is_dir() else image.ensure_tree()
    for part in (disk.root, disk.upper, disk.work):
        part.mkdir(parents=True, exist_ok=True)
    options = overlay_options(lower, disk.upper, disk.work)
    done = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", options, str(disk.root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise LabError(f"mount overlay on {disk.root}: {done.stderr.strip()}")
    disk.lower_file.write_text(f"{lower}\n")
