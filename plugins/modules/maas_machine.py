#!/usr/bin/python
# racksmith: a MAAS machine per server: enlisted, commissioned, boot disk pinned; or quarantined.
from __future__ import annotations

DOCUMENTATION = r"""
module: maas_machine
short_description: Ensure a MAAS machine for a server's PXE MAC; commission it and pin its boot disk
author: racksmith maintainers (!UNKNOWN)
description:
  - Finds the machine by its lowercase PXE MAC; creates it with Redfish power parameters, or
    updates only the fields that differ, so a rerun reports C(changed=false).
  - C(state=ready) also commissions it (a silent revert to New is a failure naming the BMC
    event) and, after every commissioning, pins the boot disk chosen by C(boot_disk), re-applies
    the storage layout and reads C(boot_disk) back.
  - C(state=broken) marks an existing machine Broken with C(reason) (quarantine); it never
    creates one.
  - Check mode reports what it would do and changes nothing.
  - "Run it on the controller (C(delegate_to: localhost)); it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_maas
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.maas
options:
  state:
    description: C(present) (record only), C(ready) (commissioned, boot disk pinned), C(broken).
    type: str
    default: ready
    choices: [present, ready, broken]
  pxe_mac:
    description: The PXE NIC's MAC (any case); identifies the machine.
    type: str
    required: true
  hostname:
    description: MAAS hostname (the inventory hostname); required unless C(state=broken).
    type: str
  power_type:
    description: MAAS power driver.
    type: str
    default: redfish
    choices: [redfish, ipmi, manual]
  power_address:
    description: BMC address, C(HOST) or C(HOST:PORT).
    type: str
  power_user:
    description: BMC user.
    type: str
  power_pass:
    description: BMC password (never logged); prefer C(power_pass_env) or C(power_credentials_file).
    type: str
  power_user_env:
    description: Environment variable with the BMC user (when C(power_user) is unset).
    type: str
    default: RACKSMITH_BMC_USERNAME
  power_pass_env:
    description: Environment variable with the BMC password (when C(power_pass) is unset).
    type: str
    default: RACKSMITH_BMC_PASSWORD
  power_credentials_file:
    description: C(KEY=VALUE) file read when the environment lacks those variables.
    type: str
  power_node_id:
    description: Redfish system id (MAAS defaults to the first member of /redfish/v1/Systems).
    type: str
  pool:
    description: Resource pool.
    type: str
  zone:
    description: Physical zone.
    type: str
  description:
    description: Free-text description.
    type: str
  tags:
    description: Manual tags to add (created when missing; tags are never removed).
    type: list
    elements: str
    default: []
  boot_disk:
    description:
      - Boot-disk rule (required for C(state=ready)); all given keys must match exactly one
        physical disk. Keys C(serial), C(model), C(id_path) (shell globs), C(size) (within
        1%) or C(min_size)/C(max_size) (C(480G), C(3.84TB)), and C(tie_break) (C(error),
        C(serial), C(id_path)).
    type: dict
  storage_layout:
    description: Layout re-applied on the pinned disk.
    type: str
    default: flat
    choices: [flat, lvm, bcache, vmfs6, vmfs7, custom, blank]
  recommission:
    description: Commission again even when Ready (or release first when allocated/deployed/broken).
    type: bool
    default: false
  enable_ssh:
    description: Keep SSH open in the commissioning environment (debugging).
    type: bool
    default: false
  skip_bmc_config:
    description: Do not let commissioning create a MAAS user on the BMC.
    type: bool
    default: true
  testing_scripts:
    description: Testing scripts to run while commissioning (C(none) skips them).
    type: str
  reason:
    description: Why the machine is quarantined (C(state=broken)).
    type: str
"""

EXAMPLES = r"""
# MAAS connection settings once per play, for every maas_* module:
#   module_defaults:
#     group/racksmith.core.maas: {credentials_file: /etc/racksmith/maas.env}
- name: Enlist, commission and pin the boot disk to the BOSS volume
  racksmith.core.maas_machine:
    hostname: "{{ inventory_hostname }}"
    pxe_mac: "{{ redfish_pxe_mac }}"
    power_address: "{{ redfish_bmc }}"
    power_credentials_file: /etc/racksmith/bmc.env   # or RACKSMITH_BMC_USERNAME/PASSWORD
    boot_disk: {model: "DELLBOSS*"}
    tags: [h200]
  delegate_to: localhost
"""

RETURN = r"""
actions:
  description: What was done, in words (or would be, in check mode).
  type: list
  returned: always
machine:
  description: system_id, hostname, status, status_name, pxe_mac, ip_addresses, tags, boot_disk...
  type: dict
  returned: when the machine exists
cause:
  description: The named cause of a failed commissioning.
  type: str
  returned: failure
triage:
  description: Events, log tail, status and error_description behind the cause.
  type: dict
  returned: failure
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    machine_diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.maas import lifecycle, machines
    from racksmith.maas.ansible import (
        BOOT_DISK_ARGS,
        CONNECTION_ARGS,
        POWER_ARGS,
        WAIT_ARGS,
        boot_disk_rule,
        policy,
        power_parameters,
        run,
    )
    from racksmith.maas.errors import MaasConfigError
    from racksmith.maas.machines import MachineSpec, Outcome


def spec_from(p: dict) -> MachineSpec:
    return MachineSpec(
        hostname=p["hostname"] or "",
        pxe_mac=p["pxe_mac"],
        power_type=p["power_type"],
        power_parameters=power_parameters(p),
        pool=p["pool"],
        zone=p["zone"],
        description=p["description"],
        tags=tuple(p["tags"]),
    )


def step(module: AnsibleModule, client) -> Outcome:
    """The step for ``state``; with ``--diff``, the machine before (one extra read) and after."""
    before = machines.find(client, mac=module.params["pxe_mac"]) if module._diff else None
    outcome = act(module, client)
    if module._diff:
        outcome.diff = machine_diff(before, outcome.machine)
    return outcome


def act(module: AnsibleModule, client) -> Outcome:
    p, check = module.params, module.check_mode
    if p["state"] == "broken":
        if not p["reason"]:
            raise MaasConfigError("state=broken needs a reason")
        machine = machines.find(client, mac=p["pxe_mac"])
        if machine is None:
            return Outcome(
                warnings=[f"no MAAS machine has PXE MAC {p['pxe_mac']}; nothing to mark"]
            )
        return machines.mark_broken(client, machine, p["reason"], check_mode=check)
    if p["state"] == "present":
        return machines.ensure(client, spec_from(p), check_mode=check)
    rule = boot_disk_rule(p)
    if rule is None:
        raise MaasConfigError("state=ready needs a boot_disk rule (serial, model, id_path or size)")
    options = lifecycle.CommissionOptions(
        enable_ssh=p["enable_ssh"],
        skip_bmc_config=p["skip_bmc_config"],
        testing_scripts=p["testing_scripts"],
    )
    return lifecycle.ensure_ready(
        client,
        spec_from(p),
        rule,
        policy(p),
        layout=p["storage_layout"],
        recommission=p["recommission"],
        options=options,
        check_mode=check,
    )


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **CONNECTION_ARGS,
            **WAIT_ARGS,
            **BOOT_DISK_ARGS,
            "state": {"type": "str", "default": "ready", "choices": ["present", "ready", "broken"]},
            "pxe_mac": {"type": "str", "required": True},
            "hostname": {"type": "str"},
            **POWER_ARGS,
            "pool": {"type": "str"},
            "zone": {"type": "str"},
            "description": {"type": "str"},
            "tags": {"type": "list", "elements": "str", "default": []},
            "recommission": {"type": "bool", "default": False},
            "enable_ssh": {"type": "bool", "default": False},
            "skip_bmc_config": {"type": "bool", "default": True},
            "testing_scripts": {"type": "str"},
            "reason": {"type": "str"},
        },
        required_if=[("state", "ready", ("hostname",)), ("state", "present", ("hostname",))],
        supports_check_mode=True,
    )
    run(module, lambda client: step(module, client))


if __name__ == "__main__":
    main()
