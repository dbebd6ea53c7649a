"""Real test hosts: identity, network isolation, apt through the cache, user data, reboots,
and that stopping a host leaves nothing behind."""

from __future__ import annotations

import os
import signal
import time

import pytest

from racksmith.lab import hosts, mirror, net, proc
from racksmith.lab.errors import LabError

pytestmark = pytest.mark.lab

USER_DATA = b"""#cloud-config
hostname: l1test
write_files:
  - {path: /etc/racksmith/provisioned.json, content: '{"ok": true}', permissions: '0640'}
runcmd:
  - [sh, -c, "echo ran > /root/runcmd-ran"]
"""


@pytest.fixture(scope="module")
def two_hosts(it_rack, it_lab):
    servers = it_rack.servers[:2]
    t0 = time.monotonic()
    hosts.boot(it_rack, servers[0], user_data=USER_DATA, lab_dir=it_lab.root)
    hosts.boot(it_rack, servers[1], lab_dir=it_lab.root)
    print(f"two hosts booted in {time.monotonic() - t0:.1f}s")
    yield servers
    for server in servers:
        hosts.shutdown(it_rack, server, lab_dir=it_lab.root)


def test_identity_matches_the_rack(two_hosts, it_lab, ssh):
    first, second = two_hosts
    assert ssh(it_lab, first.ip, "cat /sys/class/net/eth0/address") == first.pxe_mac
    assert ssh(it_lab, second.ip, "cat /sys/class/net/eth0/address") == second.pxe_mac
    assert ssh(it_lab, first.ip, "hostname") == "l1test"  # from the user data
    assert ssh(it_lab, second.ip, "hostname") == second.name
    ids = {ssh(it_lab, s.ip, "cat /etc/machine-id") for s in two_hosts}
    keys = {ssh(it_lab, s.ip, "cat /etc/ssh/ssh_host_ed25519_key.pub") for s in two_hosts}
    assert len(ids) == 2 and len(keys) == 2


def test_each_host_has_a_cgroup_tree_of_its_own(two_hosts, it_lab, it_rack):
    """Hosts sharing nspawn's payload cgroup raced on each other's unit cgroups (219/CGROUP)."""
    paths = set()
    for server in two_hosts:
        child = proc.read_record(it_lab.machine(server.name) / "nspawn.pid")
        line = next(
            x for x in open(f"/proc/{child.pid}/cgroup").read().splitlines() if "name=systemd" in x
        )
        assert f"/racksmith/{it_rack.bridge}-{server.name}" in line
        paths.add(line)
    assert len(paths) == 2


def test_systemd_runs_and_sudo_works(two_hosts, it_lab, ssh):
    ip = two_hosts[0].ip
    assert ssh(it_lab, ip, "systemctl is-system-running --wait") == "running"
    assert ssh(it_lab, ip, "sudo -n id -u") == "0"


def test_user_data_was_applied_on_first_boot(two_hosts, it_lab, ssh):
    ip = two_hosts[0].ip
    assert ssh(it_lab, ip, "sudo cat /etc/racksmith/provisioned.json") == '{"ok": true}'
    assert ssh(it_lab, ip, "sudo stat -c %a /etc/racksmith/provisioned.json") == "640"
    assert ssh(it_lab, ip, "sudo cat /root/runcmd-ran") == "ran"
    assert ssh(it_lab, ip, "cloud-init status --wait") == "status: done"


def test_hosts_reach_each_other_but_nothing_off_the_bridge(two_hosts, it_lab, it_rack, ssh):
    first, second = two_hosts
    assert "default" not in ssh(it_lab, first.ip, "ip route")
    ssh(
        it_lab,
        first.ip,
        f"ping -c1 -W2 {second.ip} >/dev/null || bash -c '</dev/tcp/{second.ip}/22'",
    )
    # TEST-NET-1 (RFC 5737): never routed anywhere; the host has no route to try it anyway
    out = ssh(it_lab, first.ip, "curl -sS -m 3 http://192.0.2.1/ 2>&1; echo rc=$?", check=False)
    assert "Network is unreachable" in out or "rc=7" in out
    mirror_host = mirror.debian_mirror().split("://", 1)[1].split("/", 1)[0]
    out = ssh(it_lab, first.ip, f"getent hosts {mirror_host}; echo rc=$?", check=False)
    assert out.endswith("rc=2")  # no resolver: names fail at once


def test_apt_goes_through_the_lab_cache(two_hosts, it_lab, it_rack, ssh):
    ip = two_hosts[1].ip
    proxy = ssh(it_lab, ip, "apt-config dump Acquire::http::Proxy")
    assert f"http://{it_rack.controller_ip}:{it_rack.apt_proxy_port}" in proxy
    ssh(it_lab, ip, "sudo apt-get -q update >/dev/null")
    log = (it_lab.acng / "log" / "apt-cacher.log").read_text()
    assert f"|{ip}|" in log


def test_a_reboot_inside_the_host_brings_it_back(two_hosts, it_lab, it_rack, ssh):
    server = two_hosts[1]
    before = ssh(it_lab, server.ip, "cat /proc/sys/kernel/random/boot_id")
    ssh(it_lab, server.ip, "sudo systemctl reboot", check=False)
    deadline = time.monotonic() + 60
    after = before
    while time.monotonic() < deadline and after == before:
        time.sleep(0.5)
        after = ssh(it_lab, server.ip, "cat /proc/sys/kernel/random/boot_id", check=False) or before
    assert after != before, "host did not come back after reboot"
    assert hosts.is_running(it_rack, server, lab_dir=it_lab.root)


def test_boot_is_idempotent(two_hosts, it_lab, it_rack):
    record = proc.read_record(it_lab.machine(two_hosts[1].name) / "supervisor.pid")
    hosts.boot(it_rack, two_hosts[1], lab_dir=it_lab.root)
    assert proc.read_record(it_lab.machine(two_hosts[1].name) / "supervisor.pid") == record


def test_failed_user_data_fails_the_boot_and_leaves_nothing(it_rack, it_lab):
    server = it_rack.servers[1]
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)
    with pytest.raises(LabError, match="user-data runcmd failed"):
        hosts.boot(
            it_rack, server, user_data=b"#cloud-config\nruncmd: ['exit 3']\n", lab_dir=it_lab.root
        )
    spec = hosts.rack_host(it_rack, server)
    assert not hosts.is_running(it_rack, server, lab_dir=it_lab.root)
    assert not net.netns_exists(spec.netns) and not net.link_exists(spec.veth)
    hosts.boot(it_rack, server, lab_dir=it_lab.root)  # a clean deploy works again


def test_shutdown_removes_process_network_and_disk(it_rack, it_lab):
    server = it_rack.servers[1]
    hosts.boot(it_rack, server, lab_dir=it_lab.root)
    files = it_lab.machine(server.name)
    record = proc.read_record(files / "supervisor.pid")
    child = proc.read_record(files / "nspawn.pid")
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)
    spec = hosts.rack_host(it_rack, server)
    assert not proc.alive(record) and not proc.alive(child)
    assert not net.netns_exists(spec.netns) and not net.link_exists(spec.veth)
    assert not files.exists()


def test_an_orphaned_nspawn_is_cleaned_up(it_rack, it_lab):
    """The wrapper killed hard (OOM, kill -9): stop_host still stops its nspawn."""
    server = it_rack.servers[1]
    hosts.boot(it_rack, server, lab_dir=it_lab.root)
    files = it_lab.machine(server.name)
    child = proc.read_record(files / "nspawn.pid")
    os.kill(proc.read_record(files / "supervisor.pid").pid, signal.SIGKILL)
    time.sleep(0.5)
    assert proc.alive(child)
    assert not hosts.is_running(it_rack, server, lab_dir=it_lab.root)
    assert hosts.leftovers(it_lab, hosts.rack_host(it_rack, server))
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)
    assert not proc.alive(child)


def test_overlay_disk_survives_power_off_and_a_deploy_starts_clean(it_rack, it_lab, ssh):
    server = it_rack.servers[1]
    hosts.boot(it_rack, server, lab_dir=it_lab.root)
    assert ssh(it_lab, server.ip, "findmnt -n -o FSTYPE /") == "overlay"
    ssh(it_lab, server.ip, "sudo touch /var/tmp/kept")
    machine_id = ssh(it_lab, server.ip, "cat /etc/machine-id")
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root, wipe=False)
    hosts.boot(it_rack, server, lab_dir=it_lab.root)  # power on: same disk
    assert ssh(it_lab, server.ip, "cat /etc/machine-id") == machine_id
    ssh(it_lab, server.ip, "test -e /var/tmp/kept")
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root, wipe=False)
    hosts.boot(it_rack, server, user_data=b"#cloud-config\n", lab_dir=it_lab.root)  # deploy
    assert ssh(it_lab, server.ip, "test -e /var/tmp/kept; echo $?", check=False) == "1"
    assert ssh(it_lab, server.ip, "cat /etc/machine-id") != machine_id
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)


def test_copy_mode_boots_where_overlayfs_is_not_wanted(it_rack, it_lab, ssh, monkeypatch):
    monkeypatch.setenv("RACKSMITH_LAB_ROOTFS", "copy")
    server = it_rack.servers[1]
    hosts.boot(it_rack, server, lab_dir=it_lab.root)
    assert ssh(it_lab, server.ip, "findmnt -n -o FSTYPE /") != "overlay"
    hosts.shutdown(it_rack, server, lab_dir=it_lab.root)
    assert not it_lab.machine(server.name).exists()
