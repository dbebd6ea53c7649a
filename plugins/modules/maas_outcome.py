# racksmith.core.maas_outcome: documentation only. The action plugin plugins/action/maas_outcome.py
# does the work, on the controller (the way ansible.builtin.debug is built).
from __future__ import annotations

DOCUMENTATION = r"""
---
module: maas_outcome
short_description: One host's outcome of a MAAS enlist or deploy batch, as its own result
version_added: 0.1.0
author: racksmith maintainers (!UNKNOWN)
description:
  - The per-host task after M(racksmith.core.maas_fleet) (run once for the whole play); it prints
    the host's line (its actions, C(nothing to do), or MAAS's named cause) without C(-v), as
    M(ansible.builtin.debug) would, reports C(changed) when the host's machine changed, and
    fails the host with the cause, so the play's rescue records it.
  - A host left out of the batch (M(racksmith.core.maas_fleet_batch)'s C(problems)) fails with
    that problem. A host with neither a result nor a problem fails too (fail closed).
  - Register it as C(racksmith_maas_enlist) or C(racksmith_maas_deploy), where the run report
    reads MAAS's triage (C(docs/contracts.md)).
  - An action plugin only; nothing runs on the host.
options:
  result:
    description: The host's entry in the C(hosts) of the M(racksmith.core.maas_fleet) result.
    type: dict
  problem:
    description: Why the host was left out of the batch; fails it with this reason.
    type: str
    default: ""
extends_documentation_fragment:
  - racksmith.core.racksmith_attributes.action
"""

EXAMPLES = r"""
- name: This host's deployment
  racksmith.core.maas_outcome:
    result: "{{ racksmith_maas_fleet.hosts[inventory_hostname] | default(none) }}"
    problem: "{{ racksmith_fleet_batch.problems[inventory_hostname] | default('') }}"
  register: racksmith_maas_deploy
"""

RETURN = r"""
msg:
  description:
    - The host's line; its actions joined, C(nothing to do), or why it failed (MAAS's named
      cause, or the problem that kept it out of the batch).
  type: str
  returned: always
  sample: nothing to do
triage:
  description: MAAS's triage of the failure (cause, status_name, events, log_tail), redacted.
  type: dict
  returned: when MAAS's triage of the host's failure came with its result
"""
