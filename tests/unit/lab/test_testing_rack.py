"""racksmith.testing.rack: the private rack file each test lab writes (no lab is started)."""

from __future__ import annotations

import pytest

from racksmith.lab import spec
from racksmith.testing.rack import hgx_servers, write_rack


def test_private_rack_has_its_network_ports_and_servers(tmp_path):
    rack = write_rack(
        tmp_path, bridge="rslab9", prefix="192.168.239", bmc_base_port=18943,
        maas_listen="127.0.0.1:15239", servers=hgx_servers(2),
    )  # fmt: skip
    assert rack.path == tmp_path / "rack.yml"
    assert (rack.bridge, rack.prefix, rack.bmc_base_port, rack.maas_listen) == (
        "rslab9", "192.168.239", 18943, "127.0.0.1:15239",
    )  # fmt: skip
    assert [(s.index, s.name, s.model, s.ip, s.bmc_port) for s in rack.servers] == [
        (1, "gpu01", "hgx-h200-8gpu", "192.168.239.20", 18943),
        (2, "gpu02", "hgx-h200-8gpu", "192.168.239.21", 18944),
    ]
    # what the test does not choose stays the demo rack's
    demo = spec.load()
    assert (rack.apt_proxy_port, rack.bmc_listen, rack.bmc_scheme) == (
        demo.apt_proxy_port, demo.bmc_listen, demo.bmc_scheme,
    )  # fmt: skip


def test_defaults_one_hgx_server_and_the_demo_bmc_ports(tmp_path):
    servers = [{"index": 3, "name": "gpu03", "model": "dgx-h100", "faults": ["deploy_fails"]}]
    rack = write_rack(tmp_path, bridge="rslab9", prefix="192.168.239", maas_listen="x:1")
    assert [s.name for s in rack.servers] == ["gpu01"]
    assert rack.bmc_base_port == spec.load().bmc_base_port
    other = write_rack(
        tmp_path, bridge="rslab9", prefix="192.168.239", maas_listen="x:1", servers=servers
    )
    assert [(s.name, s.faults) for s in other.servers] == [("gpu03", frozenset({"deploy_fails"}))]


def test_a_bad_value_fails_with_the_loaders_message(tmp_path):
    with pytest.raises(spec.SpecError, match=r"network\.bridge 'rslab-far-too-long'"):
        write_rack(tmp_path, bridge="rslab-far-too-long", prefix="192.168.239", maas_listen="x:1")
