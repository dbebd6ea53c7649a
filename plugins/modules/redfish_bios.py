#!/usr/bin/python
# racksmith: apply BIOS attributes through the BMC's settings object, verify each (controller side).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_bios
short_description: Apply BIOS attributes through Redfish, reboot only when asked, verify each one
author: racksmith maintainers (!UNKNOWN)
description:
  - Reads the BIOS's current values and the values pending in its C(@Redfish.Settings) object,
    and diffs the wanted attributes against both, so a stale pending value that would undo a
    right setting is replaced, and a value already pending is not sent again.
  - PATCHes the settings object (Dell C(Bios/Settings), Supermicro and DGX C(Bios/SD)) with
    C(If-Match) carrying its ETag and C(@Redfish.SettingsApplyTime) C(OnReset) where the BMC
    supports it; values the BMC's attribute registry rejects are refused before anything is sent.
  - Reboots only with C(reboot=true) (a host that is off is powered on); the reset takes its slot
    in the fleet's power pacing (C(RACKSMITH_POWER_ACTIONS_PER_MINUTE)). Then every attribute is
    read back; those that did not apply are named and the task fails.
  - A BMC that already has a BIOS job pending (iDRAC C(SYS011)) fails with that reason; nothing is
    sent again.
  - Dry run by default (C(dry_run=true)) and in check mode it only says what it would do.
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
options:
  attributes:
    description: BIOS attribute name -> value, spelled as the BMC spells them.
    type: dict
    required: true
  dry_run:
    description: Only say what would be done (the default); C(false) applies.
    type: bool
    default: true
  reboot:
    description: Reset the host so the pending values apply, then verify them as current.
    type: bool
    default: false
  wait:
    description: Seconds to wait for the reboot and for the values to read back as current.
    type: float
    default: 600
  poll:
    description: Seconds between read-backs.
    type: float
    default: 5
"""

EXAMPLES = r"""
- name: Apply the baseline's BIOS attributes and reboot to apply them
  racksmith.core.redfish_bios:
    bmc: "{{ redfish_bmc }}"
    attributes: {SysProfile: PerfOptimized, LogicalProc: Enabled}
    dry_run: false
    reboot: true
  delegate_to: localhost
"""

RETURN = r"""
plan:
  description: to_set, pending (already pending), ok, stale_pending, unknown
  type: dict
  returned: success
verified:
  description: C(pending) (values wait for the next reset) or C(current) (applied after reboot)
  type: str
  returned: changed and not dry run
before:
  description: the attributes' current values before
  type: dict
  returned: success
after:
  description: the attributes' current values after
  type: dict
  returned: success
job:
  description: the BMC's job for the pending values (Location of the PATCH's answer), if any
  type: str
  returned: when the BMC made one
error_kind:
  description: why it failed (unsupported, incomplete, http_error, ...)
  type: str
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.redfish import bios_apply
    from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, run


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "attributes": {"type": "dict", "required": True},
            "dry_run": {"type": "bool", "default": True},
            "reboot": {"type": "bool", "default": False},
            "wait": {"type": "float", "default": 600.0},
            "poll": {"type": "float", "default": 5.0},
        },
        supports_check_mode=True,
    )
    p = module.params
    dry = module.check_mode or p["dry_run"]

    def action(client):
        result = bios_apply.apply(
            client,
            p["attributes"],
            check_mode=dry,
            reboot=p["reboot"],
            wait=p["wait"],
            poll=p["poll"],
            vendor=p["vendor"],
            system_id=p["system"],
        )
        after = dict(result.after)
        if dry and result.changed:
            after.update(p["attributes"])
        result.details["diff"] = diff(result.before, after)
        result.details["dry_run"] = dry
        return result

    run(module, action)


if __name__ == "__main__":
    main()
