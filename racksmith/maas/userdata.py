"""Cloud-init user data for the deploy phase, rendered from data.

It used to be a Jinja text template: an SSH key whose comment held ``: `` became a YAML
mapping, and one holding `` #`` was cut short at the comment. Building a dict and dumping it
with a YAML emitter quotes whatever needs quoting, so any key, proxy or host name survives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

HEADER = "#cloud-config\n"


def user_data(
    hostname: str,
    *,
    service_tag: str = "",
    pxe_mac: str = "",
    apt_proxy: str = "",
    ssh_authorized_keys: Iterable[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The ``#cloud-config`` document MAAS hands to the host on its first boot.

    ``/etc/racksmith/provisioned.json`` records who provisioned the host and as what, so a
    host found later can be traced to its server. ``extra`` merges site keys on top (a site's
    ``write_files`` entries are appended, not replaced).
    """
    doc: dict[str, Any] = {}
    if apt_proxy:
        doc["apt"] = {"http_proxy": apt_proxy, "https_proxy": apt_proxy}
    keys = [str(k).strip() for k in ssh_authorized_keys if str(k).strip()]
    if keys:
        doc["ssh_authorized_keys"] = keys
    record = {
        "hostname": hostname,
        "service_tag": service_tag,
        "pxe_mac": pxe_mac,
        "provisioned_by": "racksmith",
    }
    doc["write_files"] = [
        {
            "path": "/etc/racksmith/provisioned.json",
            "permissions": "0644",
            "content": json.dumps(record, sort_keys=True) + "\n",
        }
    ]
    for key, value in (extra or {}).items():
        if key == "write_files" and isinstance(value, list):
            doc["write_files"] += value
        else:
            doc[key] = value
    # Plain types only: values arriving from Ansible are str/dict subclasses (tagged, unsafe)
    # that a YAML emitter refuses; a JSON round trip keeps the values and drops the classes.
    plain = json.loads(json.dumps(doc))
    return HEADER + yaml.safe_dump(
        plain, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 16
    )
