#!/usr/bin/python
# racksmith: BMC clock skew check, and correction where the BMC allows it (controller side).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_clock
short_description: Report a BMC's clock skew and correct it where the BMC allows
author: racksmith maintainers (!UNKNOWN)
description:
  - Reads C(Manager.DateTime) and compares it with the controller's clock (1 s resolution).
  - With C(correct=true) and a skew above C(max_skew), PATCHes C(DateTime) and reads it back;
    a BMC that refuses (400/405) fails with a reason pointing at NTP.
  - Never fails just because the clock is off; C(skewed) says so and playbooks decide.
  - For a whole rack from one process use M(racksmith.core.redfish_clock_fleet).
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
options:
  max_skew:
    description: Seconds of skew tolerated.
    type: float
    default: 5
  correct:
    description: Set the BMC clock when skewed.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check and correct the BMC clock
  racksmith.core.redfish_clock:
    bmc: "{{ redfish_bmc }}"
    correct: true
  delegate_to: localhost
"""

RETURN = r"""
skew_seconds:
  description: BMC minus controller after the action
  type: float
  returned: success
skewed:
  description: skew exceeds max_skew after the action
  type: bool
  returned: success
before:
  description: reading before (bmc_time, controller_time, skew_seconds)
  type: dict
  returned: success
after:
  description: reading after
  type: dict
  returned: success
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, run
    from racksmith.redfish.clocks import clock_outcome


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "max_skew": {"type": "float", "default": 5.0},
            "correct": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    run(
        module,
        lambda client: clock_outcome(
            client, max_skew=p["max_skew"], correct=p["correct"], check_mode=module.check_mode
        ),
    )


if __name__ == "__main__":
    main()
