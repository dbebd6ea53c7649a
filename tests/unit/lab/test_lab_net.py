"""Names and commands for the lab network: unique per lab, within kernel limits."""

import pytest

from racksmith.lab import net
from racksmith.lab.errors import LabError


def test_veth_name_is_readable_and_unique_per_bridge():
    assert net.veth_name("rslab0", "192.168.250.20") == "rslab0-20"
    assert net.veth_name("rslab2", "192.168.248.20") != net.veth_name("rslab0", "192.168.250.20")


def test_veth_name_falls_back_to_a_hash_within_15_chars():
    long_a = net.veth_name("bridge-long-one", "10.0.0.254")
    long_b = net.veth_name("bridge-long-two", "10.0.0.254")
    assert len(long_a) <= net.IFNAMSIZ and len(long_b) <= net.IFNAMSIZ
    assert long_a != long_b
    assert long_a.endswith("-254")


def test_veth_name_rejects_a_non_address():
    with pytest.raises(ValueError):
        net.veth_name("rslab0", "gpu01")


def test_host_commands_put_the_mac_on_eth0_and_add_no_route():
    cmds = net.host_commands(
        bridge="rslab0", netns="rslab0-gpu01", veth="rslab0-20",
        address="192.168.250.20/24", mac="02:5a:00:01:01:00",
    )  # fmt: skip
    add = next(c for c in cmds if c[:3] == ["ip", "link", "add"])
    assert add[add.index("peer") :] == [
        "peer", "name", "eth0", "address", "02:5a:00:01:01:00", "netns", "rslab0-gpu01",
    ]  # fmt: skip
    assert not any("route" in c for c in cmds)
    assert ["ip", "link", "set", "rslab0-20", "master", "rslab0", "up"] in cmds


def test_host_commands_without_mac_let_the_kernel_choose():
    cmds = net.host_commands(bridge="b", netns="n", veth="v", address="10.0.0.2/24", mac=None)
    assert "address" not in cmds[1]


@pytest.mark.parametrize("mac", ["02:5A:00:01:01:00", "02:5a:00:01:01", "zz:5a:00:01:01:00"])
def test_host_commands_reject_a_malformed_mac(mac):
    with pytest.raises(LabError, match="MAC"):
        net.host_commands(bridge="b", netns="n", veth="v", address="10.0.0.2/24", mac=mac)


@pytest.mark.parametrize("name", ["Gpu01", "gpu_01", "-gpu", "gpu-", "", "a" * 64, "a/b"])
def test_host_names_must_be_hostnames(name):
    with pytest.raises(LabError, match="host name"):
        net.check_host_name(name)


def test_bridge_commands_set_the_controller_address():
    assert ["ip", "addr", "replace", "192.168.250.1/24", "dev", "rslab0"] in net.bridge_commands(
        "rslab0", "192.168.250.1/24"
    )


def test_the_bridge_gets_a_fixed_locally_administered_mac():
    mac = net.bridge_mac("rslab0")
    assert mac == net.bridge_mac("rslab0")  # the same on every `lab up`
    assert mac != net.bridge_mac("rslab1")
    first = int(mac.split(":")[0], 16)
    assert first & 0x02 and not first & 0x01  # locally administered, unicast
    commands = net.bridge_commands("rslab0", "192.168.250.1/24")
    assert ["ip", "link", "set", "rslab0", "address", mac] in commands
    # set before the bridge has ports, and before it is up
    assert commands.index(["ip", "link", "set", "rslab0", "address", mac]) < commands.index(
        ["ip", "link", "set", "rslab0", "up"]
    )
