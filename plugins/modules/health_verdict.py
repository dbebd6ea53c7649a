# racksmith.core.health_verdict: documentation only. The action plugin
# plugins/action/health_verdict.py does the work, on the controller (the way
# ansible.builtin.debug is built).
from __future__ import annotations

DOCUMENTATION = r"""
---
module: health_verdict
short_description: Decide a GPU host's fit verdict from its health reports, and say it
version_added: 0.1.0
author: racksmith maintainers (!UNKNOWN)
description:
  - The health role's verdict in one task. FIT only when the quick report says FIT and the load
    report says FIT, or load checks are not required and did not fail; anything missing or
    undecided is NOT FIT with a reason. The rule is filter C(racksmith.core.health_fit)
    (C(racksmith.health.golden.judge)), the one the golden set and the run report use.
  - Returns the host's golden-set entry (C(golden_entry), filter C(racksmith.core.golden_entry)
    of that same verdict) and prints C(HOST - VERDICT (profile NAME) REASONS) without C(-v), as
    M(ansible.builtin.debug) would.
  - An action plugin only. Nothing runs on the host and it never reports a change.
options:
  host:
    description: The host judged (its inventory name).
    type: str
    required: true
  profile:
    description: The profile name said when there is no quick report to name it.
    type: str
    default: ""
  quick:
    description: The parsed quick report (the agent's JSON), or an empty dict if none.
    type: dict
    default: {}
  load:
    description: The parsed load report, or an empty dict if the load checks did not run.
    type: dict
    default: {}
  load_required:
    description: Whether a host without a load report can be fit.
    type: bool
    default: true
  load_why_not:
    description: Why there is no load report (shown as the reason, or as why it is fine).
    type: str
    default: ""
  quick_error:
    description: The quick checks could not run, and why.
    type: str
    default: ""
  load_error:
    description: The load checks could not complete, and why.
    type: str
    default: ""
extends_documentation_fragment:
  - racksmith.core.racksmith_attributes.action
"""

EXAMPLES = r"""
- name: Verdict | Decide it and say it
  racksmith.core.health_verdict:
    host: "{{ inventory_hostname }}"
    profile: "{{ health_profile }}"
    quick: "{{ health_quick }}"
    load_required: false
    load_why_not: the lab host has no GPU
  register: health_verdict_said
"""

RETURN = r"""
msg:
  description: The verdict line, for people reading the output.
  type: str
  returned: always
  sample: "gpu07: NOT FIT (profile hgx-h200-8gpu) quick: FAIL xid [GPU 3]: Xid 79"
golden_entry:
  description:
    - The host's golden-set entry (filter C(racksmith.core.golden_entry)), the one verdict as the
      golden set reads it.
  type: dict
  returned: always
  contains:
    fit:
      description: Whether the host is fit.
      type: bool
      returned: always
    verdict:
      description: C(FIT) or C(NOT FIT).
      type: str
      returned: always
    reasons:
      description: Every reason, in order.
      type: list
      elements: str
      returned: always
    load:
      description: The load checks' state (C(FIT), C(NOT FIT), C(not run), C(not required - why)).
      type: str
      returned: always
"""
