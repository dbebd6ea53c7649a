"""Ansible filters ``racksmith.core.gdr_problems`` and ``racksmith.core.gdr_probe`` (role gdr).

Thin adapters over :mod:`racksmith.roles.gdr`, where the checks and the probe format live and
are unit-tested (tests/unit/roles/test_gdr_checks.py).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles.gdr import ProbeError, parse_probe, problems
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    problems = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: gdr_problems
  author: racksmith developers
  version_added: "0.1.0"
  short_description: what is wrong with role gdr's platform and inputs, one line each
  description:
    - The platform (Debian family), the kernel parameters (name or name=value words) and the
      GPUDirect RDMA method (one NVIDIA supports, racksmith.gpupkgs.check_gdr). Empty when
      nothing is wrong. Its sibling C(gdr_probe) reads role gdr's host probe (marker lines,
      then C(apt-cache policy)); output that is not the probe's fails the task.
  positional: _input
  options:
    _input:
      description: the GPUDirect RDMA method (C(doca), C(dmabuf), C(none))
      type: str
      required: true
    os_family:
      description: ansible_facts.os_family
      type: str
      required: true
    distribution:
      description: ansible_facts.distribution
      type: str
      required: true
    kernel_params:
      description: gdr_kernel_params
      type: list
      elements: str
      required: true
    modules:
      description: the driver's kernel modules, C(open) or C(proprietary) (empty: the branch's)
      type: str
      default: ''
    branch:
      description: the driver branch
      type: str
      default: '580'
"""

EXAMPLES = """
- name: Check the inputs
  ansible.builtin.assert:
    that: _problems | length == 0
    fail_msg: "{{ _problems | join('; ') }}"
  vars:
    _problems: >-
      {{ gdr_method | racksmith.core.gdr_problems(os_family=ansible_facts.os_family,
         distribution=ansible_facts.distribution, kernel_params=gdr_kernel_params) }}
"""

RETURN = """
  _value:
    description: the problems, each a line a person can act on
    type: list
    elements: str
"""


def _need(name):
    if problems is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def gdr_problems(method, os_family, distribution, kernel_params, modules="", branch="580"):
    _need("gdr_problems")
    return problems(
        os_family=str(os_family or ""),
        distribution=str(distribution or ""),
        kernel_params=list(kernel_params or []),
        method=str(method or ""),
        modules=str(modules or ""),
        branch=str(branch or "580"),
    )


def gdr_probe(stdout, required=()):
    """Role gdr's host probe as a dict of its markers (and ``policy``)."""
    _need("gdr_probe")
    try:
        return parse_probe(str(stdout or ""), list(required or []))
    except ProbeError as exc:
        raise AnsibleFilterError(f"gdr_probe: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"gdr_problems": gdr_problems, "gdr_probe": gdr_probe}
