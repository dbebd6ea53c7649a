"""Issue 22: numbers are numbers everywhere.

Before: with ``--allow-names``, ``0x7f000001.`` (a trailing dot) was stripped to
``0x7f000001``, which the resolver read as 127.0.0.1, and the BMC password was sent there;
``MAAS_URL`` was held to no address rule (``http://127.1:PORT`` and ``http://0x7f000001:PORT``
connected and got the key); full-width digits were accepted as a port; ``0.0.0.0`` and
``[::]`` were accepted as BMC addresses; ``127.0.0.1`` and ``[::ffff:127.0.0.1]`` given
together were queried as two BMCs.

The hostile server listens on 127.0.0.1, which every numeric spelling here (and 0.0.0.0)
reaches: ``server.seen == []`` proves nothing was sent, not merely that an error came back.
"""

from __future__ import annotations

import json

import pytest

from racksmith import cli, transport
from racksmith.redfish import targets

#: Spellings of 127.0.0.1 that resolvers or URL parsers accept; none is a dotted quad.
NUMERIC = [
    "0x7f000001.",
    "0x7f000001",
    "0X7F000001..",
    "2130706433",
    "2130706433.",
    "017700000001",
    "0177.0.0.1",
    "0x7f.0.0.1.",
    "127.1",
    "127.1.",
    "127.0.1",
    "127.0.0.1.",
    "0x7f.1",
]


def _wide(text: str) -> str:
    """``text`` in full-width forms (U+FF10.. digits, U+FF41.. letters), as a paste from a
    CJK input method gives them; ``int()`` and ``str.isdigit`` accept such digits."""
    return "".join(chr(ord(c) + 0xFEE0) for c in text)


@pytest.mark.parametrize("host", NUMERIC)
def test_numeric_host_is_refused_by_the_target_rule_even_with_names(host, no_resolver):
    with pytest.raises(targets.TargetError, match="not a dotted-quad") as err:
        targets.expand([f"{host}:8443"], allow_names=True)
    assert repr(f"{host}:8443") in str(err.value)
    assert no_resolver == []


@pytest.mark.parametrize("host", ["0x7f000001.", "2130706433.", "127.1"])
def test_cli_with_allow_names_sends_nothing_to_a_numeric_host(host, hostile, monkeypatch, capsys):
    server = hostile("echo")
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "numeric-pw-1")
    argv = ["redfish", "discover", "--scheme", "http", "--allow-names"]
    assert cli.main([*argv, "--bmc", f"{host}:{server.port}"]) == 2
    assert repr(host) in capsys.readouterr().err
    assert server.seen == []


@pytest.mark.parametrize("spec", ["0.0.0.0", "[::]", "[::ffff:0.0.0.0]", "0.0.0.0/31"])  # noqa: S104
def test_unspecified_addresses_are_refused(spec):
    with pytest.raises(targets.TargetError, match="unspecified"):
        targets.expand([spec])


@pytest.mark.parametrize(
    "port", [_wide("8443"), _wide("8") + "443", "\u0668\u0664\u0664\u0663", "443-" + _wide("445")]
)
def test_full_width_and_other_unicode_digits_are_not_a_port(port):
    with pytest.raises(targets.TargetError, match="port"):
        targets.expand([f"127.0.0.1:{port}"])


def test_the_same_bmc_in_two_spellings_is_one_bmc(hostile, monkeypatch, capsys):
    server = hostile("echo", status=401)
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "spelling-pw-1")
    spellings = [f"127.0.0.1:{server.port}", f"[::ffff:127.0.0.1]:{server.port}"]
    assert len(targets.expand(spellings)) == 1
    argv = ["redfish", "discover", "--scheme", "http", "--json", "--retries", "0"]
    cli.main([*argv, "--bmc", spellings[0], "--bmc", spellings[1]])
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [r["bmc"] for r in listed] == [spellings[0]]  # one record per BMC (JSON lines)
    assert len([s for s in server.seen if s.method == "POST"]) == 1


def test_a_name_and_the_address_it_resolves_to_are_one_bmc():
    """With names enabled, ``bmc.lab`` resolving to 127.0.0.1 beside ``127.0.0.1`` is one BMC
    (the first spelling is kept); an unresolvable name stays, to be reported unreachable."""
    found = targets.expand(
        ["127.0.0.1:8443", "bmc.lab:8443", "bmc.lab:8444", "gone.lab:8443"], allow_names=True
    )
    answers = {"bmc.lab": "127.0.0.1"}

    def resolver(name: str, port: int) -> str:
        if name not in answers:
            raise targets.TargetError(f"target {name!r}: cannot resolve")
        return answers[name]

    resolved = targets.resolve(found, resolver)
    assert [(t.host, t.port, t.address) for t in resolved] == [
        ("127.0.0.1", 8443, "127.0.0.1"),
        ("bmc.lab", 8444, "127.0.0.1"),
        ("gone.lab", 8443, ""),
    ]


# -- MAAS_URL (and the UFM URL) by the same rule: names allowed, numbers only as dotted quads --


@pytest.mark.parametrize(
    "url",
    [
        *(f"http://{host}:{{port}}/MAAS/" for host in NUMERIC),
        "http://0.0.0.0:{port}/MAAS/",
        "http://[::]:{port}/MAAS/",
        "http://root:pw@127.0.0.1:{port}/MAAS/",
        "http://127.0.0.1:" + _wide("80") + "/MAAS/",
        "http://127.0.0.1\\@evil:{port}/MAAS/",
    ],
)
def test_maas_url_with_a_numeric_short_form_gets_no_key(url, hostile, monkeypatch, capsys):
    server = hostile("echo")
    monkeypatch.setenv("MAAS_URL", url.format(port=server.port))
    monkeypatch.setenv("MAAS_API_KEY", "numeric-consumer:numeric-token:numeric-secret")
    assert cli.main(["maas", "machines", "--deadline", "3"]) == 2
    err = capsys.readouterr().err
    assert "MAAS" in err and "numeric-secret" not in err
    assert server.seen == []


def test_maas_url_may_be_a_name(hostile, monkeypatch, capsys):
    """Names stay allowed for MAAS (the rule refuses numbers, not names)."""
    server = hostile("wrong_shape", body=b"[]")
    monkeypatch.setenv("MAAS_URL", f"http://localhost:{server.port}/MAAS/")
    monkeypatch.setenv("MAAS_API_KEY", "name-consumer:name-token:name-secret")
    assert cli.main(["maas", "machines", "--json", "--deadline", "5"]) == 0, capsys.readouterr()
    assert server.seen and server.seen[0].path.startswith("/MAAS/api/2.0/machines/")


@pytest.mark.parametrize("host", [*NUMERIC, "0.0.0.0", "[::]", _wide("maas") + ".example"])  # noqa: S104
def test_endpoint_url_rule_refuses_what_the_target_rule_refuses(host):
    """:func:`racksmith.transport.check_url` is the rule MAAS_URL and the UFM URL share."""
    with pytest.raises(transport.AddressError) as err:
        transport.check_url(f"https://{host}:8443/ufmRest", "UFM URL")
    assert "UFM URL" in str(err.value)


@pytest.mark.parametrize(
    "url", ["https://ufm.example.net/", "http://10.0.0.5:5240/MAAS/", "https://[fd00::5]:443/"]
)
def test_endpoint_url_rule_accepts_names_and_canonical_addresses(url):
    origin = transport.check_url(url, "URL")
    assert origin.scheme == url.split(":")[0]
