"""Host construction: nspawn flags that work without systemd on the controller, identities."""

from pathlib import Path

import pytest

from racksmith.lab import hosts
from racksmith.lab.errors import LabError
from racksmith.lab.spec import load


@pytest.fixture(scope="module")
def rack():
    return load()


def test_a_rack_server_host_carries_its_pxe_mac_and_address(rack):
    server = rack.servers[0]
    host = hosts.rack_host(rack, server)
    assert host.mac == server.pxe_mac
    assert host.ip == server.ip
    assert host.apt_proxy == f"http://{rack.controller_ip}:{rack.apt_proxy_port}"
    assert host.netns == f"{rack.bridge}-{server.name}"
    assert len(host.veth) <= 15


def test_nspawn_flags_follow_the_recipe():
    host = hosts.HostSpec(name="web1", ip="192.168.250.11", bridge="rslab0", hostname="l1abc")
    argv = hosts.nspawn_argv(host, Path("/lab/machines/web1/root"))
    for flag in (
        "--boot",
        "--register=no",
        "--keep-unit",
        "--resolv-conf=off",
        "--console=passive",
        "--network-namespace-path=/run/netns/rslab0-web1",
        "--directory=/lab/machines/web1/root",
        "--hostname=l1abc",
    ):
        assert flag in argv
    # nspawn keys its propagation dir on the machine name: unique per lab, not per host name
    assert "--machine=rslab0-web1" in argv


def test_the_supervisor_wraps_nspawn():
    host = hosts.HostSpec(name="web1", ip="192.168.250.11", bridge="rslab0")
    argv = hosts.supervised_argv(host, Path("/r"), Path("/p"))
    assert argv[1:3] == ["-m", "racksmith.lab.supervise"]
    assert argv[argv.index("--") + 1] == "systemd-nspawn"


def test_only_net_sysctls_become_writable():
    assert hosts.nspawn_env({"PATH": "/bin"}) == {
        "PATH": "/bin",
        "SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network",
    }


def test_ssh_argv_never_prompts_or_trusts_stale_keys():
    argv = hosts.ssh_argv(Path("/k"), "192.168.250.11", "true")
    assert argv[:3] == ["ssh", "-i", "/k"]
    assert "BatchMode=yes" in argv and "UserKnownHostsFile=/dev/null" in argv
    assert argv[-2:] == ["ubuntu@192.168.250.11", "true"]


def test_etc_hosts_resolves_the_hostname_without_dns():
    assert "127.0.1.1 gpu01\n" in hosts.etc_hosts("gpu01")


@pytest.mark.parametrize(
    ("name", "ip", "message"),
    [
        ("m1", "10.0.0.5", "not a host address on the lab subnet"),
        ("m1", "192.168.250.1", "not a host address"),
        ("m1", "192.168.250.255", "not a host address"),
        ("m1", "nonsense", "not an IPv4 address"),
        ("gpu01", "192.168.250.60", "clashes with rack server gpu01"),
        ("m1", "192.168.250.20", "clashes with rack server"),
    ],
)
def test_free_standing_hosts_stay_out_of_the_rack(rack, name, ip, message):
    with pytest.raises(LabError, match=message):
        hosts.check_free_standing(rack, name, ip)


def test_a_molecule_address_is_accepted(rack):
    hosts.check_free_standing(rack, "base-m1", "192.168.250.50")


def test_saved_specs_are_listed(tmp_path):
    lab = hosts.paths.LabPaths(tmp_path)
    spec = hosts.HostSpec(name="a1", ip="192.168.250.51", bridge="rslab0")
    (tmp_path / "machines" / "a1").mkdir(parents=True)
    (tmp_path / "machines" / "a1" / "host.json").write_text(
        '{"name": "a1", "ip": "192.168.250.51", "bridge": "rslab0"}'
    )
    (tmp_path / "machines" / "junk").mkdir()
    assert hosts.list_hosts(lab) == [spec]
    assert not hosts.host_running(lab, "a1")
