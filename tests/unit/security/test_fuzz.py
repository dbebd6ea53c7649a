"""Property tests (Hypothesis): the parsers that read operator input and answers from BMCs and
MAAS either return typed results or raise their own typed error, whatever they are fed; and
redaction masks a secret in every form. Runs in the unit lane (a few seconds)."""

from __future__ import annotations

import ipaddress
import json
import socket

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from racksmith import secrets
from racksmith.maas.errors import MaasMalformedError
from racksmith.maas.model import BlockDevice, Machine, parse_events, parse_machines
from racksmith.redfish import parse, targets
from racksmith.redfish.errors import RedfishError

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)

#: Documents shaped roughly like Redfish/MAAS ones, so the fuzz reaches past the first check.
REDFISH_KEYS = st.sampled_from(
    [
        "@odata.id",
        "Id",
        "Name",
        "SerialNumber",
        "SKU",
        "Model",
        "Manufacturer",
        "UUID",
        "PowerState",
        "Status",
        "Members",
        "MACAddress",
        "PermanentMACAddress",
        "LinkStatus",
        "ProcessorType",
        "Links",
        "EthernetInterfaces",
        "Processors",
        "Chassis",
        "Managers",
        "FirmwareVersion",
        "BiosVersion",
        "Oem",
        "Boot",
        "DateTime",
        "Health",
    ]
)
MAAS_KEYS = st.sampled_from(
    [
        "system_id",
        "hostname",
        "status",
        "status_name",
        "interface_set",
        "boot_interface",
        "mac_address",
        "boot_disk",
        "ip_addresses",
        "tag_names",
        "pool",
        "zone",
        "id",
        "size",
        "events",
        "level",
        "type",
        "description",
        "owner",
        "locked",
    ]
)
redfish_docs = st.dictionaries(REDFISH_KEYS, json_values, max_size=10)
maas_docs = st.dictionaries(MAAS_KEYS, json_values, max_size=10)

spec_text = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"[0-9a-fx.:/\[\]\-]{1,30}", fullmatch=True),
    st.builds(
        lambda a, b, c, d, p: f"{a}.{b}.{c}.{d}{p}",
        *(st.integers(0, 300) for _ in range(4)),
        st.sampled_from(["", ":443", ":1-3", "/30", "-5", ":0", ":70000"]),
    ),
)


def _never_resolves(*args, **kwargs):
    raise AssertionError("the target parser must not ask the resolver")


@FAST
@given(spec_text)
def test_target_parser_is_total_and_never_resolves(spec):
    original = socket.getaddrinfo
    socket.getaddrinfo = _never_resolves
    try:
        found = targets.parse(spec)
    except targets.TargetError:
        return
    finally:
        socket.getaddrinfo = original
    assert 0 < len(found) <= targets.MAX_TARGETS
    for target in found:
        ipaddress.ip_address(target.address)  # names are off: every target is an address
        assert target.address == target.host
        assert 1 <= target.port <= 65535


@FAST
@given(spec_text)
def test_count_agrees_with_parse(spec):
    try:
        n = targets.count(spec)
    except targets.TargetError:
        return
    if n <= 4096:
        assert len(targets.parse(spec)) == n


@FAST
@given(st.one_of(redfish_docs, json_values))
def test_redfish_system_and_manager_parsers(doc):
    for parser in (parse.parse_system, parse.parse_manager):
        try:
            parser(doc)
        except RedfishError:
            pass


@FAST
@given(st.lists(st.one_of(redfish_docs, json_values), max_size=4))
def test_redfish_collection_parsers(docs):
    for parser in (
        parse.nics_from_ethernet_interfaces,
        parse.gpus,
        parse.firmware_inventory,
        parse.pcie_devices,
        parse.memory_modules,
    ):
        try:
            parser(docs)
        except RedfishError:
            pass


@FAST
@given(st.one_of(maas_docs, json_values, st.lists(st.one_of(maas_docs, json_values), max_size=4)))
def test_maas_parsers(data):
    for parser in (parse_machines, parse_events, Machine.from_json, BlockDevice.from_json):
        try:
            parser(data)
        except MaasMalformedError:
            pass


@FAST
@given(st.text(min_size=secrets.MIN_SECRET_LEN, max_size=60), st.text(max_size=30))
def test_redaction_masks_escaped_and_encoded_forms(secret, around):
    secrets.remember(secret)
    for form in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        text = secrets.redact(around + form + around)
        assert form not in text or form in (around + secrets.MASK + around)


#: Pieces a hostile link is made of, so the fuzz hits schemes, hosts, ports and separators.
LINK_PIECES = st.sampled_from(
    [
        "http:",
        "https:",
        "//",
        "/",
        "@",
        ":",
        "\\",
        "127.0.0.1",
        "10.0.0.9",
        "evil",
        "[::1]",
        "8443",
        "443",
        "%2f",
        "%40",
        "?",
        "#",
        "..",
        "redfish",
        "v1",
        ".",
        " ",
        "\t",
        "a:b@",
    ]
)
links = st.lists(LINK_PIECES, max_size=8).map("".join) | st.text(max_size=40)


@FAST
@given(links)
def test_link_url_stays_on_the_origin_whatever_the_link(link):
    """The one-origin rule is total, and what it returns goes to the origin it was given, by
    the URL parsers requests and urllib3 use, not only by the rule's own reading."""
    from urllib.parse import urlsplit

    import urllib3

    from racksmith import transport

    origin = transport.Origin("https", "10.0.0.9", 8443)
    try:
        url = transport.link_url(origin, link, "BMC 10.0.0.9:8443")
    except transport.OriginError:
        return
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("https", "10.0.0.9:8443"), url
    parsed = urllib3.util.parse_url(url)
    assert (parsed.scheme, parsed.host, parsed.port, parsed.auth) == (
        "https",
        "10.0.0.9",
        8443,
        None,
    )
