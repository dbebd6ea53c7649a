# racksmith.core.role_arguments: documentation only. The action plugin
# plugins/action/role_arguments.py does the work, on the controller.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check a host's inputs against several roles' argument specs in one task
version_added: 0.1.0
author: racksmith maintainers (!UNKNOWN)
description:
  - Checks the values a host's variables give each role's options against the role's argument
    spec (C(meta/argument_specs.yml), entry point C(main) by default), exactly as ansible-core
    checks a role it imports or includes, with its own C(ArgumentSpecValidator). Values are
    templated first.
  - One task per host for every role, instead of the C(Validating arguments against arg spec)
    task ansible-core puts at the top of each role. C(playbooks/configure.yml) imports
    racksmith's roles with C(rolespec_validate=false) and runs this before them, for the roles
    the host selects (issue 25, docs/fleet.md).
  - Fails listing each error prefixed with its role, on one line (C(; ) between them);
    C(argument_errors) holds them by role. A role without a spec for the entry point is not
    checked, as ansible-core would not.
  - An action plugin only. Nothing runs on the host and it never reports a change.
options:
  roles:
    description: The roles whose specs to check, by their collection names
      (C(racksmith.core.base)).
    type: list
    elements: str
    required: true
  entry_point:
    description: The spec's entry point (the role's C(tasks_from)).
    type: str
    default: main
extends_documentation_fragment:
  - racksmith.core.racksmith_attributes.action
"""

EXAMPLES = r"""
- name: Check the selected roles' inputs against their argument specs
  racksmith.core.role_arguments:
    roles: "{{ racksmith_configure_roles }}"
  tags: [always]
"""

RETURN = r"""
msg:
  description: Whether the specs passed, or every error, each prefixed with its role.
  type: str
  returned: always
  sample: >-
    Validation of arguments failed: role racksmith.core.base: argument 'base_sysctl' is of
    type str and we were unable to convert to dict
roles_checked:
  description: The roles whose spec was checked.
  type: list
  elements: str
  returned: always
  sample: [racksmith.core.base, racksmith.core.nvidia_driver]
argument_errors:
  description: The errors, by role.
  type: dict
  returned: failure
"""
