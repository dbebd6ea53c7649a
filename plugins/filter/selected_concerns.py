"""Ansible filter ``racksmith.core.selected_concerns``: which of a role's concerns a run's tags
select, for looped tasks whose items serve several concerns.

A thin adapter over :func:`racksmith.roles.tags.selected_concerns`, where the rule lives and is
unit-tested (tests/unit/roles/test_selected_concerns.py).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles.tags import selected_concerns as _selected
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    _selected = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: selected_concerns
  author: racksmith developers
  version_added: "0.1.0"
  short_description: the concern tags of a role that a run's --tags and --skip-tags select
  description:
    - A looped task whose items serve several concerns (each item carrying its concern's tag)
      acts only on the items whose tag this filter returns. A run tag that is not one of the
      concerns (all, a play, phase or role tag) selects the whole role, as Ansible's inherited
      tags do; concern tags narrow it; skipped tags are removed; C(always) is included unless
      skipped. See C(racksmith.roles.tags).
  positional: _input, skip_tags, concerns
  options:
    _input:
      description: the run's tags (C(ansible_run_tags))
      type: list
      elements: str
      required: true
    skip_tags:
      description: the run's skipped tags (C(ansible_skip_tags))
      type: list
      elements: str
      required: true
    concerns:
      description: the role's concern tags
      type: list
      elements: str
      required: true
"""

EXAMPLES = """
- name: Write only the selected concerns' files
  ansible.builtin.template:
    src: "{{ item.src }}"
    dest: "{{ item.dest }}"
    mode: "0644"
  loop: "{{ files | selectattr('tag', 'in', ansible_run_tags
            | racksmith.core.selected_concerns(ansible_skip_tags, ['base_apt', 'base_time'])) }}"
"""

RETURN = """
  _value:
    description: C(always) (unless skipped) and the selected concern tags, in the concerns' order
    type: list
    elements: str
"""


def selected_concerns(run_tags, skip_tags, concerns):
    if _selected is None:
        raise AnsibleFilterError(
            "selected_concerns needs the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    try:
        return _selected(list(run_tags or []), list(skip_tags or []), list(concerns or []))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"selected_concerns": selected_concerns}
