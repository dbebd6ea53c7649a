"""Target specs: addresses, ports, port ranges, CIDRs, address ranges, host names."""

from __future__ import annotations

import pytest

from racksmith.redfish.targets import MAX_TARGETS, Target, TargetError, expand, parse


def test_forms():
    assert parse("10.0.0.5") == [Target("10.0.0.5", 443)]
    assert parse("10.0.0.5:8443") == [Target("10.0.0.5", 8443)]
    assert [t.port for t in parse("127.0.0.1:8443-8446")] == [8443, 8444, 8445, 8446]
    assert [t.host for t in parse("10.0.0.0/30")] == ["10.0.0.1", "10.0.0.2"]  # usable hosts only
    assert [t.host for t in parse("10.0.0.10-12")] == ["10.0.0.10", "10.0.0.11", "10.0.0.12"]
    assert len(parse("10.0.0.250-10.0.1.5")) == 12
    assert parse("[fd00::5]:623") == [Target("fd00::5", 623)]
    assert str(parse("[fd00::5]")[0]) == "[fd00::5]:443"
    assert len(parse("[fd00::]/126")) == 3  # hosts: not the subnet-router anycast
    assert parse("BMC01.example.net:443", allow_names=True) == [Target("bmc01.example.net", 443)]
    assert parse("10.0.0.0/31:8443") == [Target("10.0.0.0", 8443), Target("10.0.0.1", 8443)]


def test_expand_dedupes_and_accepts_strings():
    assert expand("10.0.0.1, 10.0.0.1:443 10.0.0.2") == [Target("10.0.0.1"), Target("10.0.0.2")]
    assert expand(["10.0.0.1"], default_port=8443) == [Target("10.0.0.1", 8443)]


@pytest.mark.parametrize(
    "spec",
    [
        "10.0.0.0/33",
        "10.0.0.5:99999",
        "10.0.0.5:20-10",
        "not a host!",
        "10.0.0.9-10.0.0.1",
        "[fd00::1",
    ],
)
def test_bad_specs_are_named(spec):
    with pytest.raises(TargetError) as err:
        parse(spec)
    assert repr(spec)[1:-1].split(":")[0] in str(err.value)


def test_refuses_absurd_sweeps():
    with pytest.raises(TargetError, match=str(MAX_TARGETS)):
        parse("10.0.0.0/8")
