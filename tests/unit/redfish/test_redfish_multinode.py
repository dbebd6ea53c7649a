"""A BMC that serves several hosts (a multi-node chassis): one result and one inventory host per
node, distinct names even when nodes fail, failed hosts keeping what was read.

No public capture of a multi-node chassis exists (see racksmith/lab/data/redfish/README.md), so
this test makes one, here and only here: the emulated Supermicro BMC serves its captured system
``Systems/1`` and a second node ``Systems/2`` made from it, with its own serial, UUID and MACs
(the captured MACs with the first octet ``06``). Everything else is the real emulation: sockets,
TLS, sessions, ``$expand``, and ``ansible-inventory`` running the plugin.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from test_redfish_inventory import _ansible_env, _inventory, _list

from racksmith.redfish import hostnames, parse
from racksmith.redfish.discover import BmcResult, DiscoveryOptions, discover, flag_duplicates
from racksmith.redfish.errors import ErrorKind, RedfishError

ROOT = "/redfish/v1"
NODE1, NODE2 = f"{ROOT}/Systems/1", f"{ROOT}/Systems/2"
NODE2_SERIAL = "S9NODE2000002"
NODE2_UUID = "00000000-0000-4000-8000-000000000002"


class TwoNodes:
    """The served Supermicro variant plus a second node (test-only, see the module docstring).
    ``blank_serials``: both nodes without a serial, so neither can be named or identified."""

    def __init__(self, base: Any, *, blank_serials: bool = False) -> None:
        self.base = base
        self.blank_serials = blank_serials
        macs = "|".join(
            r"[:-]?".join(re.escape(octet) for octet in mac.split(":"))
            for mac in base.captured_macs
        )
        self._macs = re.compile(f"(?i){macs}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def _node2(self, text: str) -> str:
        text = text.replace(NODE1, NODE2).replace(self.base.captured_serial, NODE2_SERIAL)
        for uuid in (self.base.captured_uuid.lower(), self.base.captured_uuid.upper()):
            text = text.replace(uuid, NODE2_UUID)
        return self._macs.sub(lambda m: "06" + m.group(0)[2:], text)

    def document(self, path: str) -> dict[str, Any] | None:
        if path == f"{ROOT}/Systems":
            doc = self.base.document(path)
            doc["Members"] = [{"@odata.id": NODE1}, {"@odata.id": NODE2}]
            doc["Members@odata.count"] = 2
            return doc
        if path == NODE2 or path.startswith(NODE2 + "/"):
            doc = self.base.document(NODE1 + path[len(NODE2) :])
            doc = json.loads(self._node2(json.dumps(doc))) if doc is not None else None
        else:
            doc = self.base.document(path)
        if self.blank_serials and doc is not None and path in (NODE1, NODE2):
            doc["SerialNumber"] = ""
        return doc


@pytest.fixture
def two_nodes(rack, server):
    def make(**kw):
        lab = rack([server(1, model="supermicro-hgx-h100")])
        bmc = lab.bmc("gpu01")
        bmc.variant = TwoNodes(bmc.variant, **kw)
        return lab

    return make


def _options(client_options, **kw) -> DiscoveryOptions:
    return DiscoveryOptions(client=client_options, **{"deadline": 20.0, **kw})


def test_one_result_per_node(two_nodes, creds, client_options):
    lab = two_nodes()
    node1, node2 = discover(lab.targets(), creds, _options(client_options))
    assert node1.ok and node2.ok, (node1.error, node2.error)
    one, two = node1.as_dict(), node2.as_dict()
    assert (one["system_uri"], two["system_uri"]) == (NODE1, NODE2)
    assert one["bmc"] == two["bmc"] and node1.requests == node2.requests  # one session, shared
    assert one["service_tag"] == lab.bmc("gpu01").server.service_tag
    assert two["service_tag"] == NODE2_SERIAL and two["uuid"] == NODE2_UUID
    assert one["pxe_mac"] == lab.bmc("gpu01").server.pxe_mac
    assert two["pxe_mac"].startswith("06:") and two["pxe_rule"] == "boot:pxe"
    assert len(one["gpus"]) == len(two["gpus"]) == 8


def test_failed_nodes_are_kept_apart_and_keep_their_system(two_nodes, creds, client_options):
    lab = two_nodes(blank_serials=True)
    results = discover(lab.targets(), creds, _options(client_options))
    assert [r.error.kind for r in results] == [ErrorKind.INCOMPLETE] * 2
    assert [r.as_dict()["system_uri"] for r in results] == [NODE1, NODE2]
    assert all("no service tag (SerialNumber)" in r.error.reason for r in results)


def test_inventory_gives_one_host_per_node(two_nodes, lab_dir, tmp_path):
    lab = two_nodes()
    inv = _list(_inventory(tmp_path, lab, lab_dir), _ansible_env(tmp_path, lab_dir))
    hostvars = inv["_meta"]["hostvars"]
    tag = lab.bmc("gpu01").server.service_tag.lower()
    assert set(inv["bmc_ok"]["hosts"]) == {tag, NODE2_SERIAL.lower()}
    assert hostvars[tag]["redfish_system_uri"] == NODE1
    assert hostvars[NODE2_SERIAL.lower()]["redfish_system_uri"] == NODE2


def test_inventory_names_two_failed_nodes_apart(two_nodes, lab_dir, tmp_path):
    lab = two_nodes(blank_serials=True)
    inv = _list(_inventory(tmp_path, lab, lab_dir), _ansible_env(tmp_path, lab_dir))
    hostvars = inv["_meta"]["hostvars"]
    base = f"bmc-127.0.0.1-{lab.bmc('gpu01').port}"
    assert sorted(inv["bmc_malformed"]["hosts"]) == [f"{base}-1", f"{base}-2"]
    assert hostvars[f"{base}-2"]["redfish_system_uri"] == NODE2
    assert "no service tag" in hostvars[f"{base}-2"]["redfish_error"]


def test_inventory_failed_nodes_keep_the_facts_read(two_nodes, lab_dir, tmp_path):
    """No PXE NIC decided (a rule that matches nothing): each node is a failed host named by
    its service tag, with its serial, model and MACs, so the report names the server."""
    lab = two_nodes()
    path = _inventory(tmp_path, lab, lab_dir, pxe_rules=["id:NoSuchNic"], vendor="supermicro")
    inv = _list(path, _ansible_env(tmp_path, lab_dir))
    hostvars = inv["_meta"]["hostvars"]
    tag = lab.bmc("gpu01").server.service_tag.lower()
    assert set(inv["bmc_malformed"]["hosts"]) == {tag, NODE2_SERIAL.lower()}
    node2 = hostvars[NODE2_SERIAL.lower()]
    assert node2["redfish_error_kind"] == "incomplete" and "NoSuchNic" in node2["redfish_error"]
    assert node2["redfish_serial"] == NODE2_SERIAL and node2["redfish_model"] == "SYS-821GE-TNHR"
    assert len(node2["redfish_nics"]) > 1 and node2["redfish_pxe_mac"] is None
    assert node2["redfish_vendor"] == "supermicro"


# -- pure parts ----------------------------------------------------------------------------------


def test_names_collide_only_where_needed():
    def rec(bmc: str, system: str | None = None) -> dict[str, Any]:
        return {"bmc": bmc, "system_uri": system}

    named = [
        ("abc", rec("10.0.0.1:443")),
        ("dup", rec("10.0.0.2:443")),
        ("dup", rec("10.0.0.3:443")),
        ("bmc-x", rec("10.0.0.4:443", "/redfish/v1/Systems/Node1")),
        ("bmc-x", rec("10.0.0.4:443", "/redfish/v1/Systems/Node2")),
        ("bmc-y", rec("10.0.0.5:443")),
        ("bmc-y", rec("10.0.0.5:443")),
        ("bmc-y-node", rec("10.0.0.6:443")),  # already unique: kept, and never reused
    ]
    assert hostnames.distinct(named) == [
        "abc",
        "dup-10-0-0-2-443",
        "dup-10-0-0-3-443",
        "bmc-x-Node1",
        "bmc-x-Node2",
        "bmc-y-node-2",
        "bmc-y-node-3",
        "bmc-y-node",
    ]


def test_duplicates_are_flagged_per_host_not_per_bmc():
    """Node 2 of a chassis clashes with another BMC: only node 2 and that BMC are flagged."""

    def facts(tag: str, mac: str) -> parse.HostFacts:
        system = parse.parse_system(
            {"@odata.id": f"{ROOT}/Systems/{tag}", "SerialNumber": tag, "Model": "m", "SKU": tag}
        )
        nic = parse.Nic("1", mac)
        return parse.HostFacts(system, None, (nic,), None, ())

    results = [
        BmcResult("10.0.0.1:443", facts("A1", "02:00:00:00:00:01"), None, system=NODE1),
        BmcResult("10.0.0.1:443", facts("A2", "02:00:00:00:00:02"), None, system=NODE2),
        BmcResult("10.0.0.9:443", facts("B1", "02:00:00:00:00:02"), None),
        BmcResult("10.0.0.8:443", None, RedfishError(ErrorKind.UNREACHABLE, "refused")),
    ]
    flagged = flag_duplicates(results)
    assert [r.error is None for r in flagged] == [True, False, False, False]
    assert "also reported by 10.0.0.9:443" in flagged[1].error.reason
    assert f"also reported by 10.0.0.1:443 ({NODE2})" in flagged[2].error.reason
    assert flagged[3].error.kind is ErrorKind.UNREACHABLE
