"""The lab rack spec: identities are stable, distinct and well formed; bad files are named."""

from __future__ import annotations

import re

import pytest

from racksmith.lab import spec


def test_builtin_rack_loads_with_distinct_identities():
    rack = spec.load()
    assert len(rack.servers) >= 4
    for attr in ("name", "ip", "bmc_port", "service_tag", "serial", "uuid", "pxe_mac"):
        values = [getattr(s, attr) for s in rack.servers]
        assert len(set(values)) == len(values), attr
    for server in rack.servers:
        assert re.fullmatch(r"[0-9A-Z]{7}", server.service_tag)
        assert re.fullmatch(r"02:5a(:[0-9a-f]{2}){4}", server.pxe_mac)
        assert server.ip.startswith(rack.prefix + ".")
        assert rack.by_mac(server.pxe_mac.upper()) is server


def test_identity_is_stable_across_loads():
    a, b = spec.load(), spec.load()
    assert [s.service_tag for s in a.servers] == [s.service_tag for s in b.servers]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{network: {}, bmc: {}, maas: {}}", "missing 'network.prefix'"),
        ("{network: {prefix: 10.0.0, bridge: b}, bmc: {base_port: 1}, maas: {}}", "'servers'"),
        (
            "{network: {prefix: 300.1.1, bridge: b}, bmc: {base_port: 1}, maas: {}, servers: []}",
            "not a /24 prefix",
        ),
        (
            "{network: {prefix: 10.0.0, bridge: b}, bmc: {base_port: 1}, maas: {},"
            " servers: [{index: 1, name: a, model: m, faults: [on_fire]}]}",
            "unknown ['on_fire']",
        ),
        (
            "{network: {prefix: 10.0.0, bridge: b}, bmc: {base_port: 1}, maas: {},"
            " servers: [{index: 1, name: a, model: m}, {index: 2, name: a, model: m}]}",
            "duplicate",
        ),
        ("[unclosed", "cannot read rack spec"),
    ],
)
def test_bad_spec_names_file_and_field(tmp_path, text, message):
    path = tmp_path / "rack.yml"
    path.write_text(text)
    with pytest.raises(spec.SpecError) as err:
        spec.load(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_lab_redfish_inventory_targets_exactly_the_rack_bmcs():
    """inventory/lab/redfish.yml lists BMC ports by hand; it must match rack.yml."""
    import yaml

    from racksmith.redfish import targets

    rack = spec.load()
    config = yaml.safe_load((rack.path.parent / "redfish.yml").read_text())
    ports = set()
    for target in targets.expand(config["targets"]):
        assert target.host == rack.bmc_listen
        ports.add(target.port)
    assert ports == {s.bmc_port for s in rack.servers}
