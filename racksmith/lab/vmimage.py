"""The VM lane's image: the test-host tree plus a Debian kernel and DKMS-built ZFS and NVIDIA
modules, built once and cached by recipe hash (like racksmith.lab.image's rootfs).

Why a VM at all: the controller's kernel has no module support and the nspawn hosts share it,
so a role that loads a module, builds DKMS or needs ``linux-headers-<kernel>``
can only be tested in a guest with a kernel of its own (docs/lab.md, "The VM lane"). KVM does
not work on the CI machine type, so guests run under TCG, where DKMS builds would take many
minutes. DKMS builds for every kernel whose headers are installed, not for the running one,
so the modules are built here, natively, in a chroot of the image tree (~25 min once on a
loaded 2-core machine, both kernels).

The image holds nothing per-VM (no SSH keys, empty machine-id, no apt proxy, no address):
racksmith.lab.vm writes those into each VM's fresh OS disk. The guest is booted with
``-kernel``/``-initrd``, so the kernel and initrd are kept as files next to the tree.

The chroot's apt reaches the archive with the controller's own resolver and mirror (the image
build must work before ``racksmith lab up``: CI builds it in the background); the image's
``nameserver 127.0.0.1`` is put back afterwards, so guests still resolve nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from racksmith.lab import image, paths
from racksmith.lab.errors import LabError
from racksmith.lab.mirror import debian_mirror
from racksmith.lab.proc import file_lock

#: The root filesystem's label: guests boot with ``root=LABEL=...``, never ``/dev/vda``,
#: because the OS disk's position among the virtio disks changes from run to run.
ROOT_LABEL = "rsvm-root"

#: apt-get steps in the chroot, in order (each: extra apt-get arguments). Measured natively
#: on the CI machine type: 20 s, 2 min 15 s, 1 min 44 s (docs/lab.md); on the loaded 2-core
#: machine 51 s, 522 s, 380 s.
#:
#: The last stage is the VM lane's kernel update (issue 20): a second kernel, with its headers,
#: installed after the driver's DKMS package, as an update reaches a host. Its postinst hook
#: (/etc/kernel/postinst.d/dkms) builds zfs and nvidia for it, here, natively: under emulation
#: that build would take longer than the lane's whole budget. It is Debian's generic flavour of
#: the same release (another ``uname -r``, its own headers and /lib/modules), because bookworm
#: always carries it; another ABI of the cloud kernel is in the archive only between point
#: releases, so a recipe naming one would stop building. The VM boots the cloud kernel; the
#: lane's verify boots this one (kexec: the VM starts with ``-kernel``, so a firmware reboot
#: would boot the image's kernel again) and loads the driver there.
DEFAULT_STAGES: tuple[tuple[str, ...], ...] = (
    ("linux-image-cloud-amd64", "linux-headers-cloud-amd64", "initramfs-tools"),
    ("--no-install-recommends", "dkms", "zfs-dkms", "zfsutils-linux"),
    ("--no-install-recommends", "nvidia-tesla-535-kernel-dkms"),
    ("--no-install-recommends", "linux-image-amd64", "linux-headers-amd64", "kexec-tools"),
)
#: The flavour of the kernel the VM boots (``-kernel``); the other kernels in /boot are the
#: update that the lane's verify boots into.
BOOT_FLAVOUR = "cloud-amd64"
#: How many kernels /boot must hold after the stages (the boot kernel and the update).
KERNELS = 2
#: DKMS modules that must be ``installed`` for every kernel in the image, or the build fails.
REQUIRED_DKMS = ("zfs", "nvidia-tesla-535")
COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")
#: The cloud kernel has these as modules; without them in the initramfs the guest stops at
#: "Gave up waiting for root file system device".
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "virtio_net", "ext4")

#: Runs in the chroot after the apt stages (``chroot BUILD /bin/sh -es``). Part of the hash.
CUSTOMIZE = rf"""
for m in {" ".join(INITRAMFS_MODULES)}; do
  grep -qx "$m" /etc/initramfs-tools/modules || echo "$m" >> /etc/initramfs-tools/modules
done
update-initramfs -u -k all
# kexec-tools is there for the lane's verify to boot the second kernel on request; it must not
# turn every reboot into a kexec of /vmlinuz (its LOAD_KEXEC), or the driver's reboot in
# converge would boot the second kernel.
sed -i 's/^LOAD_KEXEC=.*/LOAD_KEXEC=false/' /etc/default/kexec
grep -qx 'LOAD_KEXEC=false' /etc/default/kexec
# In the guest, initramfs rebuilds (the driver packages' trigger, nvidia_driver's nouveau
# blacklist) run under emulation, where MODULES=most and zstd -9 took about 2 minutes each:
# take only the modules the guest uses and compress fast. Written after the image's own
# initramfs above, which the chroot (another machine's devices) must build with MODULES=most.
printf 'MODULES=dep\nCOMPRESSLEVEL=1\n' > /etc/initramfs-tools/conf.d/racksmith-vm.conf
# The address comes from the kernel command line (ip=...), turned into a .network file by
# systemd-network-generator; systemd-networkd brings it up. No DHCP, no default route.
systemctl enable systemd-networkd.service systemd-network-generator.service
echo 'LABEL={ROOT_LABEL} / ext4 defaults,errors=remount-ro 0 1' > /etc/fstab
apt-get clean
rm -rf /var/lib/apt/lists/*
touch -d 2000-01-01 /var/lib/apt/lists
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*
"""

_DKMS_LINE = re.compile(
    r"^(?P<module>[^/,\s]+)/(?P<version>[^,\s]+),\s*(?P<kernel>[^,\s]+),\s*(?P<arch>[^:\s]+):"
    r"\s*(?P<state>.+)$"
)


@dataclass(frozen=True)
class VmRecipe:
    """Everything that shapes the VM image; its digest names the cache entry."""

    base: str = field(default_factory=lambda: image.Recipe().digest())
    mirror: str = field(default_factory=debian_mirror)
    suite: str = "bookworm"
    components: tuple[str, ...] = COMPONENTS
    stages: tuple[tuple[str, ...], ...] = DEFAULT_STAGES
    boot_flavour: str = BOOT_FLAVOUR
    kernels: int = KERNELS
    required_dkms: tuple[str, ...] = REQUIRED_DKMS
    root_label: str = ROOT_LABEL
    customize: str = field(default=CUSTOMIZE, repr=False)

    def digest(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def sources_list(self) -> str:
        return f"deb {self.mirror} {self.suite} {' '.join(self.components)}\n"

    def apt_argv(self, stage: tuple[str, ...]) -> list[str]:
        return ["apt-get", "install", "-y", "-q", "-o", "Dpkg::Use-Pty=0", *stage]


@dataclass(frozen=True)
class DkmsEntry:
    module: str
    version: str
    kernel: str
    state: str


def parse_dkms_status(text: str) -> list[DkmsEntry]:
    """``dkms status`` lines (``zfs/2.1.11, 6.1.0-28-cloud-amd64, x86_64: installed``)."""
    found = []
    for line in text.splitlines():
        match = _DKMS_LINE.match(line.strip())
        if match:
            found.append(
                DkmsEntry(
                    module=match["module"],
                    version=match["version"],
                    kernel=match["kernel"],
                    state=match["state"].strip(),
                )
            )
    return found


def missing_dkms(entries: list[DkmsEntry], required: tuple[str, ...], kernel: str) -> list[str]:
    """Required modules not ``installed`` for ``kernel`` (a failed or skipped build)."""
    done = {e.module for e in entries if e.kernel == kernel and e.state.startswith("installed")}
    return [m for m in required if m not in done]


def pick_kernels(boot_files: list[str], flavour: str, count: int) -> tuple[str, list[str]]:
    """The kernel the VM boots (the one of ``flavour``) and every kernel version with a vmlinuz
    in /boot; another number of kernels than ``count``, or not exactly one of ``flavour``, is
    an error (the recipe's stages decide both)."""
    versions = sorted(f.removeprefix("vmlinuz-") for f in boot_files if f.startswith("vmlinuz-"))
    boot = [v for v in versions if v.endswith(f"-{flavour}")]
    if len(versions) != count or len(boot) != 1:
        raise LabError(
            f"expected {count} kernels in the VM image's /boot, exactly one of flavour {flavour},"
            f" found {versions}"
        )
    return boot[0], versions


@dataclass(frozen=True)
class VmImage:
    """A built VM image: the tree (overlay lower layer of every VM disk) and boot files."""

    dir: Path

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def kernel(self) -> Path:
        return self.dir / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.dir / "initrd.img"

    @property
    def manifest(self) -> Path:
        """recipe, kernel version, DKMS status and module files (what the lead's tests read)."""
        return self.dir / "manifest.json"

    def info(self) -> dict:
        return json.loads(self.manifest.read_text())

    def complete(self) -> bool:
        return all(p.exists() for p in (self.root, self.kernel, self.initrd, self.manifest))


def image_dir(recipe: VmRecipe | None = None, cache: Path | None = None) -> Path:
    recipe = recipe or VmRecipe()
    return (cache or paths.cache_dir()) / f"vm-{recipe.digest()}"


def ensure_vm_image(
    recipe: VmRecipe | None = None, *, cache: Path | None = None, quiet: bool = False
) -> VmImage:
    """The cached VM image for ``recipe``, built first when missing (~25 min, once).

    A file lock makes concurrent callers (CI's background build and a ``vm up``) wait for one
    build. Safe to call from a background job: ``python -c 'from racksmith.lab import vm;
    vm.ensure_vm_image()'``.
    """
    recipe = recipe or VmRecipe()
    cache = cache or paths.cache_dir()
    built = VmImage(image_dir(recipe, cache))
    if built.complete():
        return built
    cache.mkdir(parents=True, exist_ok=True)
    with file_lock(cache / f".vm-{recipe.digest()}.lock"):
        if not built.complete():
            _build(recipe, cache, built, quiet=quiet)
    return built


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        print(f"[lab] {message}", file=sys.stderr, flush=True)


def _build(recipe: VmRecipe, cache: Path, target: VmImage, *, quiet: bool) -> None:
    if os.geteuid() != 0:
        raise LabError("building the VM image needs root (chroot, mounts); run as root")
    tree = image.ensure_tree()
    log = cache / f"vm-{recipe.digest()}.log"
    partial = VmImage(cache / f"vm-{recipe.digest()}.partial")
    image.remove_tree(partial.dir)
    image.remove_tree(target.dir)
    t0 = time.monotonic()
    _say(
        quiet,
        f"building VM image {target.dir.name} (two kernels + DKMS zfs and nvidia for each,"
        " about 25 minutes on a loaded 2-core machine);"
        f" log: {log}",
    )
    try:
        partial.dir.mkdir(parents=True)
        with open(log, "wb") as out:
            _step(["cp", "-a", f"{tree}/.", str(partial.root)], out, log, "copy tree")
            info = _chroot_build(recipe, partial.root, out, log)
        shutil.copy2(partial.root / "boot" / f"vmlinuz-{info['kernel']}", partial.kernel)
        shutil.copy2(partial.root / "boot" / f"initrd.img-{info['kernel']}", partial.initrd)
        info["recipe"] = asdict(recipe)
        partial.manifest.write_text(json.dumps(info, indent=2) + "\n")
        partial.dir.rename(target.dir)
    finally:
        image.remove_tree(partial.dir)
    _say(quiet, f"VM image ready in {time.monotonic() - t0:.0f}s: {target.dir}")


def _chroot_build(recipe: VmRecipe, root: Path, out, log: Path) -> dict:
    """apt stages, customisation and the DKMS check in ``root``; returns the manifest."""
    sources = root / "etc/apt/sources.list"
    sources.write_text(recipe.sources_list())
    for extra in (root / "etc/apt/sources.list.d").glob("*"):
        extra.unlink()
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text(
        "#!/bin/sh\n# racksmith VM image build: start nothing in the chroot\nexit 101\n"
    )
    policy.chmod(0o755)
    resolv = root / "etc/resolv.conf"
    image_resolv = resolv.read_bytes() if resolv.exists() else b"nameserver 127.0.0.1\n"
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "DEBIAN_FRONTEND": "noninteractive",
        "LANG": "C.UTF-8",
        "HOME": "/root",
    }
    try:
        resolv.unlink(missing_ok=True)
        shutil.copyfile("/etc/resolv.conf", resolv)  # for the build only; restored below
        with _mounted(root):
            chroot = ["chroot", str(root)]
            _step([*chroot, "apt-get", "update", "-q"], out, log, "apt-get update", env=env)
            for number, stage in enumerate(recipe.stages, 1):
                _step([*chroot, *recipe.apt_argv(stage)], out, log, f"apt stage {number}", env=env)
            _step(
                [*chroot, "/bin/sh", "-es"],
                out,
                log,
                "customise",
                stdin=recipe.customize.encode(),
                env=env,
            )
            kernel, kernels = pick_kernels(
                [p.name for p in (root / "boot").iterdir()], recipe.boot_flavour, recipe.kernels
            )
            status = _step(
                [*chroot, "dkms", "status"], out, log, "dkms status", env=env, capture=True
            )
    finally:
        resolv.unlink(missing_ok=True)
        resolv.write_bytes(image_resolv)
        policy.unlink(missing_ok=True)
    entries = parse_dkms_status(status)
    missing = {k: m for k in kernels if (m := missing_dkms(entries, recipe.required_dkms, k))}
    if missing:
        raise LabError(
            f"VM image: DKMS modules are not installed for every kernel (missing: {missing});"
            f" `dkms status` said:\n{status}\nlog {log}:\n{_tail(log)}"
        )
    module_dir = root / "lib/modules" / kernel / "updates/dkms"
    modules = sorted(p.name.split(".ko")[0] for p in module_dir.glob("*.ko*"))
    return {
        "kernel": kernel,
        # the kernels the lane's verify boots into after the driver is installed
        "update_kernels": [k for k in kernels if k != kernel],
        "root_label": recipe.root_label,
        "dkms": [asdict(e) for e in entries],
        "dkms_modules": modules,
    }


@contextlib.contextmanager
def _mounted(root: Path) -> Iterator[None]:
    """/proc, /sys, /dev and /dev/pts for the chroot (DKMS and postinst scripts need them);
    always unmounted again, deepest first, so nothing is left to trip an rm -rf."""
    mounts = (
        (["-t", "proc", "proc"], "proc"),
        (["-t", "sysfs", "sysfs"], "sys"),
        (["--bind", "/dev"], "dev"),
        (["--bind", "/dev/pts"], "dev/pts"),
    )
    done: list[Path] = []
    try:
        for args, point in mounts:
            target = root / point
            target.mkdir(parents=True, exist_ok=True)
            mounted = subprocess.run(
                ["mount", *args, str(target)], capture_output=True, text=True, check=False
            )
            if mounted.returncode != 0:
                raise LabError(f"mount {point} for the VM image chroot: {mounted.stderr.strip()}")
            done.append(target)
        yield
    finally:
        for target in reversed(done):
            if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)
        if image.mounts_under(root, Path("/proc/mounts").read_text()):
            raise LabError(f"{root} still has mounts after the VM image build; unmount them")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _step(
    argv: list[str],
    out,
    log: Path,
    what: str,
    *,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    capture: bool = False,
) -> str:
    """Run one build step, its output appended to the log as it comes (``capture``: also
    returned)."""
    out.write(f"\n$ {' '.join(argv)}\n".encode())
    out.flush()
    t0 = time.monotonic()
    done = subprocess.run(
        argv,
        input=stdin,
        stdout=subprocess.PIPE if capture else out,
        stderr=out,
        env=env,
        check=False,
    )
    if capture:
        out.write(done.stdout)
    out.write(f"# {what}: rc {done.returncode} in {time.monotonic() - t0:.0f}s\n".encode())
    out.flush()
    if done.returncode != 0:
        raise LabError(
            f"VM image build step '{what}' failed (rc {done.returncode}); log {log}:\n{_tail(log)}"
        )
    return done.stdout.decode(errors="replace") if capture else ""
