#!/usr/bin/python
# racksmith: release a MAAS machine (optionally erasing its disks) for re-provisioning.
from __future__ import annotations

DOCUMENTATION = r"""
module: maas_release
short_description: Release a MAAS machine back to Ready, optionally erasing its disks
author: racksmith maintainers (!UNKNOWN)
description:
  - Destructive. Acts on the one machine named by C(pxe_mac), C(system_id) or C(hostname);
    check mode says what would happen (state, erase kind) and changes nothing.
  - A Ready machine is left as is; Releasing or Disk erasing is waited for. The wait for disk
    erasing is capped client-side (MAAS has no timeout for it).
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_maas
  - racksmith.core.racksmith_maas.selector
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.maas
options:
  erase:
    description: Erase the disks while releasing.
    type: bool
    default: false
  secure_erase:
    description: Use the drives' secure erase (with C(erase)).
    type: bool
    default: false
  quick_erase:
    description: Wipe only the start and end of each disk (with C(erase)).
    type: bool
    default: false
  comment:
    description: Comment for MAAS's event log.
    type: str
"""

EXAMPLES = r"""
- name: Release a repaired host, quick-erasing its disks
  racksmith.core.maas_release:
    pxe_mac: "{{ redfish_pxe_mac }}"
    erase: true
    quick_erase: true
    comment: "racksmith reprovision"
  delegate_to: localhost
"""

RETURN = r"""
actions:
  description: What was done (or would be), in words.
  type: list
  returned: always
machine:
  description: The machine after release.
  type: dict
  returned: when the machine exists
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    machine_diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.maas import lifecycle
    from racksmith.maas.ansible import (
        CONNECTION_ARGS,
        SELECTOR_ARGS,
        WAIT_ARGS,
        locate,
        policy,
        run,
    )
    from racksmith.maas.errors import MachineStateError


def step(module: AnsibleModule, client):
    p = module.params
    machine = locate(client, p)
    if machine is None:
        raise MachineStateError("no such machine in MAAS: nothing to release")
    options = lifecycle.ReleaseOptions(
        erase=p["erase"],
        secure_erase=p["secure_erase"],
        quick_erase=p["quick_erase"],
        comment=p["comment"],
    )
    outcome = lifecycle.release(client, machine, policy(p), options, check_mode=module.check_mode)
    if module._diff:
        outcome.diff = machine_diff(machine, outcome.machine)
    return outcome


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **CONNECTION_ARGS,
            **WAIT_ARGS,
            **SELECTOR_ARGS,
            "erase": {"type": "bool", "default": False},
            "secure_erase": {"type": "bool", "default": False},
            "quick_erase": {"type": "bool", "default": False},
            "comment": {"type": "str"},
        },
        required_one_of=[("pxe_mac", "system_id", "hostname")],
        supports_check_mode=True,
    )
    run(module, lambda client: step(module, client))


if __name__ == "__main__":
    main()
