#!/usr/bin/python
# racksmith: deploy Ubuntu on a commissioned MAAS machine and wait until it is Deployed.
from __future__ import annotations

DOCUMENTATION = r"""
module: maas_deploy
short_description: Deploy Ubuntu (jammy, a chosen HWE kernel, cloud-init user data) through MAAS
author: racksmith maintainers (!UNKNOWN)
description:
  - A Deployed machine is left as it is (C(changed=false)); a machine still Deploying is waited
    for; a Ready one is deployed after its boot disk is checked against C(boot_disk) (and
    re-pinned if someone recommissioned it).
  - A machine in Failed deployment is reported with its named cause (events and installation
    log), not redeployed, unless C(redeploy_failed) asks for release and redeploy.
  - Waits poll politely with per-state budgets; a failure status, a revert or a spent budget
    fails the task with C(cause) and C(triage).
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_maas
  - racksmith.core.racksmith_maas.selector
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.maas
options:
  distro_series:
    description: Ubuntu series to install.
    type: str
    default: jammy
  hwe_kernel:
    description: Kernel, e.g. C(hwe-22.04) or C(ga-22.04); default MAAS's choice.
    type: str
  user_data:
    description: cloud-init user data (text); sent base64-encoded.
    type: str
  boot_disk:
    description:
      - Boot-disk rule checked (and re-pinned) right before deploying; see
        M(racksmith.core.maas_machine).
    type: dict
  storage_layout:
    description: Layout re-applied when the boot disk has to be re-pinned.
    type: str
    default: flat
    choices: [flat, lvm, bcache, vmfs6, vmfs7, custom, blank]
  redeploy_failed:
    description: Release and redeploy a machine found in Failed deployment.
    type: bool
    default: false
  comment:
    description: Comment for MAAS's event log.
    type: str
"""

EXAMPLES = r"""
- name: Deploy Ubuntu 22.04 with the HWE kernel
  racksmith.core.maas_deploy:
    pxe_mac: "{{ redfish_pxe_mac }}"
    hwe_kernel: hwe-22.04
    user_data: "{{ inventory_hostname | racksmith.core.cloud_config(pxe_mac=redfish_pxe_mac) }}"
    boot_disk: {model: "DELLBOSS*"}
  delegate_to: localhost
"""

RETURN = r"""
actions:
  description: What was done, in words.
  type: list
  returned: always
machine:
  description: The machine after the step (status, ip_addresses, boot_disk...).
  type: dict
  returned: when the machine exists
cause:
  description: The named cause of a failed deployment.
  type: str
  returned: failure
triage:
  description: Events, installation log tail, status and error_description behind the cause.
  type: dict
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    machine_diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.maas import lifecycle
    from racksmith.maas.ansible import (
        BOOT_DISK_ARGS,
        CONNECTION_ARGS,
        SELECTOR_ARGS,
        WAIT_ARGS,
        boot_disk_rule,
        locate,
        policy,
        run,
    )
    from racksmith.maas.errors import MachineStateError


def step(module: AnsibleModule, client):
    p = module.params
    machine = locate(client, p)
    if machine is None:
        raise MachineStateError("no such machine in MAAS: run the enlist phase first")
    user_data = p["user_data"].encode() if p["user_data"] is not None else None
    options = lifecycle.DeployOptions(
        distro_series=p["distro_series"],
        hwe_kernel=p["hwe_kernel"],
        user_data=user_data,
        comment=p["comment"],
    )
    outcome = lifecycle.deploy(
        client,
        machine,
        policy(p),
        options,
        rule=boot_disk_rule(p),
        layout=p["storage_layout"],
        redeploy_failed=p["redeploy_failed"],
        check_mode=module.check_mode,
    )
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
            **BOOT_DISK_ARGS,
            "distro_series": {"type": "str", "default": "jammy"},
            "hwe_kernel": {"type": "str"},
            "user_data": {"type": "str"},
            "redeploy_failed": {"type": "bool", "default": False},
            "comment": {"type": "str"},
        },
        required_one_of=[("pxe_mac", "system_id", "hostname")],
        supports_check_mode=True,
    )
    run(module, lambda client: step(module, client))


if __name__ == "__main__":
    main()
