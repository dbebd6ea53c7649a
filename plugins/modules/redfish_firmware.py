#!/usr/bin/python
# racksmith: flash firmware through the BMC's UpdateService and verify it (controller side).
from __future__ import annotations

DOCUMENTATION = r"""
module: redfish_firmware
short_description: Flash firmware through Redfish, follow the task, verify the new version
author: racksmith maintainers (!UNKNOWN)
description:
  - Each entry of C(updates) names a component (an identity glob, as in baselines), the version
    it must report after, and the image; entries run in order.
  - A local C(image) is pushed to the BMC's C(MultipartHttpPushUri) where it offers one; otherwise
    C(image_uri) (the site's image server) is handed to C(UpdateService.SimpleUpdate).
  - Follows the task monitor (C(Retry-After), C(TaskState), messages), waits out a BMC that resets
    mid-update and logs in again; a task that disappears is judged by the firmware inventory.
  - Each entry has its own deadline (C(timeout)); the whole host has C(deadline) + C(wait).
  - Verifies the new version in the firmware inventory, running or staged (then the activation,
    a reboot or an AC cycle, is still owed and said). A flash that fails or cannot be verified
    fails the task, is never retried, and later entries are not attempted.
  - Dry run by default (C(dry_run=true)) and in check mode, saying which method it would use.
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_redfish
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.redfish
options:
  updates:
    description: The flashes, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      component:
        description: Component identity glob (C(BIOS.Setup.1-1), C(HGX_FW_*)).
        type: str
        required: true
      version:
        description: The version the component must report after the flash.
        type: str
        required: true
      image:
        description: Local image file, pushed by multipart where the BMC offers it.
        type: str
      image_uri:
        description: URL of the image on the site's server, for C(SimpleUpdate).
        type: str
      timeout:
        description: Seconds for this flash (push, task, verification).
        type: float
        default: 1800
      targets:
        description: C(Targets) URIs for the update, when the BMC needs them.
        type: list
        elements: str
        default: []
  dry_run:
    description: Only say what would be flashed and how (the default); C(false) flashes.
    type: bool
    default: true
  wait:
    description: Seconds added to C(deadline) for the whole host's updates (the global deadline).
    type: float
    default: 3600
  poll:
    description: Seconds between task polls when the BMC sends no C(Retry-After).
    type: float
    default: 5
  verify_wait:
    description: Seconds to wait for the inventory to report the new version after the task.
    type: float
    default: 120
  reset:
    description:
      - Reset the server once when a flashed image is only staged (it runs after the next reset,
        as iDRAC BIOS and CPLD packages do), then wait until every staged component reports its
        new version as the running image (C(reset_wait)); the reset takes its slot in the fleet's
        power pacing. A server that is off is powered on instead.
      - C(false) (the default) resets nothing; a staged image is then reported as C(staged),
        "staged, needs a reset", never as a finished update.
    type: bool
    default: false
  reset_wait:
    description: Seconds for the reset and for the staged images to run after it.
    type: float
    default: 600
"""

EXAMPLES = r"""
- name: Flash the BIOS from the site's image server
  racksmith.core.redfish_firmware:
    bmc: "{{ redfish_bmc }}"
    updates:
      - {component: BIOS.Setup.1-1, version: "1.9.0", image_uri: "http://images.site/bios-1.9.0.exe"}
    dry_run: false
  delegate_to: localhost
"""

RETURN = r"""
updates:
  description: per entry, component, wanted, before, status (ok, staged, already, would, failed,
    not-attempted), method, verified (active, staged), after, task, messages, reason
  type: list
  elements: dict
  returned: always
needs_reset:
  description: the components flashed but only staged (no reset allowed); they run after a reset
  type: list
  elements: str
  returned: when an image was left staged
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
    from racksmith.redfish import update
    from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, run


def main():
    RACKSMITH.require()
    entry = {
        "component": {"type": "str", "required": True},
        "version": {"type": "str", "required": True},
        "image": {"type": "str"},
        "image_uri": {"type": "str"},
        "timeout": {"type": "float", "default": 1800.0},
        "targets": {"type": "list", "elements": "str", "default": []},
    }
    module = AnsibleModule(
        argument_spec={
            **COMMON_ARGUMENTS,
            "updates": {"type": "list", "elements": "dict", "required": True, "options": entry},
            "dry_run": {"type": "bool", "default": True},
            "wait": {"type": "float", "default": 3600.0},
            "poll": {"type": "float", "default": 5.0},
            "verify_wait": {"type": "float", "default": 120.0},
            "reset": {"type": "bool", "default": False},
            "reset_wait": {"type": "float", "default": 600.0},
        },
        supports_check_mode=True,
    )
    p = module.params
    dry = module.check_mode or p["dry_run"]
    try:
        steps = [update.UpdateStep.from_dict(e) for e in p["updates"]]
    except ValueError as exc:
        module.fail_json(msg=str(exc))

    def action(client):
        try:
            result = update.update(
                client,
                steps,
                check_mode=dry,
                poll=p["poll"],
                verify_wait=p["verify_wait"],
                reset=p["reset"],
                reset_wait=p["reset_wait"],
            )
        except update.UpdateFailed as exc:
            module.fail_json(
                msg=exc.reason, error_kind=exc.kind.value, bmc=str(client.target), **exc.details
            )
        result.details["diff"] = diff(result.before, result.after)
        result.details["dry_run"] = dry
        return result

    run(module, action)


if __name__ == "__main__":
    main()
