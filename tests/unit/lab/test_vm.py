"""The VM lane's pure parts: disk specs, the OS disk's position, names, the qemu command line,
and the CLI's exit codes for bad input (no root, no qemu needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.lab import vm

REPO = Path(__file__).resolve().parents[3]


# --- disk specs --------------------------------------------------------------------------


def test_disk_spec_sizes_are_binary_and_gpt_is_optional():
    assert vm.parse_disk_spec("rs-d1:1G") == vm.DiskSpec("rs-d1", 1 << 30, False)
    assert vm.parse_disk_spec("old:512M:gpt") == vm.DiskSpec("old", 512 << 20, True)
    assert vm.parse_disk_spec("x:2048k").size == 2 << 20
    assert vm.parse_disk_spec("x:1048576").size == 1 << 20
    assert vm.parse_disk_spec("rs-d1:1G").by_id == "/dev/disk/by-id/virtio-rs-d1"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("rs-d1", "not SERIAL:SIZE"),
        ("rs-d1:1G:mbr", "not SERIAL:SIZE"),
        ("rs-d1:1G:gpt:x", "not SERIAL:SIZE"),
        (":1G", "serial ''"),
        ("bad/serial:1G", "serial 'bad/serial'"),
        ("a" * 21 + ":1G", "1-20 characters"),
        ("d:1.5G", "not a number"),
        ("d:lots", "not a number"),
        ("d:1K", "outside 1M..2T"),
        ("d:3T", "outside 1M..2T"),
    ],
)
def test_bad_disk_specs_are_named(text, fragment):
    with pytest.raises(vm.VmSpecError) as err:
        vm.parse_disk_spec(text)
    assert fragment in str(err.value)
    assert repr(text) in str(err.value)


def test_duplicate_serials_and_the_os_serial_are_refused():
    disks = [vm.parse_disk_spec("a:1G"), vm.parse_disk_spec("a:2G")]
    with pytest.raises(vm.VmSpecError, match="'a' is used twice"):
        vm.check_disks("vm1", disks)
    with pytest.raises(vm.VmSpecError, match="rsvm-os-vm1"):
        vm.check_disks("vm1", [vm.parse_disk_spec("rsvm-os-vm1:1G")])
    vm.check_disks("vm1", [vm.parse_disk_spec("a:1G"), vm.parse_disk_spec("b:1G")])


def test_vm_names_fit_the_tap_and_a_hostname():
    assert vm.check_vm_name("zfs-vm1") == "zfs-vm1"
    assert vm.tap_name("abcdefghijkl") == "tv-abcdefghijkl"
    assert len(vm.tap_name("abcdefghijkl")) == 15
    with pytest.raises(vm.VmSpecError, match="longer than 12"):
        vm.check_vm_name("abcdefghijklm")
    with pytest.raises(vm.VmSpecError, match="not a valid hostname"):
        vm.check_vm_name("Bad_Name")


# --- OS disk position ----------------------------------------------------------------------


def test_explicit_position_is_kept_and_checked():
    assert vm.choose_os_position("0", 3, name="v", seed="7") == (0, None)
    assert vm.choose_os_position("3", 3, name="v", seed=None) == (3, None)
    with pytest.raises(vm.VmSpecError, match=r"outside 0\.\.3"):
        vm.choose_os_position("4", 3, name="v", seed=None)
    with pytest.raises(vm.VmSpecError, match="not a number or 'random'"):
        vm.choose_os_position("last", 3, name="v", seed=None)


def test_random_position_replays_from_the_seed_and_covers_every_slot():
    first = vm.choose_os_position("random", 5, name="v", seed="1234")
    assert first == vm.choose_os_position("random", 5, name="v", seed="1234")
    assert first[1] == "1234"
    positions = {vm.choose_os_position("random", 5, name="v", seed=str(s))[0] for s in range(200)}
    assert positions == set(range(6))


def test_random_position_without_a_seed_reports_the_one_it_drew():
    position, seed = vm.choose_os_position("random", 4, name="v", seed=None)
    assert seed is not None and seed.isdigit()
    assert vm.choose_os_position("random", 4, name="v", seed=seed) == (position, seed)


def test_no_data_disks_means_position_zero():
    assert vm.choose_os_position("random", 0, name="v", seed="9")[0] == 0


# --- qemu command line ----------------------------------------------------------------------


def _spec(tmp_path: Path, position: int = 1) -> vm.VmSpec:
    data = [vm.parse_disk_spec("rs-d1:1G"), vm.parse_disk_spec("rs-old:2G:gpt")]
    return vm.VmSpec(
        name="vm1",
        ip="192.168.243.200",
        bridge="rslab7",
        prefixlen=24,
        memory=2048,
        smp=1,
        os_position=position,
        seed="42",
        disks=tuple(vm.disk_layout("vm1", tmp_path, data, position)),
        image=str(tmp_path / "img"),
    )


def test_disk_layout_puts_the_os_disk_at_its_position(tmp_path):
    for position in range(3):
        serials = [d.serial for d in _spec(tmp_path, position).disks]
        others = [s for s in serials if s != "rsvm-os-vm1"]
        assert serials.index("rsvm-os-vm1") == position
        assert others == ["rs-d1", "rs-old"]


def test_qemu_argv_attaches_disks_in_order_with_serials_and_slots(tmp_path):
    spec = _spec(tmp_path, position=2)
    argv = vm.qemu_argv(spec, kernel=Path("/k"), initrd=Path("/i"), cmdline="CMD")
    assert argv[0] == "qemu-system-x86_64"
    assert "-no-reboot" not in argv
    assert "-enable-kvm" not in argv and "-accel" not in argv
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert devices == [
        "virtio-blk-pci,drive=d0,serial=rs-d1,addr=0x10",
        "virtio-blk-pci,drive=d1,serial=rs-old,addr=0x11",
        "virtio-blk-pci,drive=d2,serial=rsvm-os-vm1,addr=0x12",
    ]
    drives = [argv[i + 1] for i, a in enumerate(argv) if a == "-drive"]
    assert drives[2] == f"file={tmp_path}/os.img,format=raw,if=none,id=d2"
    assert drives[1] == f"file={tmp_path}/disk-rs-old.img,format=raw,if=none,id=d1"
    assert argv[argv.index("-append") + 1] == "CMD"
    assert argv[argv.index("-kernel") + 1] == "/k"
    nic = argv[argv.index("-nic") + 1]
    assert nic.startswith("tap,ifname=tv-vm1,script=no,downscript=no,model=virtio-net-pci,mac=")
    assert "user" not in nic  # never SLIRP: it reaches whatever the controller reaches


def test_kernel_cmdline_boots_by_label_with_a_static_address_and_no_gateway():
    line = vm.kernel_cmdline(
        ip="192.168.243.200", prefixlen=23, hostname="vm1", root_label="rsvm-root"
    )
    words = line.split()
    assert "root=LABEL=rsvm-root" in words and "rw" in words
    assert "console=ttyS0" in words and "net.ifnames=0" in words
    assert "ip=192.168.243.200:::255.255.254.0:vm1:eth0:off" in words
    assert "systemd.hostname=vm1" in words
    assert not any(w.startswith("root=/dev/") for w in words)


def test_mac_is_stable_per_lab_and_vm():
    mac = vm.vm_mac("rslab7", "vm1")
    assert mac == vm.vm_mac("rslab7", "vm1")
    assert mac.startswith("52:54:00:") and len(mac) == 17
    assert mac != vm.vm_mac("rslab0", "vm1") and mac != vm.vm_mac("rslab7", "vm2")


def test_spec_round_trips_through_json_and_describe_shape(tmp_path):
    from racksmith.lab.paths import LabPaths

    spec = _spec(tmp_path)
    assert vm.VmSpec.from_json(spec.to_json()) == spec
    described = vm.describe(spec, LabPaths(tmp_path / "lab"), pid=123, boot_seconds=21.04)
    assert described["os_position"] == 1 and described["seed"] == "42"
    assert described["identity_file"] == str(tmp_path / "lab/keys/id_ed25519")
    assert described["console_log"] == str(tmp_path / "lab/vms/vm1/console.log")
    assert described["disks"] == [
        {
            "serial": "rs-d1",
            "by_id": "/dev/disk/by-id/virtio-rs-d1",
            "size": 1 << 30,
            "gpt": False,
            "file": f"{tmp_path}/disk-rs-d1.img",
        },
        {
            "serial": "rs-old",
            "by_id": "/dev/disk/by-id/virtio-rs-old",
            "size": 2 << 30,
            "gpt": True,
            "file": f"{tmp_path}/disk-rs-old.img",
        },
    ]
    assert described["boot_seconds"] == 21.0 and described["user"] == "ubuntu"
    json.dumps(described)


# --- CLI: bad input exits 2 before anything is touched ---------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["vm1", "192.168.250.201", "--disk", "nope"], "not SERIAL:SIZE"),
        (["vm1", "10.0.0.5"], "not a host address on the lab subnet"),
        (["averyverylongname", "192.168.250.201"], "longer than 12"),
        (["vm1", "192.168.250.201", "--disk", "a:1G", "--os-position", "5"], "outside 0..1"),
    ],
)
def test_cli_bad_input_exits_2(args, fragment, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", "lab", "vm", "up", *args,
         "--lab-dir", str(tmp_path / "lab")],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert fragment in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "lab").exists()


def test_ssh_to_a_vm_waits_longer_for_the_banner_than_to_a_host():
    argv = vm.ssh_argv(Path("/lab/keys/id_ed25519"), "192.168.243.200", "true")
    timeouts = [a for a in argv if a.startswith("ConnectTimeout=")]
    assert timeouts[0] == f"ConnectTimeout={vm.SSH_CONNECT_TIMEOUT}"  # ssh keeps the first
    assert argv[-2:] == ["ubuntu@192.168.243.200", "true"]


def test_console_tail_drops_colour_codes_and_collapses_the_spinner():
    frames = "".join(
        f"\x1bM\r\x1b[K[\x1b[0;31m*{' ' * (i % 3)}\x1b[0m] Job apparmor.service/start running"
        f" (6min {20 + i}s / no limit)\r\n"
        for i in range(40)
    )
    text = "[  OK  ] Reached target \x1b[0;1;39mbasic.target\x1b[0m.\r\n" + frames + "vm1 login: "
    tail = vm.console_tail(text).splitlines()
    assert tail == [
        "[  OK  ] Reached target basic.target.",
        "[*] Job apparmor.service/start running (6min 59s / no limit)",
        "vm1 login:",
    ]


def test_kernel_cmdline_boots_without_apparmor():
    line = vm.kernel_cmdline(ip="10.0.0.2", prefixlen=24, hostname="v", root_label="L")
    assert "apparmor=0" in line.split()
