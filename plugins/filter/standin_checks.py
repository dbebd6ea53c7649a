"""Ansible filter ``racksmith.core.standin_builds`` (LAB ONLY, role lab_gpu_standin): each play
host's stand-in build.

A thin adapter over :func:`racksmith.roles.lab_gpu_standin.builds`, where the naming lives and
is unit-tested (tests/unit/roles/test_standin_builds.py).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles.lab_gpu_standin import builds
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    builds = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: standin_builds
  author: racksmith developers
  version_added: "0.1.0"
  short_description: LAB ONLY. The stand-in build (capture, overlays, name) of each host
  description:
    - One build per distinct capture and overlays; its name is the sources' basenames joined by
      C(+), then the first 8 hex digits of the SHA-1 of their paths joined by C(|).
  positional: _input
  options:
    _input:
      description: the hosts
      type: list
      elements: str
      required: true
    captures:
      description: each host's capture folder, in the hosts' order
      type: list
      elements: str
      required: true
    overlays:
      description: each host's list of overlay folders, in the hosts' order
      type: list
      elements: list
      required: true
"""

EXAMPLES = """
- name: Name each host's stand-in
  ansible.builtin.debug:
    msg: "{{ ['gpu01'] | racksmith.core.standin_builds(['/c/h200-x2'], [[]]) }}"
"""

RETURN = """
  _value:
    description: host -> C(capture), C(overlays) and C(name) of its build
    type: dict
"""


def standin_builds(hosts, captures, overlays):
    if builds is None:
        raise AnsibleFilterError(
            f"standin_builds needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    try:
        return builds(hosts or [], captures or [], overlays or [])
    except ValueError as exc:
        raise AnsibleFilterError(f"standin_builds: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"standin_builds": standin_builds}
