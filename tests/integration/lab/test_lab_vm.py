"""The VM lane for real: a qemu (TCG) guest from the cached VM image on a lab of its own
(bridge rslab7, 192.168.243.0/24, /var/lib/racksmith/lab-vmtest), so it never meets the demo
lab (rslab0) or the other lab tests (rslab1). One VM at a time: it pins a vCPU.

Boots a VM with two data disks (one with a GPT) and the OS disk at position 2, then checks
over SSH what the roles of the VM lane rely on: disks by serial, the OS disk not at /dev/vda,
the image's kernel, ZFS loading, the NVIDIA DKMS module present; then that `vm down` and
`racksmith lab down` leave no qemu and no tap behind. A guest reboot coming back is shown by
the molecule VM scenario (the driver's reboot, the boot id changed), not again here.

Every SSH round trip costs seconds against the emulated guest, so the guest is read once, by
one script whose sections (``## name``) the tests assert on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from racksmith.lab import hosts, net, paths, proc, spec, vm, vmimage
from racksmith.lab.rack import down
from racksmith.testing.rack import write_rack

pytestmark = pytest.mark.lab

LAB_DIR = Path("/var/lib/racksmith/lab-vmtest")
NAME = "vmt1"
IP = "192.168.243.200"
OS_POSITION = 2  # after both data disks: the OS disk is /dev/vdc
REPO = Path(__file__).resolve().parents[3]


def racksmith(*args: str, env: dict) -> subprocess.CompletedProcess:
    """The CLI as molecule's create/destroy playbooks call it (a separate process)."""
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", *args], capture_output=True, text=True, env=env,
        cwd=REPO, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(f"racksmith {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def on_vm(command: str, check: bool = True) -> str:
    """A command on the VM as ``ubuntu`` over SSH with the lab key, as Ansible connects."""
    argv = vm.ssh_argv(paths.LabPaths(LAB_DIR).ssh_key, IP, command)
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if check and done.returncode != 0:
        pytest.fail(f"ssh {IP} {command!r} failed ({done.returncode}): {done.stderr}")
    return done.stdout.strip()


@pytest.fixture(scope="module")
def vm_rack(tmp_path_factory) -> spec.RackSpec:
    if os.geteuid() != 0:
        pytest.fail("the VM lane test needs root (bridge, tap, chroot, qemu)")
    rack = write_rack(
        tmp_path_factory.mktemp("vmrack"),
        bridge="rslab7", prefix="192.168.243", bmc_base_port=18743,
        maas_listen="127.0.0.1:15243",
    )  # fmt: skip
    down(rack, paths.LabPaths(LAB_DIR))  # whatever a crashed earlier run left behind
    yield rack
    down(rack, paths.LabPaths(LAB_DIR))


@pytest.fixture(scope="module")
def vm_env(vm_rack) -> dict:
    return {**os.environ, "RACKSMITH_LAB_DIR": str(LAB_DIR), "RACKSMITH_RACK": str(vm_rack.path)}


@pytest.fixture(scope="module")
def image_info() -> dict:
    t0 = time.monotonic()
    built = vmimage.ensure_vm_image()
    print(f"VM image {built.dir} ready after {time.monotonic() - t0:.0f}s")
    return built.info()


@pytest.fixture(scope="module")
def booted(vm_env, image_info) -> dict:
    done = racksmith(
        "lab", "vm", "up", NAME, IP, "--disk", "rs-a:1G", "--disk", "rs-b:512M:gpt",
        "--os-position", str(OS_POSITION), "--boot-timeout", "600", "--json", env=vm_env,
    )  # fmt: skip
    result = json.loads(done.stdout)
    print(f"{NAME} booted in {result['boot_seconds']}s (pid {result['pid']})")
    return result


def test_up_reports_the_vm_as_json(booted, image_info):
    assert booted["name"] == NAME and booted["ip"] == IP and booted["user"] == "ubuntu"
    assert booted["identity_file"] == str(LAB_DIR / "keys/id_ed25519")
    assert booted["os_position"] == OS_POSITION and booted["seed"] is None
    assert booted["kernel"] == image_info["kernel"]
    assert [(d["serial"], d["gpt"]) for d in booted["disks"]] == [("rs-a", False), ("rs-b", True)]
    assert Path(booted["console_log"]).read_text(errors="replace").strip()
    record = proc.read_record(LAB_DIR / "vms" / NAME / "qemu.pid")
    assert record is not None and record.pid == booted["pid"] and proc.alive(record)


#: What the tests read from the guest, in one SSH session (sections ``## name``).
GUEST_SCRIPT = f"""
echo '## by-id'; sudo udevadm settle; ls /dev/disk/by-id/
echo '## pttype-b'; lsblk -dno PTTYPE /dev/disk/by-id/virtio-rs-b
echo '## pttype-a'; lsblk -dno PTTYPE /dev/disk/by-id/virtio-rs-a
echo '## size-b'; lsblk -bdno SIZE /dev/disk/by-id/virtio-rs-b
echo '## root'; findmnt -n -o SOURCE /
echo '## os-disk'; readlink -f /dev/disk/by-id/virtio-rsvm-os-{NAME}
echo '## disk-a'; readlink -f /dev/disk/by-id/virtio-rs-a
echo '## uname'; uname -r
echo '## hostname'; hostname
echo '## state'; systemctl is-system-running --wait
echo '## address'; ip -4 -o addr show dev eth0
echo '## route'; ip route show default
echo '## proxy'; cat /etc/apt/apt.conf.d/90curtin-aptproxy
echo '## resolv'; cat /etc/resolv.conf
echo '## machine-id'; cat /etc/machine-id
echo '## modprobe'; sudo modprobe zfs && echo loaded
echo '## lsmod'; lsmod
echo '## dkms'; sudo dkms status
"""


def sections(text: str) -> dict[str, str]:
    """``## name`` headed blocks of the guest script's output, each stripped."""
    found: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            found[name] = ""
        elif name is not None:
            found[name] += line + "\n"
    return {k: v.strip() for k, v in found.items()}


@pytest.fixture(scope="module")
def guest(booted) -> dict[str, str]:
    read = sections(on_vm(GUEST_SCRIPT, check=False))
    missing = [n for n in ("by-id", "dkms") if n not in read]
    if missing:
        pytest.fail(f"the guest script did not get to {missing}: {read}")
    return read


def test_data_disks_appear_by_serial_and_the_gpt_one_is_partitioned(guest):
    listing = guest["by-id"].split()
    assert {"virtio-rs-a", "virtio-rs-b", "virtio-rs-b-part1", f"virtio-rsvm-os-{NAME}"} <= set(
        listing
    )
    assert "virtio-rs-a-part1" not in listing
    assert guest["pttype-b"] == "gpt"
    assert guest["pttype-a"] == ""
    assert guest["size-b"] == str(512 << 20)


def test_the_os_disk_is_where_the_position_says_not_vda(guest):
    root = guest["root"]
    assert root == "/dev/vdc"  # position 2 among three virtio disks
    assert guest["os-disk"] == root
    assert guest["disk-a"] == "/dev/vda"


def test_the_guest_runs_the_image_kernel_with_its_identity(guest, image_info):
    assert guest["uname"] == image_info["kernel"]
    assert guest["hostname"] == NAME
    assert guest["state"] in ("running", "degraded")
    assert f"inet {IP}/24" in guest["address"]
    assert guest["route"] == ""  # nothing routes off the bridge
    assert "http://192.168.243.1:3142" in guest["proxy"]
    assert guest["resolv"] == "nameserver 127.0.0.1"
    assert guest["machine-id"] != ""


def test_zfs_loads_and_the_nvidia_dkms_module_is_there(guest, image_info):
    assert guest["modprobe"] == "loaded"
    assert "zfs" in guest["lsmod"].split()
    kernel = image_info["kernel"]
    status = guest["dkms"]
    assert "zfs/" in status and f"{kernel}, x86_64: installed" in status
    found = on_vm(
        f"/sbin/modinfo -k {kernel} -F filename nvidia-tesla-535 nvidia-tesla-535-peermem"
    ).splitlines()
    assert found[0].startswith(f"/lib/modules/{kernel}/updates/dkms/nvidia-tesla-535.ko")
    assert "nvidia-tesla-535-peermem.ko" in found[1]


def test_vm_list_shows_it_running(booted, vm_env):
    listed = json.loads(racksmith("lab", "vm", "list", "--json", env=vm_env).stdout)
    assert [(v["name"], v["pid"]) for v in listed] == [(NAME, booted["pid"])]


def test_vm_down_leaves_no_tap_no_qemu_no_disks(booted, vm_env):
    record = proc.read_record(LAB_DIR / "vms" / NAME / "qemu.pid")
    done = racksmith("lab", "vm", "down", NAME, env=vm_env)
    assert f"{NAME}: stopped" in done.stdout
    assert record is not None and not proc.alive(record)
    assert not net.link_exists(vm.tap_name(NAME))
    assert not (LAB_DIR / "vms" / NAME).exists()
    again = racksmith("lab", "vm", "down", NAME, env=vm_env)
    assert f"{NAME}: not running" in again.stdout


def test_lab_down_stops_the_vms_it_started(vm_rack, vm_env, image_info):
    done = racksmith("lab", "vm", "up", "vmt2", "192.168.243.201", "--json", env=vm_env)
    pid = json.loads(done.stdout)["pid"]
    record = proc.read_record(LAB_DIR / "vms" / "vmt2" / "qemu.pid")
    assert record is not None and record.pid == pid and proc.alive(record)
    racksmith("lab", "down", env=vm_env)
    assert not proc.alive(record)
    assert not net.link_exists(vm.tap_name("vmt2"))
    assert not net.link_exists(vm_rack.bridge)
    assert vm.list_vms(paths.LabPaths(LAB_DIR)) == []
    assert hosts.list_hosts(paths.LabPaths(LAB_DIR)) == []
