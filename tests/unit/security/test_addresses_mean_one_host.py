"""Issue 9, case 1: an address means exactly one host, decided by racksmith, never the resolver.

Before: ``127.1`` fell through to the host-name pattern and reached 127.0.0.1 with the session
login (password included) while the report said ``127.1``; ``999.1.1.1`` went to DNS.
"""

from __future__ import annotations

import pytest
from sec_support import redfish_options

from racksmith import cli
from racksmith.redfish import targets
from racksmith.redfish.discover import discover


@pytest.mark.parametrize(
    "spec", ["127.1", "10.0.5", "999.1.1.1", "010.0.0.1", "127.0.0.1.", "0x7f.1"]
)
def test_shorthand_and_invalid_addresses_are_refused_not_resolved(spec, no_resolver):
    with pytest.raises(targets.TargetError) as err:
        targets.expand([spec], allow_names=True)  # even with names on: these are not names
    assert repr(spec) in str(err.value)
    assert no_resolver == []


def test_names_are_refused_unless_enabled():
    with pytest.raises(targets.TargetError, match="host names are disabled"):
        targets.parse("bmc01.example.net")
    assert targets.parse("bmc01.example.net", allow_names=True)[0].host == "bmc01.example.net"


def test_ipv6_needs_brackets():
    with pytest.raises(targets.TargetError, match="brackets"):
        targets.parse("fd00::5")
    assert targets.parse("[fd00::5]:623")[0].address == "fd00::5"


def test_each_name_is_resolved_once_for_all_its_ports():
    asked: list[str] = []

    def resolver(name: str, port: int) -> str:
        asked.append(name)
        return "127.0.0.1"

    found = targets.resolve(targets.expand(["bmc.lab:8443-8446"], allow_names=True), resolver)
    assert asked == ["bmc.lab"]
    assert {t.address for t in found} == {"127.0.0.1"}


def test_the_address_contacted_is_reported(hostile, bmc_creds):
    """A name is connected to at its one resolved address; the result says which, and the BMC
    sees the name in Host (so TLS would verify the name the operator gave)."""
    server = hostile("wrong_shape")
    found = targets.expand([f"localhost:{server.port}"], allow_names=True)
    (result,) = discover(found, bmc_creds, redfish_options())
    assert result.as_dict()["address"] in ("127.0.0.1", "::1")
    assert result.as_dict()["bmc"] == f"localhost:{server.port}"
    assert server.seen and server.seen[0].headers["host"] == f"localhost:{server.port}"


def test_cli_refuses_127_1_and_sends_nothing(hostile, monkeypatch, capsys):
    """The password never goes to 127.0.0.1 when the operator typed 127.1."""
    server = hostile("echo")
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "never-sent-pw")
    code = cli.main(["redfish", "discover", "--scheme", "http", "--bmc", f"127.1:{server.port}"])
    assert code == 2
    assert "'127.1'" in capsys.readouterr().err
    assert server.seen == []
