"""Ansible filter ``racksmith.core.base_probe``: role base's one host probe, parsed.

A thin adapter over :func:`racksmith.roles.base.parse_probe`, where the format lives and is
unit-tested (tests/unit/roles/test_base_probe.py).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles.base import ProbeError, parse_probe
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    parse_probe = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: base_probe
  author: racksmith developers
  version_added: "0.1.0"
  short_description: role base's host probe (cpufreq, governor unit, sysctls, packages, apt policy)
  description:
    - Reads the output of role base's probe command (marker lines, then C(apt-cache policy
      chrony)); see C(racksmith.roles.base). Output that is not the probe's (cut short, or a
      line it never prints) fails the task, naming what is wrong.
  positional: _input
  options:
    _input:
      description: the probe's stdout
      type: str
      required: true
"""

EXAMPLES = """
- name: Read what the probe found
  ansible.builtin.debug:
    msg: "{{ (_base_probe.stdout | racksmith.core.base_probe).installed }}"
"""

RETURN = """
  _value:
    description: >-
      C(cpufreq) and C(governor_unit) (booleans), C(sysctl_writable) and C(installed) (lists of
      names), C(apt_policy) (text)
    type: dict
"""


def base_probe(stdout):
    if parse_probe is None:
        raise AnsibleFilterError(
            f"base_probe needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    try:
        return parse_probe(str(stdout or "")).as_dict()
    except ProbeError as exc:
        raise AnsibleFilterError(f"base_probe: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"base_probe": base_probe}
