#!/usr/bin/python
# racksmith: one-time boot override (PXE by default) through Redfish, read back (controller side).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_boot
short_description: Set a one-time boot override (PXE by default) through Redfish and read it back
author: racksmith maintainers (!UNKNOWN)
description:
  - Reads the override first; if the next boot is already set once to C(target), nothing changes.
  - Checks C(target) against the BMC's allowable values, PATCHes the override, then reads it
    back. Success is what the BMC reports afterwards, not the PATCH status. An iDRAC that
    answers 400 "depends on other attribute(s)" but applies the override succeeds with a
    warning, as does C(Pxe) read back as C(UefiTarget).
  - The vendor profile decides how the override is written. Supermicro and NVIDIA DGX get
    C(BootSourceOverrideMode) with the target (C(UEFI) unless C(mode) says otherwise). A DGX
    takes it at the system's C(@Redfish.Settings) object (C(Systems/DGX/SD)) with its ETag in
    C(If-Match); there it is pending until the next boot, so C(before) and C(after) are read
    from that object.
  - Check mode says what it would set and changes nothing.
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
options:
  target:
    description: Boot source for the next boot.
    type: str
    default: Pxe
  mode:
    description: Boot mode to request with it (left as is when unset).
    type: str
    choices: [UEFI, Legacy]
"""

EXAMPLES = r"""
- name: PXE-boot on the next power-on
  racksmith.core.redfish_boot:
    bmc: "{{ redfish_bmc }}"
  delegate_to: localhost
"""

RETURN = r"""
before:
  description: override before (enabled, target, mode)
  type: dict
  returned: success
after:
  description: override read back
  type: dict
  returned: success
payload:
  description: the PATCH body it would send (the vendor's boot-once payload)
  type: dict
  returned: check mode, when it would change something
error_kind:
  description: why it failed
  type: str
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.redfish import actions
    from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, run


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "target": {"type": "str", "default": "Pxe"},
            "mode": {"type": "str", "choices": ["UEFI", "Legacy"]},
        },
        supports_check_mode=True,
    )
    p = module.params

    def action(client):
        result = actions.boot_once(
            client,
            p["target"],
            mode=p["mode"],
            check_mode=module.check_mode,
            vendor=p["vendor"],
            system_id=p["system"],
        )
        after = result.after
        if module.check_mode and result.changed:  # the override it would set
            sent = result.details["payload"]["Boot"]
            after = {**result.before, "enabled": "Once", "target": p["target"]}
            after["mode"] = sent.get("BootSourceOverrideMode", after["mode"])
        result.details["diff"] = diff(result.before, after)
        return result

    run(module, action)


if __name__ == "__main__":
    main()
