"""The validate phase's decisions on the controller: what each host contributes to the golden
set, and which HCA ports each host hands to the fabric cabling check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Why a host has no validation result when no phase recorded one.
NO_RESULT = "no validation result: unreachable, or failed before this phase"


def golden_inputs(hosts: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Host name -> its golden-set input: the health role's entry, else the failure.

    Every host that reached deployment or was quarantined gets an entry, so the golden set
    accounts for the whole rack. A host without the health role's entry is a failure with the
    first reason a phase recorded (fail closed: never an empty, passable entry).
    """
    out: dict[str, dict[str, Any]] = {}
    for name, hv in sorted(hosts.items()):
        entry = hv.get("health_golden_entry")
        if isinstance(entry, Mapping) and entry:
            out[name] = dict(entry)
            continue
        why = hv.get("racksmith_failure_reason") or hv.get("racksmith_quarantine_reason")
        out[name] = {"failure": str(why or NO_RESULT).strip()}
    return out


def hca_ports(hosts: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Host name -> {HCA device: node GUID} for ``racksmith fabric cabling --hosts``.

    Hosts name themselves by service tag (the inventory hostname), so a miscabled HCA is named
    by the server it sits in. Hosts without InfiniBand HCAs are left out.
    """
    out: dict[str, dict[str, str]] = {}
    for name, hv in sorted(hosts.items()):
        guids = hv.get("racksmith_hca_guids")
        if isinstance(guids, Mapping) and guids:
            out[name] = {str(dev): str(guid) for dev, guid in sorted(guids.items())}
    return out


#: The command (an argv for ``ansible.builtin.command``) that prints one line
#: ``<device> <link layer> <node GUID>`` per RDMA device of the host. It runs on the GPU host,
#: where racksmith is not installed, so it only reads files; :func:`hca_guids` decides.
HCA_PROBE_ARGV = [
    "/bin/sh",
    "-c",
    "for d in /sys/class/infiniband/*; do\n"
    '  [ -r "$d/ports/1/link_layer" ] || continue\n'
    '  echo "${d##*/} $(cat "$d/ports/1/link_layer") $(cat "$d/node_guid" 2>/dev/null || echo -)"\n'
    "done",
]


def hca_guids(probe_output: str) -> dict[str, str]:
    """:data:`HCA_PROBE_ARGV`'s output -> {device: node GUID} of the InfiniBand HCAs (port 1's
    link layer ``InfiniBand``; Ethernet-mode ConnectX and unreadable GUIDs are left out).
    A line that is not three fields raises ValueError naming it."""
    out: dict[str, str] = {}
    for number, line in enumerate(probe_output.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(
                f"HCA probe line {number}: expected '<device> <link layer> <GUID>', got {line!r}"
            )
        device, layer, guid = fields
        if layer == "InfiniBand" and guid != "-":
            out[device] = guid
    return out
