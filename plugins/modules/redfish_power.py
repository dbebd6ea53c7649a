#!/usr/bin/python
# racksmith: power a server through its BMC and read the result back (runs on the controller).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_power
short_description: Power a server on, off, cycle or restart it through Redfish, with read-back
author: racksmith maintainers (!UNKNOWN)
description:
  - Reads the power state first; C(on) on a server that is on (and C(off) on one that is off)
    changes nothing. Otherwise posts C(ComputerSystem.Reset) with a reset type the BMC
    advertises, then polls C(PowerState) until it reaches the goal or C(wait) runs out.
  - iDRAC's 409 C(PSU501) ("already powered on") is treated as success with a warning.
  - Where a BMC lists the reset types only in the action's C(@Redfish.ActionInfo) (Supermicro,
    NVIDIA DGX) they are read from there; a goal the BMC has no reset type for is refused.
  - Check mode reports the reset type it would post and changes nothing.
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
options:
  state:
    description: C(on), C(off) (forced), C(graceful-off), C(cycle) (on if it was off), C(restart).
    type: str
    required: true
    choices: ["on", "off", graceful-off, cycle, restart]
  wait:
    description: Seconds to wait for the new power state.
    type: float
    default: 120
  poll:
    description: Seconds between read-backs.
    type: float
    default: 2
"""

EXAMPLES = r"""
# BMC connection settings once per play, for every redfish_* module:
#   module_defaults:
#     group/racksmith.core.redfish: {credentials_file: /etc/racksmith/bmc.env}
- name: Power on
  racksmith.core.redfish_power:
    bmc: "{{ redfish_bmc }}"
    state: "on"
    ca_bundle: /etc/racksmith/bmc-ca.pem
  delegate_to: localhost
"""

RETURN = r"""
before:
  description: PowerState before
  type: str
  returned: success
after:
  description: PowerState read back
  type: str
  returned: success
reset_type:
  description: ResetType posted (or that would be)
  type: str
  returned: changed
error_kind:
  description: why it failed (unreachable, auth_failed, timeout, ...)
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


# The power state each goal ends in: what check mode's diff predicts.
_GOAL_STATE = {"on": "On", "cycle": "On", "restart": "On", "off": "Off", "graceful-off": "Off"}


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "state": {"type": "str", "required": True, "choices": list(actions.POWER_STATES)},
            "wait": {"type": "float", "default": 120.0},
            "poll": {"type": "float", "default": 2.0},
        },
        supports_check_mode=True,
    )
    p = module.params

    def action(client):
        result = actions.power(
            client,
            p["state"],
            check_mode=module.check_mode,
            wait=p["wait"],
            poll=p["poll"],
            vendor=p["vendor"],
            system_id=p["system"],
        )
        after = _GOAL_STATE[p["state"]] if module.check_mode and result.changed else result.after
        result.details["diff"] = diff({"power_state": result.before}, {"power_state": after})
        return result

    run(module, action)


if __name__ == "__main__":
    main()
