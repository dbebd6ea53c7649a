#!/usr/bin/python
# racksmith: the run's quarantine as a MAAS tag, for job slices that share no run directory.
from __future__ import annotations

DOCUMENTATION = r"""
module: maas_quarantine_tag
short_description: Tag the run's quarantined machines in MAAS and untag the run's other machines
author: racksmith maintainers (!UNKNOWN)
description:
  - For runs whose processes share no run directory (AWX job slices, docs/awx.md section 8) the
    prepare job records its quarantine where every later job reads it; the C(maas) inventory
    plugin (option C(quarantine_tag)) puts the tagged machines in group C(quarantine).
  - Synchronises one manual tag over the run's hosts (C(hosts)) - after it exactly the
    C(quarantined) ones carry it, so a host repaired since the last run goes on. Machines outside
    C(hosts) are never touched. One machine listing and at most one tag update.
  - A quarantined host MAAS does not know (quarantined before enlist) is said in a warning.
  - Check mode says what it would tag and untag, and changes nothing.
  - "Run it once on the controller (C(run_once), C(delegate_to: localhost)); it needs the
    racksmith package."
extends_documentation_fragment:
  - racksmith.core.racksmith_maas
  - racksmith.core.racksmith_attributes
  - racksmith.core.racksmith_attributes.maas
attributes:
  diff_mode:
    description: Returns the run's machines carrying the tag before and after (in check mode,
      after is what it would leave).
    support: full
options:
  hosts:
    description: The run's hosts (MAAS hostnames), quarantined or not.
    type: list
    elements: str
    required: true
  quarantined:
    description: The hosts the run quarantined (a subset of C(hosts)).
    type: list
    elements: str
    default: []
  tag:
    description: The manual tag (created when MAAS lacks it).
    type: str
    default: racksmith-quarantine
"""

EXAMPLES = r"""
- name: Record the run's quarantine in MAAS for the job slices
  racksmith.core.maas_quarantine_tag:
    hosts: "{{ groups['bmc_ok'] }}"
    quarantined: "{{ groups['quarantine'] | default([]) }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
actions:
  description: What was tagged and untagged (or would be), in words.
  type: list
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.racksmith.core.plugins.module_utils.racksmith_common import (
    RacksmithImports,
)

with RacksmithImports() as RACKSMITH:
    from racksmith.maas import quarantine
    from racksmith.maas.ansible import CONNECTION_ARGS, WAIT_ARGS, run


def main():
    RACKSMITH.require()
    module = AnsibleModule(
        argument_spec={
            **CONNECTION_ARGS,
            **WAIT_ARGS,  # accepted so the group's module_defaults apply; no waits here
            "hosts": {"type": "list", "elements": "str", "required": True},
            "quarantined": {"type": "list", "elements": "str", "default": []},
            "tag": {"type": "str", "default": quarantine.QUARANTINE_TAG},
        },
        supports_check_mode=True,
    )
    p = module.params
    run(
        module,
        lambda client: quarantine.sync_tag(
            client,
            scope=p["hosts"],
            quarantined=p["quarantined"],
            tag=p["tag"],
            check_mode=module.check_mode,
        ),
    )


if __name__ == "__main__":
    main()
