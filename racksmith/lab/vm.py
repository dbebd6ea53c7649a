"""qemu VMs on the lab bridge (TCG): the VM lane, for roles that need a kernel of their own.

``racksmith lab vm up NAME IP`` boots a guest from the cached VM image
(racksmith.lab.vmimage: Debian's cloud kernel with ZFS and NVIDIA DKMS modules) on a FRESH OS
disk, with disposable data disks whose serials show up as ``/dev/disk/by-id/virtio-SERIAL``.
The OS disk sits at a chosen or seeded-random position among the virtio disks, so a role that
picks disks by ``/dev/vdX`` order fails the test instead of wiping the OS in the field.

The guest joins the lab bridge through a tap device, with an address from the kernel command
line and no default route, and reaches apt only through the lab's apt cache, like an nspawn
test host. qemu's PID is recorded with its start time (racksmith.lab.proc), so ``vm down`` and
``racksmith lab down`` stop exactly the VMs this lab started.

Direct kernel boot (``-kernel``/``-initrd``): a reboot inside the guest resets the machine and
boots the image's kernel and initrd again (no ``-no-reboot``, so reboot-handling roles work),
but kernels or initramfs changes made inside the guest are not booted. KVM does not work on the
CI machine type, so everything runs under TCG: ~25 s to SSH when idle, one vCPU pinned busy.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import ipaddress
import json
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from racksmith.lab import aptcache, disk, hosts, image, net, paths
from racksmith.lab.errors import LabError
from racksmith.lab.proc import file_lock, read_record, running, start_daemon, stop
from racksmith.lab.spec import RackSpec, SpecError, load
from racksmith.lab.vmimage import VmImage, ensure_vm_image

__all__ = ["VmSpecError", "down", "ensure_vm_image", "list_vms", "stop_all", "up"]

QEMU = "qemu-system-x86_64"
SSH_USER = "ubuntu"
BOOT_TIMEOUT = 600.0  # TCG boot: ~20 s idle, 80-300 s+ measured when the 2 cores are busy
POWEROFF_WAIT = 30.0
SSH_CONNECT_TIMEOUT = 20  # seconds, banner exchange included
#: qemu's scheduling priority (nice value, for the process and its autogroup). An emulated
#: guest wants one full core; at nice 0 beside the lab's other work (load 10 on 2 cores) qemu
#: got 16-20% of a core and every guest step took 3-5 times as long (the VM lane: 45 min in
#: CI, 12 min alone); at -10 it got 92% (docs/lab.md "A VM"). ``--nice 0`` leaves it as is.
NICE = -10
OS_DISK_SIZE = 4 << 30  # sparse; the image tree plus room for the roles' packages
MAX_NAME = 12  # the tap is ``tv-NAME`` and interface names have at most 15 characters
SEED_ENV = "RACKSMITH_VM_SEED"
#: AppArmor's profile parsing took over 6 minutes of a TCG boot on a busy machine; roles in
#: the VM lane do not test AppArmor, so the guest boots without it (kernel command line only).
NO_APPARMOR = "apparmor=0"
MAX_SERIAL = 20  # virtio-blk's serial field holds 20 bytes
FIRST_DISK_SLOT = 0x10  # PCI slots of the virtio disks, in order: slot order is /dev/vdX order

_SERIAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SIZE = re.compile(r"^(\d+)([KMGT]?)$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MIN_DISK = 1 << 20
MAX_DISK = 2 << 40


class VmSpecError(ValueError):
    """Bad input to ``vm up`` (disk spec, name, address, position): the CLI exits 2."""


# --- pure parts: specs, names, argv ------------------------------------------------------


@dataclass(frozen=True)
class DiskSpec:
    """A data disk from ``--disk SERIAL:SIZE[:gpt]`` (SIZE in bytes; K/M/G/T are binary)."""

    serial: str
    size: int
    gpt: bool = False

    @property
    def by_id(self) -> str:
        return f"/dev/disk/by-id/virtio-{self.serial}"


def parse_size(text: str, where: str = "disk") -> int:
    match = _SIZE.match(text.strip())
    if not match:
        raise VmSpecError(f"{where}: size {text!r} is not a number with an optional K/M/G/T suffix")
    size = int(match[1]) * _UNITS[match[2].upper()]
    if not MIN_DISK <= size <= MAX_DISK:
        raise VmSpecError(f"{where}: size {text!r} is outside 1M..2T")
    return size


def check_serial(serial: str, where: str) -> str:
    if not _SERIAL.match(serial) or len(serial) > MAX_SERIAL:
        raise VmSpecError(
            f"{where}: serial {serial!r} must be 1-{MAX_SERIAL} characters of letters, digits,"
            " '_', '.', '-' (virtio-blk holds 20 bytes)"
        )
    return serial


def parse_disk_spec(text: str) -> DiskSpec:
    """``SERIAL:SIZE`` or ``SERIAL:SIZE:gpt``."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "gpt"):
        raise VmSpecError(f"--disk {text!r} is not SERIAL:SIZE or SERIAL:SIZE:gpt")
    where = f"--disk {text!r}"
    serial = check_serial(parts[0], where)
    return DiskSpec(serial=serial, size=parse_size(parts[1], where), gpt=len(parts) == 3)


def os_serial(name: str) -> str:
    return f"rsvm-os-{name}"


def check_disks(name: str, disks: list[DiskSpec]) -> None:
    seen = {os_serial(name)}
    for spec in disks:
        if spec.serial in seen:
            raise VmSpecError(f"--disk serial {spec.serial!r} is used twice (or is the OS disk's)")
        seen.add(spec.serial)


def check_vm_name(name: str) -> str:
    try:
        net.check_host_name(name)
    except LabError as exc:
        raise VmSpecError(str(exc)) from exc
    if len(name) > MAX_NAME:
        raise VmSpecError(
            f"VM name {name!r} is longer than {MAX_NAME} characters (its tap is tv-NAME)"
        )
    return name


def choose_os_position(
    requested: str, data_disks: int, *, name: str, seed: str | None
) -> tuple[int, str | None]:
    """Where the OS disk goes among the virtio disks (0 = first, would be /dev/vda).

    ``requested`` is a number or ``random``; random positions come from ``seed`` (and the VM's
    name, so VMs sharing one seed differ), and the seed used is returned so a run can be
    replayed with ``RACKSMITH_VM_SEED``.
    """
    if requested == "random":
        seed = seed if seed else str(secrets.randbelow(1 << 31))
        return random.Random(f"{seed}:{name}").randrange(data_disks + 1), seed  # noqa: S311
    try:
        position = int(requested)
    except ValueError as exc:
        raise VmSpecError(f"--os-position {requested!r} is not a number or 'random'") from exc
    if not 0 <= position <= data_disks:
        raise VmSpecError(
            f"--os-position {position} is outside 0..{data_disks} ({data_disks} data disks)"
        )
    return position, None


def tap_name(name: str) -> str:
    return f"tv-{name}"


def vm_mac(bridge: str, name: str) -> str:
    """Stable per lab and VM, in qemu's locally administered 52:54:00 range."""
    digest = hashlib.sha256(f"{bridge}/{name}".encode()).digest()
    return "52:54:00:" + ":".join(f"{b:02x}" for b in digest[:3])


def kernel_cmdline(*, ip: str, prefixlen: int, hostname: str, root_label: str) -> str:
    """Root by label (the OS disk moves), serial console, and the address for
    systemd-network-generator: ``ip=ADDR:::MASK:HOST:eth0:off`` -- no gateway, so no route
    off the bridge. ``net.ifnames=0`` makes the one NIC ``eth0`` on any machine type."""
    mask = str(ipaddress.IPv4Network(f"0.0.0.0/{prefixlen}").netmask)
    return (
        f"root=LABEL={root_label} rw console=ttyS0 net.ifnames=0"
        f" ip={ip}:::{mask}:{hostname}:eth0:off systemd.hostname={hostname} {NO_APPARMOR}"
    )


_ANSI = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[@-Z\\-_])")
_SPINNER_KEY = re.compile(r"[\d*\s]+")


def console_tail(text: str, lines: int = 30) -> str:
    """The serial console's last ``lines`` lines, readable: colour codes and carriage returns
    gone, and systemd's once-a-second "Job X running (1min 2s / ...)" spinner lines collapsed
    to the latest, so the tail shows what happened instead of 30 frames of one wait."""
    out: list[str] = []
    for raw in _ANSI.sub("", text).replace("\r", "\n").splitlines():
        line = raw.strip()
        if not line:
            continue
        if out and _SPINNER_KEY.sub("", out[-1]) == _SPINNER_KEY.sub("", line):
            out[-1] = line
        else:
            out.append(line)
    return "\n".join(out[-lines:])


@dataclass(frozen=True)
class AttachedDisk:
    """One virtio disk in device order: the OS disk or a data disk."""

    serial: str
    file: str
    size: int
    gpt: bool = False
    os: bool = False

    @property
    def by_id(self) -> str:
        return f"/dev/disk/by-id/virtio-{self.serial}"


def disk_layout(
    name: str, vm_dir: Path, data: list[DiskSpec], os_position: int
) -> list[AttachedDisk]:
    """Every disk in device order, the OS disk inserted at ``os_position``."""
    attached = [
        AttachedDisk(spec.serial, str(vm_dir / f"disk-{spec.serial}.img"), spec.size, spec.gpt)
        for spec in data
    ]
    system = AttachedDisk(os_serial(name), str(vm_dir / "os.img"), OS_DISK_SIZE, os=True)
    attached.insert(os_position, system)
    return attached


@dataclass(frozen=True)
class VmSpec:
    """Everything needed to run and later find a VM; saved as ``vm.json``."""

    name: str
    ip: str
    bridge: str
    prefixlen: int
    memory: int
    smp: int
    os_position: int
    seed: str | None
    disks: tuple[AttachedDisk, ...]
    image: str
    nice: int = 0

    @property
    def tap(self) -> str:
        return tap_name(self.name)

    @property
    def mac(self) -> str:
        return vm_mac(self.bridge, self.name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> VmSpec:
        data = json.loads(text)
        data["disks"] = tuple(AttachedDisk(**d) for d in data["disks"])
        return cls(**data)


def qemu_argv(spec: VmSpec, *, kernel: Path, initrd: Path, cmdline: str) -> list[str]:
    """The qemu command line. No ``-no-reboot``: a guest reboot must come back. Each disk gets
    a serial (``-drive ... if=virtio`` refuses one) and a fixed PCI slot in device order."""
    argv = [
        QEMU,
        "-name", f"rsvm-{spec.name}",
        "-machine", "pc",
        "-m", str(spec.memory),
        "-smp", str(spec.smp),
        "-nographic",
        "-kernel", str(kernel),
        "-initrd", str(initrd),
        "-append", cmdline,
    ]  # fmt: skip
    for number, attached in enumerate(spec.disks):
        argv += [
            "-drive", f"file={attached.file},format=raw,if=none,id=d{number}",
            "-device",
            f"virtio-blk-pci,drive=d{number},serial={attached.serial},"
            f"addr={FIRST_DISK_SLOT + number:#x}",
        ]  # fmt: skip
    argv += [
        "-nic",
        f"tap,ifname={spec.tap},script=no,downscript=no,model=virtio-net-pci,mac={spec.mac}",
    ]
    return argv


def ssh_argv(key: Path, ip: str, *command: str) -> list[str]:
    """ssh to a VM as ``ubuntu``: the lab hosts' options, but a longer connect timeout (it
    covers the banner exchange, which an emulated guest on a busy machine can take seconds
    for; ssh keeps the first value given for an option)."""
    return ["ssh", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT}",
            *hosts.ssh_argv(key, ip, *command, user=SSH_USER)[1:]]  # fmt: skip


def describe(spec: VmSpec, lab: paths.LabPaths, *, pid: int | None, boot_seconds: float | None):
    """The ``--json`` object of ``vm up`` (and one entry of ``vm list --json``)."""
    files = _Files(lab, spec.name)
    return {
        "name": spec.name,
        "ip": spec.ip,
        "user": SSH_USER,
        "identity_file": str(lab.ssh_key),
        "console_log": str(files.console),
        "mac": spec.mac,
        "tap": spec.tap,
        "os_position": spec.os_position,
        "os_serial": os_serial(spec.name),
        "disks": [
            {"serial": d.serial, "by_id": d.by_id, "size": d.size, "gpt": d.gpt, "file": d.file}
            for d in spec.disks
            if not d.os
        ],
        "seed": spec.seed,
        "pid": pid,
        "boot_seconds": None if boot_seconds is None else round(boot_seconds, 1),
        "kernel": _kernel_version(spec),
    }


def _kernel_version(spec: VmSpec) -> str | None:
    try:
        return VmImage(Path(spec.image)).info()["kernel"]
    except (OSError, ValueError, KeyError):
        return None


# --- state files -------------------------------------------------------------------------


class _Files:
    def __init__(self, lab: paths.LabPaths, name: str) -> None:
        self.base = lab.root / "vms"
        self.dir = self.base / name
        self.spec = self.dir / "vm.json"
        self.pidfile = self.dir / "qemu.pid"
        self.console = self.dir / "console.log"
        self.build = disk.Disk(self.dir / "osdisk")  # overlay used while making the OS disk
        self.lock = self.base / f".{name}.lock"


def saved_spec(lab: paths.LabPaths, name: str) -> VmSpec | None:
    try:
        return VmSpec.from_json(_Files(lab, name).spec.read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None


def vm_names(lab: paths.LabPaths) -> list[str]:
    base = _Files(lab, "x").base
    return sorted(d.name for d in base.iterdir() if d.is_dir()) if base.is_dir() else []


def list_vms(lab: paths.LabPaths) -> list[VmSpec]:
    found = (saved_spec(lab, name) for name in vm_names(lab))
    return [spec for spec in found if spec is not None]


def vm_running(lab: paths.LabPaths, name: str) -> bool:
    return running(_Files(lab, name).pidfile) is not None


def live_taps(lab: paths.LabPaths) -> set[str]:
    """Taps of this lab's running VMs (``lab up``'s stale-port cleanup keeps them)."""
    return {spec.tap for spec in list_vms(lab) if vm_running(lab, spec.name)}


# --- up -----------------------------------------------------------------------------------


def up(
    lab: paths.LabPaths,
    rack: RackSpec,
    *,
    name: str,
    ip: str,
    disks: list[DiskSpec],
    os_position: str = "random",
    memory: int = 2048,
    smp: int = 1,
    boot_timeout: float = BOOT_TIMEOUT,
    seed: str | None = None,
    nice: int = NICE,
) -> dict:
    """Boot VM ``name`` at ``ip`` on a fresh OS disk; wait for SSH; return :func:`describe`.

    Input errors raise VmSpecError before anything changes; a VM that fails to boot is torn
    down again and the LabError carries its console's last lines.
    """
    check_vm_name(name)
    check_disks(name, disks)
    try:
        hosts.check_free_standing(rack, name, ip)
    except LabError as exc:
        raise VmSpecError(str(exc)) from exc
    if memory < 256 or smp < 1:
        raise VmSpecError(f"--memory {memory} (MiB, at least 256) or --smp {smp} is too small")
    if not -20 <= nice <= 19:
        raise VmSpecError(f"--nice {nice} is not a nice value (-20 to 19)")
    position, used_seed = choose_os_position(
        os_position, len(disks), name=name, seed=seed if seed is not None else _env_seed()
    )
    hosts.require_root(f"starting VM {name}")
    for tool in (QEMU, "mkfs.ext4", "sfdisk"):
        _require_tool(tool)
    hosts.ensure_network(
        lab,
        bridge=rack.bridge,
        controller_ip=rack.controller_ip,
        proxy_port=rack.apt_proxy_port,
        prefixlen=rack.prefixlen,
    )
    built = ensure_vm_image()
    files = _Files(lab, name)
    files.base.mkdir(parents=True, exist_ok=True)
    spec = VmSpec(
        name=name,
        ip=ip,
        bridge=rack.bridge,
        prefixlen=rack.prefixlen,
        memory=memory,
        smp=smp,
        os_position=position,
        seed=used_seed,
        disks=tuple(disk_layout(name, files.dir, disks, position)),
        image=str(built.dir),
        nice=nice,
    )
    with file_lock(files.lock):
        if vm_running(lab, name):
            raise LabError(f"VM {name} is already running; `racksmith lab vm down {name}` first")
        _check_ip_free(lab, spec)
        _teardown(files, saved_spec(lab, name))  # whatever a crashed run left under this name
        files.dir.mkdir(parents=True)
        files.spec.write_text(spec.to_json())
        replay = f" (seed {used_seed}: {SEED_ENV}={used_seed} replays it)" if used_seed else ""
        print(
            f"[lab] VM {name}: OS disk at position {position} of {len(disks) + 1}{replay};"
            f" booting under TCG (console {files.console})",
            file=sys.stderr,
            flush=True,
        )
        try:
            return _boot(lab, rack, spec, built, files, boot_timeout)
        except BaseException:
            _teardown(files, spec)
            raise


def _env_seed() -> str | None:
    return os.environ.get(SEED_ENV) or None


def _require_tool(tool: str) -> None:
    if shutil.which(tool) is None:
        raise LabError(f"`{tool}` is not installed; run scripts/setup.sh (or `make setup`)")


def _check_ip_free(lab: paths.LabPaths, spec: VmSpec) -> None:
    for other in list_vms(lab):
        if other.name != spec.name and other.ip == spec.ip and vm_running(lab, other.name):
            raise LabError(f"{spec.ip} is already used by running VM {other.name}")
    for host in hosts.list_hosts(lab):
        if host.ip == spec.ip and hosts.host_running(lab, host.name):
            raise LabError(f"{spec.ip} is already used by running test host {host.name}")


def _boot(
    lab: paths.LabPaths,
    rack: RackSpec,
    spec: VmSpec,
    built: VmImage,
    files: _Files,
    boot_timeout: float,
) -> dict:
    root_label = built.info()["root_label"]
    proxy = aptcache.proxy_url(rack.controller_ip, rack.apt_proxy_port)
    for attached in spec.disks:
        if attached.os:
            _make_os_disk(lab, spec, built, files, Path(attached.file), proxy, root_label)
        else:
            _make_data_disk(attached)
    _make_tap(spec)
    cmdline = kernel_cmdline(
        ip=spec.ip, prefixlen=spec.prefixlen, hostname=spec.name, root_label=root_label
    )
    argv = qemu_argv(spec, kernel=built.kernel, initrd=built.initrd, cmdline=cmdline)
    if spec.nice:
        argv = ["nice", "-n", str(spec.nice), *argv]  # every qemu thread inherits it
    t0 = time.monotonic()
    record = start_daemon(argv, pidfile=files.pidfile, logfile=files.console)
    _set_autogroup_nice(record.pid, spec.nice)
    _wait_for_ssh(lab, spec, files, timeout=boot_timeout)
    return describe(spec, lab, pid=record.pid, boot_seconds=time.monotonic() - t0)


def _set_autogroup_nice(pid: int, nice: int) -> None:
    """qemu runs in a session of its own, which the kernel's autogroup scheduling (when on)
    makes a group weighed against every other session's as a whole, whatever the process's
    nice value: the group's own nice is set too. Nothing to do without autogroup."""
    if nice:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")


def _make_os_disk(
    lab: paths.LabPaths,
    spec: VmSpec,
    built: VmImage,
    files: _Files,
    target: Path,
    proxy: str,
    root_label: str,
) -> None:
    """A fresh ext4 OS disk: overlay of the image tree + this VM's files, copied in by
    ``mkfs.ext4 -d`` (seconds, sparse), then the overlay is dropped."""
    build = files.build
    build.dir.mkdir(parents=True)
    build.lower_file.write_text(f"{built.root}\n")  # disk.prepare mounts this tree as lower
    try:
        disk.prepare(build, fresh=False)
        host = hosts.HostSpec(name=spec.name, ip=spec.ip, bridge=spec.bridge, apt_proxy=proxy)
        hosts._personalise(build.root, host, lab.ssh_key, fresh=False)
        with open(target, "wb") as handle:
            handle.truncate(OS_DISK_SIZE)
        _run(["mkfs.ext4", "-q", "-F", "-L", root_label, "-d", str(build.root), str(target)])
    finally:
        disk.release(build)
        image.remove_tree(build.dir)


def _make_data_disk(attached: AttachedDisk) -> None:
    with open(attached.file, "wb") as handle:
        handle.truncate(attached.size)
    if attached.gpt:
        _run(["sfdisk", "--quiet", attached.file], stdin=b"label: gpt\n,\n")


def _make_tap(spec: VmSpec) -> None:
    if net.link_exists(spec.tap):
        raise LabError(
            f"interface {spec.tap} exists but no VM {spec.name} of this lab owns it (another"
            f" lab's VM of that name?); pick another name or `ip link del {spec.tap}`"
        )
    _run(["ip", "tuntap", "add", "dev", spec.tap, "mode", "tap"])
    _run(["ip", "link", "set", spec.tap, "master", spec.bridge])
    _run(["ip", "link", "set", spec.tap, "up"])


def _run(argv: list[str], *, stdin: bytes | None = None) -> None:
    done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise LabError(
            f"`{' '.join(argv)}` failed (rc {done.returncode}): "
            f"{done.stderr.decode(errors='replace').strip()}"
        )


def _wait_for_ssh(lab: paths.LabPaths, spec: VmSpec, files: _Files, *, timeout: float) -> None:
    hosts.wait_for_ssh(
        ssh_argv(lab.ssh_key, spec.ip, "true"),
        files.pidfile,
        timeout=timeout,
        attempt_timeout=60,
        pause=1,
        exited=lambda: (
            f"VM {spec.name}: qemu exited during boot; console {files.console}:\n{_console(files)}"
        ),
        timed_out=lambda: (
            f"VM {spec.name}: SSH as {SSH_USER} on {spec.ip} did not answer within"
            f" {timeout:.0f}s (TCG boots slowly on a busy machine: --boot-timeout);"
            f" console {files.console}:\n{_console(files)}"
        ),
    )


def _console(files: _Files) -> str:
    try:
        return console_tail(files.console.read_text(errors="replace"))
    except OSError:
        return f"(no console log at {files.console})"


# --- down ---------------------------------------------------------------------------------


def down(lab: paths.LabPaths, name: str) -> bool:
    """Power VM ``name`` off (ssh poweroff, then its recorded PID), delete its tap and disks.
    Fine when it does not exist. Returns True if it was running."""
    files = _Files(lab, name)
    if not files.dir.exists():
        return False
    hosts.require_root(f"stopping VM {name}")
    with file_lock(files.lock):
        spec = saved_spec(lab, name)
        record = running(files.pidfile)
        if record is not None and spec is not None:
            poweroff = ssh_argv(lab.ssh_key, spec.ip, "sudo", "systemctl", "poweroff")
            try:
                subprocess.run(poweroff, capture_output=True, check=False, timeout=30)
            except subprocess.TimeoutExpired:
                pass
            deadline = time.monotonic() + POWEROFF_WAIT
            while time.monotonic() < deadline and running(files.pidfile):
                time.sleep(0.5)
        _teardown(files, spec)
        return record is not None


def _teardown(files: _Files, spec: VmSpec | None) -> None:
    """Kill qemu by its record, delete the tap and everything under the VM's directory."""
    stop(files.pidfile, timeout=10)
    if spec is not None and _tap_master(spec.tap) in (spec.bridge, ""):
        _run(["ip", "link", "del", spec.tap])
    disk.release(files.build)
    image.remove_tree(files.dir)


def _tap_master(tap: str) -> str | None:
    """The bridge ``tap`` is attached to ("" when none), or None when it does not exist: a tap
    of the same name on another lab's bridge is that lab's VM and is left alone."""
    out = subprocess.run(["ip", "-j", "link", "show", "dev", tap], capture_output=True, text=True)
    try:
        return json.loads(out.stdout)[0].get("master", "") if out.returncode == 0 else None
    except (ValueError, IndexError, AttributeError):
        return None


def stop_all(lab: paths.LabPaths) -> list[str]:
    """Stop every VM of this lab (``racksmith lab down``); returns the names that ran."""
    return [name for name in vm_names(lab) if down(lab, name)]


# --- `racksmith lab vm ...` ---------------------------------------------------------------


def _cmd_up(args: argparse.Namespace) -> int:
    rack = load(paths.rack_file(args.rack))
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    disks = [parse_disk_spec(text) for text in args.disk]
    result = up(
        lab,
        rack,
        name=args.name,
        ip=args.ip,
        disks=disks,
        os_position=args.os_position,
        memory=args.memory,
        smp=args.smp,
        boot_timeout=args.boot_timeout,
        nice=args.nice,
    )
    if args.json:
        print(json.dumps(result))
        return 0
    seed = f" (seed {result['seed']}, {SEED_ENV} replays it)" if result["seed"] else ""
    print(
        f"{args.name} up at {args.ip} in {result['boot_seconds']}s, kernel {result['kernel']},"
        f" OS disk at position {result['os_position']}{seed}; console {result['console_log']}\n"
        f"ssh -i {result['identity_file']} {SSH_USER}@{args.ip}"
    )
    for entry in result["disks"]:
        print(f"  disk {entry['by_id']} {entry['size']} bytes{' gpt' if entry['gpt'] else ''}")
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    for name in args.names:
        print(f"{name}: {'stopped' if down(lab, name) else 'not running'}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    entries = []
    for spec in list_vms(lab):
        record = read_record(_Files(lab, spec.name).pidfile)
        live = record is not None and vm_running(lab, spec.name)
        entries.append({**describe(spec, lab, pid=record.pid if live else None, boot_seconds=None)})
    if args.json:
        print(json.dumps(entries))
        return 0
    for entry in entries:
        state = f"running (pid {entry['pid']})" if entry["pid"] else "stopped"
        print(f"{entry['name']:13} {entry['ip']:16} os@{entry['os_position']}  {state}")
    return 0


def _run_cli(func):
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except VmSpecError as exc:
            print(f"racksmith lab vm: {exc}", file=sys.stderr)
            return 2
        except (LabError, SpecError) as exc:
            print(f"racksmith lab vm: {exc}", file=sys.stderr)
            return 1

    return wrapper


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    common = argparse.ArgumentParser(add_help=False)
    paths.add_lab_arguments(common)
    sub = parser.add_subparsers(dest="vm_command", metavar="ACTION", required=True)
    upp = sub.add_parser("up", parents=[common], help="boot a qemu VM (TCG) on a fresh OS disk")
    upp.add_argument("name", help=f"VM name (at most {MAX_NAME} characters)")
    upp.add_argument("ip", help="address on the lab subnet; the VM block is .200-.219")
    upp.add_argument(
        "--disk",
        action="append",
        default=[],
        metavar="SERIAL:SIZE[:gpt]",
        help="a sparse data disk, /dev/disk/by-id/virtio-SERIAL in the guest; ':gpt' gives it"
        " a GPT with one partition (repeatable)",
    )
    upp.add_argument(
        "--os-position",
        default="random",
        metavar="N|random",
        help=f"the OS disk's place among the virtio disks, 0 = first (default: random, from"
        f" ${SEED_ENV} when set)",
    )
    upp.add_argument("--memory", type=int, default=2048, metavar="MIB")
    upp.add_argument("--smp", type=int, default=1, metavar="N")
    upp.add_argument("--boot-timeout", type=float, default=BOOT_TIMEOUT, metavar="S")
    upp.add_argument(
        "--nice",
        type=int,
        default=NICE,
        metavar="N",
        help=f"qemu's nice value, for it and its session's autogroup (default {NICE}: an"
        " emulated guest starved of CPU slows every step several times over; 0 leaves it)",
    )
    upp.add_argument("--json", action="store_true", help="print one JSON object describing it")
    upp.set_defaults(func=_run_cli(_cmd_up))
    dwn = sub.add_parser("down", parents=[common], help="power VMs off and delete their disks")
    dwn.add_argument("names", nargs="+", metavar="NAME")
    dwn.set_defaults(func=_run_cli(_cmd_down))
    lst = sub.add_parser("list", parents=[common], help="list this lab's VMs")
    lst.add_argument("--json", action="store_true")
    lst.set_defaults(func=_run_cli(_cmd_list))
