"""The preflight phase's decisions about the inventory as a whole: no machine or address may
appear twice, and Redfish and MAAS must agree on each machine they both describe.

Messages are sorted, so the same inventory gives the same message on every run (Ansible hands
hosts over in hash order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from racksmith.macs import normalize_mac

#: Host variables that name one machine or address: two hosts sharing one is an error.
IDENTITY_KEYS = ("ansible_host", "redfish_pxe_mac", "maas_pxe_mac", "redfish_service_tag")
_MAC_KEYS = {"redfish_pxe_mac", "maas_pxe_mac"}


def _canonical(key: str, value: Any) -> str:
    text = str(value).strip()
    if key in _MAC_KEYS:
        return normalize_mac(text) or text.lower()
    return text.lower() if key == "redfish_service_tag" else text


def duplicate_identities(
    hosts: Iterable[Mapping[str, Any]], keys: Iterable[str] = IDENTITY_KEYS
) -> list[str]:
    """One message per value that more than one host carries (MACs compared normalised)."""
    hosts = list(hosts)
    problems = []
    for key in keys:
        owners: dict[str, set[str]] = defaultdict(set)
        for host in hosts:
            value = host.get(key)
            if value not in (None, ""):
                owners[_canonical(key, value)].add(str(host.get("inventory_hostname", "?")))
        problems += [
            f"{key} {value} on {', '.join(sorted(names))}"
            for value, names in sorted(owners.items())
            if len(names) > 1
        ]
    return problems


def mac_mismatches(hosts: Iterable[Mapping[str, Any]]) -> list[str]:
    """Hosts whose Redfish and MAAS PXE MACs differ (two machines merged under one name)."""
    out = []
    for host in hosts:
        rf, maas = host.get("redfish_pxe_mac"), host.get("maas_pxe_mac")
        if rf and maas and _canonical("redfish_pxe_mac", rf) != _canonical("maas_pxe_mac", maas):
            out.append(f"{host.get('inventory_hostname', '?')} (Redfish {rf}, MAAS {maas})")
    return sorted(out)
