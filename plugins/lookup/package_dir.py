"""Lookup racksmith.core.package_dir: where a Python package lives on the controller.

Why: the health role ships the controller's racksmith package to the hosts, and found it with
``lookup('pipe', python -c 'import racksmith; ...')``: a new Python process, importing the
package, every time the variable was read (issue 25). This lookup asks the import system of
the controller's own Python (the one running ansible-playbook, ``ansible_playbook_python``)
where the package is, without importing it and without a process.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: package_dir
short_description: The directory of a Python package on the controller
author: racksmith maintainers (!UNKNOWN)
description:
  - Returns the directory of a regular (non-namespace) Python package as the controller's
    Python (the one running ansible-playbook) would import it, without importing it.
  - A package the controller's Python cannot find fails the lookup, naming it and the Python.
options:
  _terms:
    description: The package's import name (one), e.g. C(racksmith).
    required: true
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Where the controller's racksmith package is
  ansible.builtin.debug:
    msg: "{{ lookup('racksmith.core.package_dir', 'racksmith') }}"
"""

RETURN = r"""
_raw:
  description: The package's directory (one element).
  type: list
  elements: path
"""

import functools
import importlib.util
import os
import sys

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase


@functools.cache
def package_dir(name: str) -> str:
    """Directory of package ``name`` for this Python (found once per process)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        raise AnsibleLookupError(f"package_dir: {name!r}: {exc}") from exc
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        raise AnsibleLookupError(
            f"package_dir: the controller's Python ({sys.executable}) has no package {name!r}"
        )
    return os.path.dirname(spec.origin)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if len(terms) != 1:
            raise AnsibleLookupError(f"package_dir: give one package name, not {len(terms)}")
        return [package_dir(str(terms[0]))]
