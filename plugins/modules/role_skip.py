# racksmith.core.role_skip: documentation only. The action plugin plugins/action/role_skip.py
# does the work, on the controller (the way ansible.builtin.debug is built).
from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_skip
short_description: Say, as data, that a role skips a part on this host, and why
version_added: 0.1.0
author: racksmith maintainers (!UNKNOWN)
description:
  - The one way a racksmith role announces what does not apply to a host (no NVIDIA GPU, no
    NVSwitch, no RDMA NIC, a container). See C(docs/contracts.md), section "What a role skips".
  - Returns C(racksmith_skip) with the role, the part and the reason. The report callback
    C(racksmith.core.racksmith_report) lists it per host in C(report.json), C(report.txt),
    C(report.html) and C(report.prom).
  - Prints C(<role> skipped - <reason>) (with the part after the role when it is not C(all)),
    without C(-v), as M(ansible.builtin.debug) would.
  - An action plugin only. Nothing runs on the host and it never reports a change, so a second
    run stays C(changed=0).
options:
  reason:
    description:
      - Why the part does not apply to this host, one line a person can act on (name the missing
        hardware, or the variable that would force it). Whitespace is folded. An empty reason
        fails the task.
    type: str
    required: true
  part:
    description:
      - The part skipped, named like the role's tag for it (C(nvidia_driver_fabricmanager) gives
        C(fabricmanager)). C(all) when the whole role is skipped.
    type: str
    default: all
  role:
    description:
      - The role. By default the role the task belongs to (its short name); required outside a
        role.
    type: str
extends_documentation_fragment:
  - racksmith.core.racksmith_attributes.action
"""

EXAMPLES = r"""
- name: Say why fabric manager is skipped on this host
  racksmith.core.role_skip:
    part: fabricmanager
    reason: no NVSwitch on the PCI bus
  when: not _nvidia_driver_fm_applies | bool

- name: Say why the whole role is skipped on this host
  racksmith.core.role_skip:
    reason: no NVIDIA GPU on the PCI bus (set dcgm_without_gpu to install anyway)
  when: not _dcgm_applies | bool
"""

RETURN = r"""
msg:
  description: What was skipped and why, for people reading the output.
  type: str
  returned: always
  sample: "nvidia_driver: fabricmanager skipped: no NVSwitch on the PCI bus"
racksmith_skip:
  description: The skip as the report reads it.
  type: dict
  returned: always
  contains:
    role:
      description: The role.
      type: str
      returned: always
      sample: nvidia_driver
    part:
      description: The part skipped; C(all) for the whole role.
      type: str
      returned: always
      sample: fabricmanager
    reason:
      description: Why.
      type: str
      returned: always
      sample: no NVSwitch on the PCI bus
"""
