#!/usr/bin/python
# racksmith: every BMC clock of a rack checked (and corrected) from one controller process.
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_clock_fleet
short_description: Check every BMC clock of a rack at once, correcting where the BMC allows
author: racksmith maintainers (!UNKNOWN)
description:
  - "The batch form of M(racksmith.core.redfish_clock), for one task run once on the controller
    (C(run_once), C(delegate_to: localhost)) - one process for the rack instead of one Python
    per BMC. BMCs are read C(concurrency) at a time."
  - Each server's result under C(hosts) is what M(racksmith.core.redfish_clock) returns for it
    (C(msg), C(skew_seconds), C(skewed), C(before), C(after), C(diff); or C(failed), C(msg),
    C(error_kind)). One server's failure never fails the task or the other servers.
  - Check mode reads every clock and reports what it would set; nothing is sent.
  - "Run it on the controller; it needs the racksmith package."
options:
  bmc:
    description:
      - Not used - each server's BMC is in C(bmcs); giving it is an error. The other connection
        options, set here or through C(module_defaults), are every server's defaults.
    type: str
    required: false
  bmcs:
    description: Inventory name -> the server's BMC as C(HOST) or C(HOST:PORT).
    type: dict
    required: true
  connections:
    description:
      - Inventory name -> how to reach that BMC (the inventory's C(redfish_connection)), over
        the module's own connection options - any option of M(racksmith.core.redfish_clock) but
        C(bmc) and C(password), such as C(credentials_file), C(username_env), C(password_env),
        C(ca_bundle), C(validate_certs) and C(scheme).
      - Empty values are left out; credentials go by reference only.
    type: dict
    default: {}
  max_skew:
    description: Seconds of skew tolerated.
    type: float
    default: 5
  correct:
    description: Set a BMC's clock when it is skewed.
    type: bool
    default: false
  concurrency:
    description: BMCs read at once.
    type: int
    default: 32
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
"""

EXAMPLES = r"""
- name: Check and correct every BMC clock of the play at once
  racksmith.core.redfish_clock_fleet:
    bmcs: >-
      {{ dict(ansible_play_hosts
              | zip(ansible_play_hosts | map('extract', hostvars, 'redfish_bmc'))) }}
    connections: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars)
              | map(attribute='redfish_connection', default={}))) }}
    correct: true
  run_once: true
  delegate_to: localhost
  register: clocks
"""

RETURN = r"""
hosts:
  description: each server's result, by inventory name (see M(racksmith.core.redfish_clock))
  type: dict
  returned: always
counts:
  description: servers within the skew, corrected (or that would be), left skewed, failed
  type: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.redfish import clocks
    from racksmith.redfish.ansible_support import COMMON_ARGUMENTS


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "bmc": {"type": "str"},  # each server's is in bmcs
            "bmcs": {"type": "dict", "required": True},
            "connections": {"type": "dict", "default": {}},
            "max_skew": {"type": "float", "default": 5.0},
            "correct": {"type": "bool", "default": False},
            "concurrency": {"type": "int", "default": clocks.DEFAULT_CONCURRENCY},
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["bmc"]:
        module.fail_json(msg="bmc is not used here: name each server's BMC in bmcs")
        return
    defaults = {k: p[k] for k in COMMON_ARGUMENTS if k != "bmc"}
    try:
        results = clocks.check_all(
            p["bmcs"],
            p["connections"],
            defaults=defaults,
            max_skew=p["max_skew"],
            correct=p["correct"],
            check_mode=module.check_mode,
            concurrency=p["concurrency"],
        )
    except clocks.ClockInputError as exc:
        module.fail_json(msg=str(exc))
        return
    counts = clocks.count(results)
    changed = [name for name, r in results.items() if r.get("changed")]
    module.exit_json(
        changed=bool(changed),
        hosts=results,
        counts=counts,
        msg=", ".join(f"{n} {what}" for what, n in counts.items()),
        diff=[
            {**results[name]["diff"], "before_header": name, "after_header": name}
            for name in changed
        ],
    )


if __name__ == "__main__":
    main()
