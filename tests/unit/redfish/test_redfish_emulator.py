"""The lab's iDRAC emulation itself: identity, derived variant, sessions, validation, $expand."""

from __future__ import annotations

import json
import re

import requests

from racksmith.lab.bmc.behaviour import Settings
from racksmith.lab.bmc.identity import CAPTURED_NIC_PORTS, CAPTURED_SERIAL, CAPTURED_TAG

SYSTEM = "/redfish/v1/Systems/System.Embedded.1"


def _session(lab, name, creds, ca_bundle) -> tuple[requests.Session, str]:
    http = requests.Session()
    http.trust_env = False  # else REQUESTS_CA_BUNDLE from the environment overrides verify
    http.verify = ca_bundle
    http.auth = (creds.username, creds.password_value())
    return http, f"https://{lab.target(name)}"


def _crawl(http: requests.Session, base: str, limit: int = 5000) -> dict[str, str]:
    """Follow @odata.id links breadth-first from the service root; uri -> body text."""
    seen: dict[str, str] = {}
    queue = ["/redfish/v1"]
    while queue and len(seen) < limit:
        uri = queue.pop(0)
        if uri in seen or "#" in uri:
            continue
        response = http.get(base + uri, timeout=5)
        if response.status_code != 200:
            continue
        seen[uri] = response.text
        queue += [u for u in re.findall(r'"@odata.id": "([^"]+)"', response.text) if u not in seen]
    return seen


def test_identity_is_rewritten_everywhere(rack, server, creds, ca_bundle):
    lab = rack([server(3)])
    http, base = _session(lab, "gpu03", creds, ca_bundle)
    pages = _crawl(http, base)
    text = "\n".join(pages.values())
    assert len(pages) > 1000  # the whole captured tree, through the emulation
    for captured in (
        CAPTURED_TAG,
        CAPTURED_SERIAL,
        "4c4c4544-0035-3410-8050-c6c04f314733",
        "1654422007043",
    ):
        assert captured not in text
    for mac, _ in CAPTURED_NIC_PORTS:
        assert mac not in text and mac.lower() not in text
    me = lab.bmc("gpu03").server
    assert me.service_tag in text and me.pxe_mac in text.lower()


def test_two_bmcs_have_distinct_identities_and_state(rack, server, creds, ca_bundle):
    lab = rack([server(1), server(2)])
    docs = []
    for name in ("gpu01", "gpu02"):
        http, base = _session(lab, name, creds, ca_bundle)
        docs.append(http.get(base + SYSTEM, timeout=5).json())
    assert docs[0]["SKU"] != docs[1]["SKU"] and docs[0]["UUID"] != docs[1]["UUID"]
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    assert (
        http.post(
            base + SYSTEM + "/Actions/ComputerSystem.Reset",
            json={"ResetType": "ForceOff"},
            timeout=5,
        ).status_code
        == 204
    )
    http.post(base + SYSTEM + "/Actions/ComputerSystem.Reset", json={"ResetType": "On"}, timeout=5)
    assert lab.bmc("gpu01").power_state() in ("PoweringOn", "On")
    assert lab.bmc("gpu02").power_state() == "Off"  # per-port state isolation


def test_derived_hgx_variant_is_marked(rack, server, creds, ca_bundle):
    lab = rack([server(1)])
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    system = http.get(base + SYSTEM, timeout=5).json()
    gpu = http.get(base + SYSTEM + "/Processors/Video.Slot.5-1", timeout=5).json()
    assert system["Oem"]["Racksmith"]["Derived"] is True
    assert gpu["Oem"]["Racksmith"]["Derived"] is True and "DERIVED" in gpu["Description"]
    assert gpu["Model"] == "NVIDIA H200" and "PCIeDevice" not in gpu["Links"]
    metrics = http.get(
        base + SYSTEM + "/Processors/Video.Slot.5-1/ProcessorMetrics", timeout=5
    ).json()
    assert metrics["@odata.id"].endswith("Video.Slot.5-1/ProcessorMetrics")
    assert http.get(base + SYSTEM + "/Processors/Video.Slot.9-1", timeout=5).status_code == 404


def test_authentication_rules(rack, server, creds, ca_bundle):
    lab = rack([server(1)])
    base = f"https://{lab.target('gpu01')}"
    assert (
        requests.get(base + "/redfish/v1", verify=ca_bundle, timeout=5).status_code == 200
    )  # root is open
    denied = requests.get(base + SYSTEM, verify=ca_bundle, timeout=5)
    assert denied.status_code == 401 and denied.json()["error"]["@Message.ExtendedInfo"][0][
        "MessageId"
    ].endswith("NoValidSession")
    wrong = requests.get(base + SYSTEM, auth=("root", "nope"), verify=ca_bundle, timeout=5)
    assert wrong.status_code == 401
    login = requests.post(
        base + "/redfish/v1/SessionService/Sessions",
        json={"UserName": "root", "Password": "nope"},
        verify=ca_bundle,
        timeout=5,
    )
    assert login.status_code == 401


def test_session_semantics_and_limit(rack, server, creds, ca_bundle):
    lab = rack([server(1)], settings=Settings(session_limit=2))
    base = f"https://{lab.target('gpu01')}"
    body = {"UserName": creds.username, "Password": creds.password_value()}
    made = [
        requests.post(
            base + "/redfish/v1/SessionService/Sessions", json=body, verify=ca_bundle, timeout=5
        )
        for _ in range(3)
    ]
    assert [m.status_code for m in made] == [201, 201, 503]
    ext = made[2].json()["error"]["@Message.ExtendedInfo"][0]
    assert "RAC0218" in ext["MessageId"] and "maximum number of user sessions" in ext["Message"]
    token, location = made[0].headers["X-Auth-Token"], made[0].headers["Location"]
    listing = requests.get(
        base + "/redfish/v1/SessionService/Sessions",
        headers={"X-Auth-Token": token},
        verify=ca_bundle,
        timeout=5,
    ).json()
    assert listing["Members@odata.count"] == 2
    assert (
        requests.delete(
            base + location, headers={"X-Auth-Token": token}, verify=ca_bundle, timeout=5
        ).status_code
        == 200
    )
    assert (
        requests.get(
            base + SYSTEM, headers={"X-Auth-Token": token}, verify=ca_bundle, timeout=5
        ).status_code
        == 401
    )
    assert lab.bmc("gpu01").live_sessions() == 1


def test_allowable_values_and_read_only_properties(rack, server, creds, ca_bundle):
    lab = rack([server(1)])
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    bad_reset = http.post(
        base + SYSTEM + "/Actions/ComputerSystem.Reset", json={"ResetType": "Explode"}, timeout=5
    )
    assert bad_reset.status_code == 400 and "ActionParameterValueNotInList" in bad_reset.text
    bad_boot = http.patch(
        base + SYSTEM, json={"Boot": {"BootSourceOverrideTarget": "Floppy2"}}, timeout=5
    )
    assert bad_boot.status_code == 400 and "PropertyValueNotInList" in bad_boot.text
    read_only = http.patch(base + SYSTEM, json={"PowerState": "On"}, timeout=5)
    assert read_only.status_code == 400 and "PropertyNotWritable" in read_only.text
    malformed = http.post(
        base + SYSTEM + "/Actions/ComputerSystem.Reset",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
        timeout=5,
    )
    assert malformed.status_code == 400 and "MalformedJSON" in malformed.text


def test_power_on_twice_is_409_psu501(rack, server, creds, ca_bundle):
    lab = rack([server(1)], settings=Settings(initial_power="On"))
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    again = http.post(
        base + SYSTEM + "/Actions/ComputerSystem.Reset", json={"ResetType": "On"}, timeout=5
    )
    assert again.status_code == 409
    assert again.json()["error"]["@Message.ExtendedInfo"][0]["MessageId"] == "IDRAC.2.8.PSU501"


def test_expand_select_and_query_limits(rack, server, creds, ca_bundle):
    lab = rack([server(1)])
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    expanded = http.get(base + "/redfish/v1/Systems?$expand=.($levels=1)", timeout=5).json()
    assert expanded["Members"][0]["SKU"] == lab.bmc("gpu01").server.service_tag
    links_only = http.get(base + SYSTEM + "?$expand=~($levels=1)", timeout=5).json()
    assert links_only["Links"]["ManagedBy"][0]["FirmwareVersion"] == "6.00.30.00"
    assert set(links_only["Processors"]) == {"@odata.id"}  # '~' leaves subordinate links alone
    assert (
        http.get(base + "/redfish/v1/Systems?$expand=.($levels=2)", timeout=5).status_code == 400
    )  # MaxLevels 1
    selected = http.get(base + SYSTEM + "?$select=SKU,Model", timeout=5).json()
    assert {k for k in selected if not k.startswith("@odata")} == {"SKU", "Model"}
    paged = http.get(base + SYSTEM + "/Oem/Dell/DellSensors?$skip=50", timeout=5)
    assert paged.status_code == 200  # captured page, served by sushy-static
    assert http.get(base + "/redfish/v1/Systems?$filter=x", timeout=5).status_code == 400


def test_clock_header_and_patch(rack, server, creds, ca_bundle):
    lab = rack([server(1, faults=("bmc_clock_skew",))])
    http, base = _session(lab, "gpu01", creds, ca_bundle)
    manager = http.get(base + "/redfish/v1/Managers/iDRAC.Embedded.1", timeout=5)
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    skew = (
        datetime.fromisoformat(manager.json()["DateTime"]) - datetime.now(timezone.utc)
    ).total_seconds()
    assert 3 * 3600 < skew < 3.5 * 3600
    assert (
        parsedate_to_datetime(manager.headers["Date"]) - datetime.now(timezone.utc)
    ).total_seconds() > 3 * 3600
    fixed = http.patch(
        base + "/redfish/v1/Managers/iDRAC.Embedded.1",
        json={"DateTime": datetime.now(timezone.utc).isoformat()},
        timeout=5,
    )
    assert fixed.status_code == 200
    again = json.loads(http.get(base + "/redfish/v1/Managers/iDRAC.Embedded.1", timeout=5).text)
    assert (
        abs(
            (datetime.fromisoformat(again["DateTime"]) - datetime.now(timezone.utc)).total_seconds()
        )
        < 3
    )
