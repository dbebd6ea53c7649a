#!/usr/bin/python
# racksmith: enlist or deploy a whole batch of MAAS machines at once, from one task.
from __future__ import annotations

DOCUMENTATION = r"""
module: maas_fleet
short_description: Enlist or deploy many MAAS machines at once, all in flight together
author: racksmith maintainers (!UNKNOWN)
description:
  - The batch form of M(racksmith.core.maas_machine) (C(state=ready)) and
    M(racksmith.core.maas_deploy) (C(state=deployed)), for one task run once on the controller
    (C(run_once) with C(delegate_to) C(localhost)). Every host's operation is started and waited
    for together, so how many machines install at once is C(max_in_flight) (default all), not
    Ansible's C(forks).
  - Each host gets exactly the single-host step (same checks, budgets per state, triage and
    idempotence, so a rerun on finished machines reports C(changed=false)); the waits share one
    polling loop that reads all waiting machines with one C(GET machines/?id=...) per 100
    machines, every C(poll_interval) (jittered).
  - A host that fails does not fail the task. Its entry in C(hosts) has C(failed), C(msg),
    C(cause) and C(triage), and the play fails that host (see EXAMPLES). Bad arguments do fail
    the task.
  - While it waits it appends progress lines (JSON, one per poll round, with counts per state and
    the hosts that failed since the last line) to C(progress_file); the racksmith_report callback
    prints them during the run.
  - "Run it on the controller; it needs the racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_maas
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.maas
options:
  state:
    description:
      - C(deployed) deploys each machine (as M(racksmith.core.maas_deploy)); C(ready) enlists,
        commissions and pins the boot disk (as M(racksmith.core.maas_machine) C(state=ready)).
    type: str
    default: deployed
    choices: [deployed, ready]
  hosts:
    description: The batch, one entry per server.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Inventory hostname (the MAAS hostname when enlisting); the key of the result.
        type: str
        required: true
      pxe_mac:
        description: PXE MAC (any case); identifies the machine.
        type: str
        required: true
      user_data:
        description: This host's cloud-init user data (C(state=deployed)); default C(user_data).
        type: str
      power_address:
        description: BMC address (C(state=ready)).
        type: str
      power_user:
        description: BMC user (C(state=ready)).
        type: str
      power_user_env:
        description: Environment variable with the BMC user.
        type: str
        default: RACKSMITH_BMC_USERNAME
      power_pass_env:
        description: Environment variable with the BMC password.
        type: str
        default: RACKSMITH_BMC_PASSWORD
      power_credentials_file:
        description: C(KEY=VALUE) file read when the environment lacks those variables.
        type: str
      power_node_id:
        description: Redfish system id.
        type: str
  max_in_flight:
    description:
      - How many machines are in flight (being started, installing, waited for) at once; the
        rest queue. Default all. Size it to what the site's MAAS rack controllers and apt cache
        serve (docs/maas.md).
    type: int
  request_rate:
    description: Most requests per second all the batch's clients together send to MAAS.
    type: float
    default: 50.0
  progress_file:
    description:
      - File the progress lines are appended to. Default C(progress.jsonl) in the run directory
        C($RACKSMITH_RUN_DIR) when that is set (the report callback sets it); none otherwise.
    type: path
  phase:
    description: Name in the progress lines; default C(deploy) or C(enlist) by C(state).
    type: str
  distro_series:
    description: Ubuntu series to install (C(state=deployed)).
    type: str
    default: jammy
  hwe_kernel:
    description: Kernel, e.g. C(hwe-22.04) (C(state=deployed)).
    type: str
  user_data:
    description: cloud-init user data for hosts without their own (C(state=deployed)).
    type: str
  redeploy_failed:
    description: Release and redeploy machines found in Failed deployment (C(state=deployed)).
    type: bool
    default: false
  comment:
    description: Comment for MAAS's event log (C(state=deployed)).
    type: str
  boot_disk:
    description:
      - Boot-disk rule (required for C(state=ready); checked before deploying); see
        M(racksmith.core.maas_machine).
    type: dict
  storage_layout:
    description: Layout re-applied on the pinned disk.
    type: str
    default: flat
    choices: [flat, lvm, bcache, vmfs6, vmfs7, custom, blank]
  power_type:
    description: MAAS power driver (C(state=ready)).
    type: str
    default: redfish
    choices: [redfish, ipmi, manual]
  tags:
    description: Manual tags added to every machine (C(state=ready)).
    type: list
    elements: str
    default: []
  pool:
    description: Resource pool (C(state=ready)).
    type: str
  zone:
    description: Physical zone (C(state=ready)).
    type: str
  recommission:
    description: Commission again even when Ready (C(state=ready)).
    type: bool
    default: false
  skip_bmc_config:
    description: Do not let commissioning create a MAAS user on the BMC.
    type: bool
    default: true
  testing_scripts:
    description: Testing scripts to run while commissioning (C(none) skips them).
    type: str
"""

EXAMPLES = r"""
# In a play over the servers (hosts: "bmc_ok:!quarantine"):
- name: Every server's entry in the batch, built once
  ansible.builtin.set_fact:
    racksmith_fleet_batch: >-
      {{ ansible_play_hosts | racksmith.core.maas_fleet_batch(hostvars, 'deploy') }}
  run_once: true

- name: Deploy every server at once
  racksmith.core.maas_fleet:
    state: deployed
    hwe_kernel: hwe-22.04
    hosts: "{{ racksmith_fleet_batch.entries }}"
  run_once: true
  delegate_to: localhost
  register: fleet

- name: Fail the hosts whose deployment failed, with MAAS's named cause
  ansible.builtin.fail:
    msg: "{{ fleet.hosts[inventory_hostname].cause or fleet.hosts[inventory_hostname].msg }}"
  when: fleet.hosts[inventory_hostname].failed
"""

RETURN = r"""
hosts:
  description:
    - Per host (by C(name)) C(failed), C(changed), C(actions), C(warnings), C(machine) (status,
      ip_addresses, boot_disk...), and on failure C(msg), C(cause) and C(triage).
  type: dict
  returned: always
failed_hosts:
  description: Names of the hosts that failed.
  type: list
  returned: always
counts:
  description: Hosts per final state (C(deployed), C(ready), C(failed)...).
  type: dict
  returned: always
rounds:
  description: Shared polling rounds, and C(batch_reads) the batched machine reads they made.
  type: int
  returned: always
"""

import threading
from collections import Counter

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
    machine_diff,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.maas import fleet, lifecycle, machines
    from racksmith.maas.ansible import (
        BOOT_DISK_ARGS,
        CONNECTION_ARGS,
        FLEET_HOST_ARGS,
        WAIT_ARGS,
        boot_disk_rule,
        connect,
        policy,
        power_parameters,
    )
    from racksmith.maas.clock import RateLimiter
    from racksmith.maas.errors import MaasConfigError, MaasError
    from racksmith.maas.machines import MachineSpec
    from racksmith.maas.progress import ProgressWriter, default_path


def fleet_hosts(p: dict) -> list:
    """The batch from the arguments; enlisting builds each host's record spec (BMC password by
    reference, read here)."""
    out = []
    for entry in p["hosts"]:
        spec = None
        if p["state"] == "ready":
            spec = MachineSpec(
                hostname=entry["name"],
                pxe_mac=entry["pxe_mac"],
                power_type=p["power_type"],
                power_parameters=power_parameters({**entry, "power_type": p["power_type"]}),
                pool=p["pool"],
                zone=p["zone"],
                tags=tuple(p["tags"]),
            )
        data = entry.get("user_data")
        out.append(
            fleet.FleetHost(
                name=entry["name"],
                pxe_mac=entry["pxe_mac"],
                spec=spec,
                user_data=data.encode() if data is not None else None,
            )
        )
    return out


def operation(module: AnsibleModule):
    p, check = module.params, module.check_mode
    rule = boot_disk_rule(p)
    if p["state"] == "ready":
        if rule is None:
            raise MaasConfigError(
                "state=ready needs a boot_disk rule (serial, model, id_path or size)"
            )
        return fleet.ready_operation(
            rule,
            layout=p["storage_layout"],
            recommission=p["recommission"],
            options=lifecycle.CommissionOptions(
                skip_bmc_config=p["skip_bmc_config"], testing_scripts=p["testing_scripts"]
            ),
            check_mode=check,
        )
    return fleet.deploy_operation(
        lifecycle.DeployOptions(
            distro_series=p["distro_series"],
            hwe_kernel=p["hwe_kernel"],
            user_data=p["user_data"].encode() if p["user_data"] is not None else None,
            comment=p["comment"],
        ),
        rule=rule,
        layout=p["storage_layout"],
        redeploy_failed=p["redeploy_failed"],
        check_mode=check,
    )


def with_diff(op, diffs: dict):
    """The operation, recording each host's machine before (one extra read) and after."""

    def wrapped(client, wait_policy, host):
        before = machines.find(client, mac=host.pxe_mac)
        outcome = op(client, wait_policy, host)
        if outcome.changed:
            diffs[host.name] = machine_diff(before, outcome.machine)
        return outcome

    return wrapped


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **CONNECTION_ARGS,
            **WAIT_ARGS,
            **BOOT_DISK_ARGS,
            "state": {"type": "str", "default": "deployed", "choices": ["deployed", "ready"]},
            "hosts": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": FLEET_HOST_ARGS,
            },
            "max_in_flight": {"type": "int"},
            "request_rate": {"type": "float", "default": 50.0},
            "progress_file": {"type": "path"},
            "phase": {"type": "str"},
            "distro_series": {"type": "str", "default": "jammy"},
            "hwe_kernel": {"type": "str"},
            "user_data": {"type": "str"},
            "redeploy_failed": {"type": "bool", "default": False},
            "comment": {"type": "str"},
            "power_type": {
                "type": "str",
                "default": "redfish",
                "choices": ["redfish", "ipmi", "manual"],
            },
            "tags": {"type": "list", "elements": "str", "default": []},
            "pool": {"type": "str"},
            "zone": {"type": "str"},
            "recommission": {"type": "bool", "default": False},
            "skip_bmc_config": {"type": "bool", "default": True},
            "testing_scripts": {"type": "str"},
        },
        supports_check_mode=True,
    )
    p = module.params
    phase = p["phase"] or ("deploy" if p["state"] == "deployed" else "enlist")
    limiter = (
        RateLimiter(p["request_rate"]) if p["request_rate"] and p["request_rate"] > 0 else None
    )
    lock = threading.Lock()
    clients = []

    def client():
        made = connect(p)
        made.limiter = limiter
        with lock:
            clients.append(made)
        return made

    diffs: dict = {}
    progress = None
    try:
        op = operation(module)
        if module._diff:
            op = with_diff(op, diffs)
        progress = ProgressWriter(p["progress_file"] or default_path())
        batch = fleet.run(
            fleet_hosts(p),
            op,
            connect=client,
            policy=policy(p),
            phase=phase,
            max_in_flight=p["max_in_flight"],
            progress=progress,
        )
    except MaasError as exc:
        scrub = clients[0].redact if clients else str
        module.fail_json(msg=scrub(str(exc)))
    results = {name: r.as_dict() for name, r in batch.results.items()}
    for name, result in results.items():
        for warning in result.pop("warnings"):
            module.warn(f"{name}: {warning}")
    if progress.error:
        module.warn(progress.error)
    counts = Counter(r.state for r in batch.results.values())
    out = {
        "changed": batch.changed,
        "hosts": results,
        "failed_hosts": batch.failed,
        "counts": dict(counts),
        "rounds": batch.rounds,
        "batch_reads": batch.batch_reads,
        "msg": f"{phase}: "
        + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        + f" of {len(results)} hosts",
    }
    if module._diff:
        out["diff"] = [diffs[name] for name in results if name in diffs]
    module.exit_json(**out)


if __name__ == "__main__":
    main()
