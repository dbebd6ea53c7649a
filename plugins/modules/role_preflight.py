# racksmith.core.role_preflight: documentation only. The action plugin
# plugins/action/role_preflight.py does the work (the way ansible.builtin.debug is built).
from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_preflight
short_description: A role's preflight in one task - facts, PCI bus, problems, probe, skip
version_added: 0.1.0
author: racksmith maintainers (!UNKNOWN)
description:
  - Does in one task (one worker, one result per host) what a racksmith role's preflight did in
    three to five, each of which cost the controller a forked worker even when skipped.
  - Gathers the facts (M(ansible.builtin.setup) with O(gather_subset)) only when one of O(facts)
    is missing. Counts the PCI bus under O(pci_root) only when no earlier role of the run did
    under the same root, and keeps the counts as the host fact
    C(ansible_facts.racksmith_pci_counts) for the roles after it.
  - Then evaluates the role variable named by O(problems) with what it found; any problem fails
    the task with every problem, before the host is read further.
  - Then runs the read-only command whose argv the variable named by O(probe) holds, and returns
    its result as M(ansible.builtin.command) does, so C(register) gives what a probe task gave.
  - Then evaluates O(skip) (with the probe's result under the task's C(register) name). A reason
    returns C(racksmith_skip) as M(racksmith.core.role_skip) does; otherwise it prints O(say).
  - Everything it runs on the host only reads; give the task C(check_mode) false so that the
    probe also runs in check mode. It never reports a change.
options:
  facts:
    description: Facts (keys of C(ansible_facts)) the role decides on; any missing gathers.
    type: list
    elements: str
    default: [os_family]
  gather_subset:
    description: The C(gather_subset) to gather when a fact is missing.
    type: list
    elements: str
    default: [min]
  pci_root:
    description: The sysfs root to count the PCI bus under (the role's C(<role>_sysfs_root)).
      Unset, the bus is not read here.
    type: str
  problems:
    description: The name of the role variable listing its problems (a list of strings).
    type: str
    required: true
  probe:
    description: The name of the role variable holding the argv of the role's read-only probe.
    type: str
  skip:
    description: The name of the role variable holding why the whole role (or O(skip_part)) is
      skipped on this host; empty when it applies.
    type: str
  skip_part:
    description: The part skipped, as for M(racksmith.core.role_skip).
    type: str
    default: all
  drift:
    description: The name of the role's verify-first variable, the list of what differs from
      what the role would leave (anything the probe could not read included). Returned as
      C(drift) (empty where the role is skipped) and printed when not empty, so the role ends
      with a C(meta) C(end_role) task when C(<register>.drift) is empty.
    type: str
  say:
    description: The name of the role variable holding what to print when the role applies (and,
      with O(drift), nothing drifted).
    type: str
extends_documentation_fragment:
  - racksmith.core.racksmith_attributes.action
"""

EXAMPLES = r"""
- name: Preflight | Facts, the PCI bus, the platform, the kernel parameters and the method
  racksmith.core.role_preflight:
    pci_root: "{{ gdr_sysfs_root }}"
    problems: _gdr_problems
    skip: _gdr_skip_reason
  check_mode: false

- name: Preflight | Facts, the inputs, and what the last run left
  racksmith.core.role_preflight:
    problems: _node_exporter_problems
    probe: _node_exporter_probe_argv
  register: _node_exporter_probe
  check_mode: false
"""

RETURN = r"""
msg:
  description: The skip, the role's O(say) message, or C(preflight passed); on failure, every
    problem joined with C(; ).
  type: str
  returned: always
ansible_facts:
  description: The facts it gathered, and C(racksmith_pci_counts) when it counted the bus.
  type: dict
  returned: when it gathered or counted
stdout:
  description: The probe's standard output (also C(rc), C(stderr), C(stdout_lines), C(cmd)).
  type: str
  returned: when O(probe) is given
drift:
  description: What drifted (the O(drift) variable's list); empty where the role is skipped.
  type: list
  elements: str
  returned: when O(drift) is given and no problem failed the task
racksmith_skip:
  description: The skip as the report reads it (see M(racksmith.core.role_skip)).
  type: dict
  returned: when O(skip) gives a reason
problems:
  description: The problems, when there are any.
  type: list
  elements: str
  returned: on failure by problems
"""
