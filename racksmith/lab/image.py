"""The test hosts' root filesystem: a Debian 12 debootstrap, built once and cached by recipe.

Every test host starts from the same tarball, so the image holds nothing host- or
run-specific (no SSH keys, no apt proxy, no hostname, empty machine-id): those are written
per host after unpacking (racksmith.lab.hosts). A cached image therefore stays valid across
runs and labs; changing the recipe (package list, suite, customisation) changes its hash and
triggers a rebuild instead of silently reusing a stale image.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from racksmith.lab import paths
from racksmith.lab.errors import LabError
from racksmith.lab.mirror import debian_mirror
from racksmith.lab.proc import file_lock

#: Why each package: systemd/systemd-sysv/dbus give a real init; python3 + python3-apt are what
#: Ansible and its apt module need; openssh-server + sudo give production-like access;
#: iproute2/procps give network facts and ps; curl and ca-certificates are for verify steps.
DEFAULT_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "python3",
    "python3-apt",
    "openssh-server",
    "sudo",
    "iproute2",
    "ca-certificates",
    "procps",
    "curl",
)

#: Runs inside the fresh debootstrap (``chroot BUILD /bin/sh -es``). Part of the recipe hash.
CUSTOMIZE = r"""
# Non-root user as MAAS deploys it (uid 1000), passwordless sudo like cloud images.
useradd -m -s /bin/bash -u 1000 -G sudo ubuntu
echo 'ubuntu ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/ubuntu
chmod 0440 /etc/sudoers.d/ubuntu
install -d -m 0700 /root/.ssh
install -d -m 0700 -o 1000 -g 1000 /home/ubuntu/.ssh
apt-get clean
# An empty list dir with an old mtime forces the first `apt update` (cache_valid_time).
rm -rf /var/lib/apt/lists/*
touch -d 2000-01-01 /var/lib/apt/lists
# No resolver: any name lookup fails at once instead of leaking off the bridge.
echo 'nameserver 127.0.0.1' > /etc/resolv.conf
# Per-host identity is written after unpacking: machine-id, SSH host keys.
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*
"""

#: The lab-only compile cache for zip-imported modules (data/zipimport_cache.py says why): the
#: module in the image's site-packages, a ``.pth`` line that installs it at interpreter start,
#: and the root-owned cache directory (each host's writable layer holds its own entries).
ZIPIMPORT_CACHE = (Path(__file__).parent / "data" / "zipimport_cache.py").read_text()
CUSTOMIZE += rf"""
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
install -d -m 0755 "$site" /var/cache/racksmith-lab-pyc
cat > "$site/racksmith_lab_pyc.py" <<'RACKSMITH_PYC_EOF'
{ZIPIMPORT_CACHE}RACKSMITH_PYC_EOF
echo 'import racksmith_lab_pyc; racksmith_lab_pyc.install()' > "$site/racksmith_lab_pyc.pth"
python3 -c 'import zipimport; assert zipimport._compile_source.__module__ == "racksmith_lab_pyc"'
"""


@dataclass(frozen=True)
class Recipe:
    suite: str = "bookworm"
    # The controller's own Debian mirror (racksmith.lab.mirror), part of the cache key.
    mirror: str = field(default_factory=debian_mirror)
    variant: str = "minbase"
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    customize: str = field(default=CUSTOMIZE, repr=False)

    def digest(self) -> str:
        """Stable 16-hex key over everything that shapes the image."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def debootstrap_argv(self, target: Path) -> list[str]:
        return [
            "debootstrap",
            f"--variant={self.variant}",
            f"--include={','.join(self.packages)}",
            self.suite,
            str(target),
            self.mirror,
        ]


def image_path(recipe: Recipe | None = None, cache: Path | None = None) -> Path:
    recipe = recipe or Recipe()
    return (cache or paths.cache_dir()) / f"rootfs-{recipe.digest()}.tar.zst"


def ensure_image(
    recipe: Recipe | None = None, *, cache: Path | None = None, quiet: bool = False
) -> Path:
    """Return the cached image for ``recipe``, building it first when missing (~60-90 s).

    A file lock makes concurrent callers (two labs, the MAAS simulator's threads) wait for
    one build instead of running several debootstraps at once.
    """
    recipe = recipe or Recipe()
    cache = cache or paths.cache_dir()
    target = image_path(recipe, cache)
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(cache / f".rootfs-{recipe.digest()}.lock"):
        if target.exists():
            return target
        _build(recipe, cache, target, quiet=quiet)
    return target


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        print(f"[lab] {message}", file=sys.stderr, flush=True)


def _build(recipe: Recipe, cache: Path, target: Path, *, quiet: bool) -> None:
    if os.geteuid() != 0:
        raise LabError("building the test-host image needs root (debootstrap, chroot); run as root")
    for tool in ("debootstrap", "zstd", "tar", "chroot"):
        if shutil.which(tool) is None:
            raise LabError(f"`{tool}` is not installed; run scripts/setup.sh (or `make setup`)")
    build = cache / f"build-{recipe.digest()}"
    log = cache / f"build-{recipe.digest()}.log"
    remove_tree(build)
    t0 = time.monotonic()
    _say(
        quiet,
        f"building test-host image {target.name} (debootstrap {recipe.suite}, about a minute);"
        f" log: {log}",
    )
    try:
        with open(log, "wb") as out:
            _step(recipe.debootstrap_argv(build), out, log, "debootstrap")
            _step(
                ["chroot", str(build), "/bin/sh", "-es"],
                out,
                log,
                "customise",
                stdin=recipe.customize.encode(),
            )
            partial = target.with_suffix(".partial")
            pack = f"tar --numeric-owner -C '{build}' -c . | zstd -T0 -3 -q -f -o '{partial}'"
            _step(["/bin/sh", "-ec", pack], out, log, "pack")
        partial.replace(target)
        target.with_suffix(".json").write_text(json.dumps(asdict(recipe), indent=2) + "\n")
    finally:
        remove_tree(build)
        target.with_suffix(".partial").unlink(missing_ok=True)
    size_mib = target.stat().st_size >> 20
    _say(quiet, f"image ready in {time.monotonic() - t0:.0f}s: {target} ({size_mib} MiB)")


def _step(argv: list[str], out, log: Path, what: str, *, stdin: bytes | None = None) -> None:
    out.write(f"\n$ {' '.join(argv)}\n".encode())
    out.flush()
    done = subprocess.run(argv, input=stdin, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise LabError(
            f"image build step '{what}' failed (rc {done.returncode}); log {log}:\n{tail}"
        )


def ensure_tree(recipe: Recipe | None = None, *, cache: Path | None = None) -> Path:
    """The image unpacked once (read-only lower layer of every host's overlay root).

    Created under a lock and renamed into place, so a half-unpacked tree is never used; an
    existing tree is never modified or removed while hosts may have it mounted.
    """
    img = ensure_image(recipe, cache=cache)
    tree = img.parent / img.name.removesuffix(".tar.zst")
    if tree.is_dir():
        return tree
    with file_lock(img.parent / f".{tree.name}.lock"):
        if tree.is_dir():
            return tree
        partial = tree.with_name(tree.name + ".partial")
        unpack(img, partial)
        partial.rename(tree)
    return tree


def mounts_under(root: Path, mounts_text: str) -> list[str]:
    """Mount points at or below ``root`` in /proc/mounts text, deepest first."""
    prefix = str(root).rstrip("/")
    found = []
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) > 1:
            point = fields[1].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def remove_tree(root: Path) -> None:
    """Delete a build or host tree, first unmounting anything a crashed debootstrap left
    mounted inside it (rm -rf through a live /proc or /dev mount would be a disaster)."""
    if not root.exists():
        return
    for point in mounts_under(root, Path("/proc/mounts").read_text()):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    if mounts_under(root, Path("/proc/mounts").read_text()):
        raise LabError(f"{root} still has mounts under it; not deleting it")
    shutil.rmtree(root)


def unpack(image: Path, root: Path) -> None:
    """Unpack ``image`` into an empty ``root`` (0.7-3.6 s on the CI machine type)."""
    remove_tree(root)
    root.mkdir(parents=True)
    cmd = f"zstd -dc '{image}' | tar --numeric-owner -C '{root}' -x"
    done = subprocess.run(["/bin/sh", "-ec", cmd], capture_output=True, check=False)
    if done.returncode != 0:
        raise LabError(f"unpacking {image} into {root} failed: {done.stderr.decode().strip()}")
