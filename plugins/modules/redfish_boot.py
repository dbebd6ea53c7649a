#!/usr/bin/python
# racksmith: one-time boot override (PXE by default) through Redfish, read back (controller side).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_boot
short_description: Set a one-time boot override (PXE by default) through Redfish and read it back
description:
  - Reads the override first; if the next boot is already set once to C(target), nothing changes.
  - Checks C(target) against the BMC's allowable values, PATCHes the override, then reads it
    back. Success is what the BMC reports afterwards, not the PATCH status. An iDRAC that
    answers 400 "depends on other attribute(s)" but applies the override succeeds with a
    warning, as does C(Pxe) read back as C(UefiTarget).
  - Check mode says what it would set and changes nothing.
extends_documentation_fragment: [racksmith_redfish]
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
  redfish_boot:
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
error_kind:
  description: why it failed
  type: str
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule

from racksmith.redfish import actions
from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, run


def main():
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "target": {"type": "str", "default": "Pxe"},
            "mode": {"type": "str", "choices": ["UEFI", "Legacy"]},
        },
        supports_check_mode=True,
    )
    p = module.params
    run(
        module,
        lambda c: actions.boot_once(c, p["target"], mode=p["mode"], check_mode=module.check_mode),
    )


if __name__ == "__main__":
    main()
