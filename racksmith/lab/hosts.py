"""Test hosts: real Debian systems (systemd as PID 1, sshd, sudo) in systemd-nspawn.

Each host boots from the cached image (racksmith.lab.image) with a disk of its own
(racksmith.lab.disk) in ``$LAB_DIR/machines/NAME``, in its own network namespace on the lab
bridge with no route off it, and in its own cgroup (racksmith.lab.cgroup). The MAAS simulator
boots a rack server's host when it deploys the machine (:func:`boot`); molecule scenarios
start free-standing hosts with ``racksmith lab host up NAME IP``.

The nspawn process runs under racksmith.lab.supervise (which restarts it after an in-host
reboot, exit 133); the wrapper's PID is recorded, and stopping a host signals exactly that
PID. There is no systemd on the controller, hence ``--register=no --keep-unit``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from racksmith.lab import aptcache, cloudinit, creds, disk, image, net, ntp, paths
from racksmith.lab.errors import LabError
from racksmith.lab.proc import file_lock, log_tail, read_record, running, start_daemon, stop
from racksmith.lab.spec import RackSpec, Server, load

SSH_OPTIONS = (
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=2",
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "IdentitiesOnly=yes",
    "-o", "LogLevel=ERROR",
)  # fmt: skip
BOOT_TIMEOUT = 90.0  # seconds until sshd must answer; generous for a loaded 2-core machine


@dataclass(frozen=True)
class HostSpec:
    """Everything needed to start and later find a host; saved as ``host.json``."""

    name: str
    ip: str
    bridge: str
    mac: str | None = None  # eth0's MAC: the server's PXE MAC for rack servers
    apt_proxy: str | None = None  # written as curtin would on a MAAS-deployed host
    hostname: str | None = None  # defaults to name
    prefixlen: int = 24  # the lab network's: 23 for a rack past 30 servers (racksmith.lab.spec)

    @property
    def netns(self) -> str:
        return net.netns_name(self.bridge, self.name)

    @property
    def veth(self) -> str:
        return net.veth_name(self.bridge, self.ip, self.prefixlen)

    @property
    def machine(self) -> str:
        """nspawn's machine name keys /run/systemd/nspawn/propagate/NAME: unique per lab."""
        return f"{self.bridge}-{self.name}"


def rack_host(rack: RackSpec, server: Server) -> HostSpec:
    return HostSpec(
        name=server.name,
        ip=server.ip,
        bridge=rack.bridge,
        mac=server.pxe_mac,
        apt_proxy=aptcache.proxy_url(rack.controller_ip, rack.apt_proxy_port),
        prefixlen=rack.prefixlen,
    )


def nspawn_argv(host: HostSpec, root: Path) -> list[str]:
    return [
        "systemd-nspawn",
        "--boot",
        "--register=no",  # no machined: there is no system bus on the controller
        "--keep-unit",  # no scope unit: there is no systemd on the controller
        f"--directory={root}",
        f"--machine={host.machine}",
        f"--hostname={host.hostname or host.name}",
        f"--network-namespace-path=/run/netns/{host.netns}",
        "--console=passive",
        "--resolv-conf=off",  # keep `nameserver 127.0.0.1`: no resolver off the bridge
        "--link-journal=no",
    ]


def nspawn_env(base: Mapping[str, str]) -> dict[str, str]:
    """nspawn mounts /proc/sys read-only; with a namespace of our own (not one nspawn made)
    it would also lock /proc/sys/net. The host owns its network namespace, so let it set
    net.* sysctls as a real host would; kernel-wide ones stay read-only."""
    return {**base, "SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network"}


def supervised_argv(host: HostSpec, root: Path, child_pidfile: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "racksmith.lab.supervise",
        "--child-pidfile",
        str(child_pidfile),
        "--cgroup",
        host.machine,
        "--",
        *nspawn_argv(host, root),
    ]


def ssh_argv(key: Path, ip: str, *command: str, user: str = "ubuntu") -> list[str]:
    return ["ssh", "-i", str(key), *SSH_OPTIONS, f"{user}@{ip}", *command]


def etc_hosts(hostname: str) -> str:
    """sudo resolves its own host name; there is no DNS, so it must be in /etc/hosts."""
    return f"127.0.0.1 localhost\n127.0.1.1 {hostname}\n::1 localhost ip6-localhost ip6-loopback\n"


# --- state files -------------------------------------------------------------------------


class _Files:
    def __init__(self, lab: paths.LabPaths, name: str) -> None:
        self.dir = lab.machine(name)
        self.disk = disk.Disk(self.dir)
        self.root = self.disk.root
        self.spec = self.dir / "host.json"
        self.pidfile = self.dir / "supervisor.pid"
        self.child_pidfile = self.dir / "nspawn.pid"
        self.log = self.dir / "console.log"
        self.lock = lab.machines / f".{name}.lock"


def saved_spec(lab: paths.LabPaths, name: str) -> HostSpec | None:
    try:
        return HostSpec(**json.loads(_Files(lab, name).spec.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def list_hosts(lab: paths.LabPaths) -> list[HostSpec]:
    if not lab.machines.is_dir():
        return []
    found = (saved_spec(lab, d.name) for d in sorted(lab.machines.iterdir()) if d.is_dir())
    return [h for h in found if h is not None]


def leftovers(lab: paths.LabPaths, host: HostSpec) -> bool:
    """Whether a host that is not running still holds anything: an orphaned nspawn (its
    wrapper was killed), its namespace or its veth."""
    return (
        running(_Files(lab, host.name).child_pidfile) is not None
        or net.netns_exists(host.netns)
        or net.link_exists(host.veth)
    )


def host_running(lab: paths.LabPaths, name: str) -> bool:
    return running(_Files(lab, name).pidfile) is not None


# --- lab plumbing the hosts need -----------------------------------------------------------


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise LabError(f"{what} needs root (network namespaces, bridge, systemd-nspawn)")


def ensure_network(
    lab: paths.LabPaths,
    *,
    bridge: str,
    controller_ip: str,
    proxy_port: int,
    prefixlen: int = 24,
) -> None:
    """Bridge, apt cache, NTP server and SSH key: what a host needs before it boots."""
    require_root("the lab network")
    with file_lock(lab.lock):
        net.ensure_bridge(bridge, controller_ip, prefixlen)
        aptcache.ensure_running(lab, bind=controller_ip, port=proxy_port)
        ntp.ensure_running(lab, bind=controller_ip)
        creds.ensure_ssh_key(lab)


# --- boot / shutdown -----------------------------------------------------------------------


def start_host(
    lab: paths.LabPaths,
    host: HostSpec,
    *,
    user_data: bytes | None = None,
    timeout: float = BOOT_TIMEOUT,
) -> None:
    """Boot ``host`` unless it runs already; wait until SSH answers as ``ubuntu``.

    A present disk (a host powered off without wiping) is booted as it is, like a machine's
    disk; user data means a fresh deploy, so the disk starts from the image again. On any
    failure the host is stopped again and the error carries its console log.
    """
    require_root(f"starting test host {host.name}")
    net.check_host_name(host.name)
    parsed = cloudinit.parse(user_data)  # bad user data fails before anything changes
    if parsed.hostname:
        host = HostSpec(**{**asdict(host), "hostname": parsed.hostname})
    files = _Files(lab, host.name)
    files.dir.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(files.lock):
        if running(files.pidfile):
            return
        _check_ip_free(lab, host)
        fresh = user_data is not None or not files.disk.present()
        files.dir.mkdir(parents=True, exist_ok=True)
        disk.prepare(files.disk, fresh=fresh)
        _personalise(files.root, host, creds.ensure_ssh_key(lab), fresh=fresh)
        cloudinit.apply(parsed, files.root)
        files.spec.write_text(json.dumps(asdict(host), indent=2) + "\n")
        net.create_host_net(
            bridge=host.bridge,
            netns=host.netns,
            veth=host.veth,
            address=f"{host.ip}/{host.prefixlen}",
            mac=host.mac,
        )
        files.log.unlink(missing_ok=True)
        record = start_daemon(
            supervised_argv(host, files.root, files.child_pidfile),
            pidfile=files.pidfile,
            logfile=files.log,
            env=nspawn_env(os.environ),
        )
        try:
            _wait_for_ssh(lab, host, files, record_pid=record.pid, timeout=timeout)
            _check_first_boot(lab, host)
        except LabError:
            _stop_locked(files, host, wipe=False)
            raise


def _check_ip_free(lab: paths.LabPaths, host: HostSpec) -> None:
    for other in list_hosts(lab):
        if other.name != host.name and other.ip == host.ip and host_running(lab, other.name):
            raise LabError(f"{host.ip} is already used by running test host {other.name}")


def _personalise(root: Path, host: HostSpec, key: Path, *, fresh: bool) -> None:
    """Per-host files that must never be in the shared image (see racksmith.lab.image)."""
    hostname = host.hostname or host.name
    (root / "etc/hostname").write_text(hostname + "\n")
    (root / "etc/hosts").write_text(etc_hosts(hostname))
    if fresh:
        (root / "etc/machine-id").write_text(uuid.uuid4().hex + "\n")
    _host_keys(root)
    pub = key.with_suffix(".pub").read_text()
    for home, owner in ((root / "root", 0), (root / "home/ubuntu", 1000)):
        ssh_dir = home / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        authorized = ssh_dir / "authorized_keys"
        authorized.write_text(pub)
        authorized.chmod(0o600)
        os.chown(ssh_dir, owner, owner)
        os.chown(authorized, owner, owner)
    proxy_file = root / cloudinit.APT_PROXY_FILE
    if host.apt_proxy:
        cloudinit.write_apt_proxy(root, host.apt_proxy)
    else:
        proxy_file.unlink(missing_ok=True)


#: ed25519 and ECDSA only: generating an RSA host key costs ~2 s of CPU per host, most of a
#: boot, and every client racksmith uses prefers ed25519.
HOST_KEY_TYPES = ("ed25519", "ecdsa")


def _host_keys(root: Path) -> None:
    """Distinct SSH host keys per host (the image ships none); kept across power cycles."""
    ssh_dir = root / "etc/ssh"
    for kind in HOST_KEY_TYPES:
        key = ssh_dir / f"ssh_host_{kind}_key"
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", f"root@{root.parent.name}",
                 "-f", str(key)],
                capture_output=True, check=True,
            )  # fmt: skip
    conf = ssh_dir / "sshd_config.d" / "racksmith-lab-hostkeys.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("".join(f"HostKey /etc/ssh/ssh_host_{k}_key\n" for k in HOST_KEY_TYPES))


def wait_for_ssh(
    argv: list[str],
    pidfile: Path,
    *,
    timeout: float,
    attempt_timeout: float,
    pause: float,
    exited: Callable[[], str],
    timed_out: Callable[[], str],
) -> None:
    """Run ``argv`` (an ``ssh ... true``) until it succeeds, for test hosts and VMs alike.

    Fails at once when the recorded process in ``pidfile`` is gone (``exited()`` says why,
    with the console tail read then), else after ``timeout`` (``timed_out()``).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running(pidfile) is None:
            raise LabError(exited())
        try:
            done = subprocess.run(argv, capture_output=True, check=False, timeout=attempt_timeout)
        except subprocess.TimeoutExpired:
            continue  # sshd accepted but stalled (still booting): try again
        if done.returncode == 0:
            return
        time.sleep(pause)
    raise LabError(timed_out())


def _wait_for_ssh(
    lab: paths.LabPaths, host: HostSpec, files: _Files, *, record_pid: int, timeout: float
) -> None:
    wait_for_ssh(
        ssh_argv(lab.ssh_key, host.ip, "true"),
        files.pidfile,
        timeout=timeout,
        attempt_timeout=30,
        pause=0.25,
        exited=lambda: (
            f"test host {host.name}: systemd-nspawn (pid {record_pid}) exited during boot;"
            f" console log {files.log}:\n{log_tail(files.log)}"
        ),
        timed_out=lambda: (
            f"test host {host.name}: SSH on {host.ip} did not answer within {timeout:.0f}s;"
            f" console log {files.log}:\n{log_tail(files.log)}"
        ),
    )


def _check_first_boot(lab: paths.LabPaths, host: HostSpec) -> None:
    """The first-boot unit runs before sshd: a missing marker means user data failed."""
    marker = f"/{cloudinit.DONE_MARKER}"
    check = ssh_argv(lab.ssh_key, host.ip, "test", "-e", marker)
    if subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return
    out = subprocess.run(
        ssh_argv(lab.ssh_key, host.ip, "sudo", "tail", "-n", "30", f"/{cloudinit.OUTPUT_LOG}"),
        capture_output=True,
        check=False,
    ).stdout.decode(errors="replace")
    raise LabError(
        f"test host {host.name}: user-data runcmd failed; /{cloudinit.OUTPUT_LOG}:\n{out}"
    )


def stop_host(lab: paths.LabPaths, name: str, *, wipe: bool = True) -> bool:
    """Power the host off (clean poweroff, then forced), remove its network, and its disk
    when ``wipe``. Succeeds when the host does not exist. Returns True if it was running."""
    require_root(f"stopping test host {name}")
    files = _Files(lab, name)
    if not files.dir.exists():
        return False
    with file_lock(files.lock):
        host = saved_spec(lab, name)
        return _stop_locked(files, host, wipe=wipe)


def _stop_locked(files: _Files, host: HostSpec | None, *, wipe: bool) -> bool:
    was_running = stop(files.pidfile, timeout=30)
    # Normally gone with its wrapper; still alive only if the wrapper was killed (SIGKILL,
    # OOM): then it is an orphan holding the host's root and namespace.
    was_running = stop(files.child_pidfile, timeout=15) or was_running
    if host is not None:
        net.delete_host_net(netns=host.netns, veth=host.veth)
    disk.release(files.disk)
    if wipe:
        image.remove_tree(files.dir)  # unmounts anything left under it first
    return was_running


# --- the API the MAAS simulator uses (docs/lab.md) -------------------------------------------


def boot(
    rack: RackSpec, server: Server, *, user_data: bytes | None = None, lab_dir: Path | None = None
) -> None:
    """Boot rack server ``server``'s test host (eth0 MAC = its PXE MAC); wait for SSH."""
    lab = paths.LabPaths(paths.lab_dir(lab_dir))
    ensure_network(
        lab,
        bridge=rack.bridge,
        controller_ip=rack.controller_ip,
        proxy_port=rack.apt_proxy_port,
        prefixlen=rack.prefixlen,
    )
    start_host(lab, rack_host(rack, server), user_data=user_data)


def shutdown(
    rack: RackSpec, server: Server, *, lab_dir: Path | None = None, wipe: bool = True
) -> None:
    stop_host(paths.LabPaths(paths.lab_dir(lab_dir)), server.name, wipe=wipe)


def is_running(rack: RackSpec, server: Server, *, lab_dir: Path | None = None) -> bool:
    return host_running(paths.LabPaths(paths.lab_dir(lab_dir)), server.name)


# --- `racksmith lab host ...` ------------------------------------------------------------


def check_free_standing(rack: RackSpec, name: str, ip: str) -> None:
    """A molecule host lives on the rack's bridge but must not pose as a rack server."""
    try:
        address = ipaddress.IPv4Address(ip)
    except ValueError as exc:
        raise LabError(f"{ip!r} is not an IPv4 address") from exc
    subnet = rack.network
    last = int(str(address).rsplit(".", 1)[1])
    if address not in subnet or last in (0, 255) or str(address) == rack.controller_ip:
        raise LabError(f"{ip} is not a host address on the lab subnet {subnet} ({rack.path})")
    for server in rack.servers:
        if server.name == name or server.ip == ip:
            raise LabError(
                f"{name} {ip} clashes with rack server {server.name} ({server.ip}) in {rack.path};"
                " molecule hosts use .50-.199"
            )


def _cmd_up(args: argparse.Namespace) -> int:
    rack = load(paths.rack_file(args.rack))
    check_free_standing(rack, args.name, args.ip)
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    ensure_network(
        lab,
        bridge=rack.bridge,
        controller_ip=rack.controller_ip,
        proxy_port=rack.apt_proxy_port,
        prefixlen=rack.prefixlen,
    )
    proxy = (
        None if args.no_apt_proxy else aptcache.proxy_url(rack.controller_ip, rack.apt_proxy_port)
    )
    host = HostSpec(
        name=args.name, ip=args.ip, bridge=rack.bridge, apt_proxy=proxy, prefixlen=rack.prefixlen
    )
    user_data = args.user_data.read_bytes() if args.user_data else None
    t0 = time.monotonic()
    start_host(lab, host, user_data=user_data)
    took = time.monotonic() - t0
    print(f"{args.name} up at {args.ip} in {took:.1f}s (ssh -i {lab.ssh_key} ubuntu@{args.ip})")
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    for name in args.names:
        was = stop_host(lab, name, wipe=not args.keep_root)
        print(f"{name}: {'stopped' if was else 'not running'}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    lab = paths.LabPaths(paths.lab_dir(args.lab_dir))
    for host in list_hosts(lab):
        record = read_record(_Files(lab, host.name).pidfile)
        state = (
            f"running (pid {record.pid})" if host_running(lab, host.name) and record else "stopped"
        )
        print(f"{host.name:14} {host.ip:16} {host.mac or '-':18} {state}")
    return 0


def _run(func):
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except LabError as exc:
            print(f"racksmith lab host: {exc}", file=sys.stderr)
            return 1

    return wrapper


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    common = argparse.ArgumentParser(add_help=False)
    paths.add_lab_arguments(common)
    sub = parser.add_subparsers(dest="host_command", metavar="ACTION", required=True)
    up = sub.add_parser("up", parents=[common], help="boot a free-standing test host (molecule)")
    up.add_argument("name")
    up.add_argument("ip", help="address on the rack subnet; molecule blocks are .50-.199")
    up.add_argument(
        "--no-apt-proxy",
        action="store_true",
        help="boot without the apt proxy line (for testing a role that configures it)",
    )
    up.add_argument("--user-data", type=Path, help="cloud-config or script to apply on first boot")
    up.set_defaults(func=_run(_cmd_up))
    down = sub.add_parser("down", parents=[common], help="stop test hosts (fine if absent)")
    down.add_argument("names", nargs="+", metavar="NAME")
    down.add_argument("--keep-root", action="store_true", help="keep the host's disk")
    down.set_defaults(func=_run(_cmd_down))
    lst = sub.add_parser("list", parents=[common], help="list this lab's test hosts")
    lst.set_defaults(func=_run(_cmd_list))
