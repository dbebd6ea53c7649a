"""Lookup racksmith.core.role_template: a template rendered as ``ansible.builtin.template``
renders it, without copying all of the host's variables first.

Why: the roles' verify-first steps compare each file they would write with the host's by sha1,
so they render the file's template (``lookup('ansible.builtin.template', ...) | hash('sha1')``).
ansible-core's template lookup deep-copies every variable the host has (its facts, the Redfish
inventory, the registered probes) before each render, to add a few of its own (``ansible_managed``,
``template_path``, ...) without changing the caller's. On a rerun that copy was most of base's
preflight, which renders six templates per host (issue 25). This lookup is ansible-core's own
template lookup (the same search path, options, added variables and output) given a view of the
variables whose deep copy is a new layer over them: the lookup adds its variables to the layer,
and the host's variables are read in place, never copied or changed.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: role_template
short_description: A template rendered as ansible.builtin.template renders it, without a deep copy
author: racksmith maintainers (!UNKNOWN)
description:
  - Renders templates exactly as the lookup P(ansible.builtin.template#lookup) does (it is that
    lookup, with the same options, search path and added variables such as C(ansible_managed)),
    but the variables it renders with are a layer over the host's instead of a deep copy of them.
  - For the roles' verify-first comparisons, which render each file they would write to compare
    its sha1 with the host's copy.
options:
  _terms:
    description: The template files, found as P(ansible.builtin.template#lookup) finds them.
    required: true
    type: list
    elements: path
  template_vars:
    description: Variables the templates see beside (and over) the host's.
    type: dict
    default: {}
  variable_start_string:
    description: What opens an expression.
    type: str
    default: '{{'
  variable_end_string:
    description: What closes an expression.
    type: str
    default: '}}'
  comment_start_string:
    description: What opens a comment.
    type: str
    default: '{#'
  comment_end_string:
    description: What closes a comment.
    type: str
    default: '#}'
  trim_blocks:
    description: Drop the first newline after a block, as the template module does by default.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: The sha1 of chrony.conf as the role would write it
  ansible.builtin.debug:
    msg: "{{ lookup('racksmith.core.role_template', 'chrony.conf.j2') | hash('sha1') }}"
"""

RETURN = r"""
_raw:
  description: The rendered templates, one string per term.
  type: list
  elements: str
"""

from collections import ChainMap
from collections.abc import Iterator, Mapping
from typing import Any

from ansible.plugins.lookup.template import LookupModule as TemplateLookup


class _Layered(Mapping):
    """The host's variables, read in place; ``copy.deepcopy`` of it gives a new, empty layer
    over them (a ChainMap), so what the template lookup adds never reaches the caller's."""

    def __init__(self, variables: Mapping[str, Any]) -> None:
        self._variables = variables

    def __getitem__(self, key: str) -> Any:
        return self._variables[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)

    def __deepcopy__(self, memo: dict) -> ChainMap:
        return ChainMap({}, self._variables)


class LookupModule(TemplateLookup):
    def run(self, terms, variables=None, **kwargs):
        return super().run(terms, _Layered(variables or {}), **kwargs)
