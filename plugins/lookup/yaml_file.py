"""Lookup racksmith.core.yaml_file: a YAML data file, parsed once per process.

Why: a variable that reads a file (``lookup('file', f) | from_yaml``) is read and parsed again
on every reference, and Ansible templates a variable each time a task names it, through every
variable that uses it. The lab's rack (inventory/lab/group_vars/all/controller.yml) was parsed
about 30 times per host in a run (issue 25). This lookup parses with PyYAML's safe C loader
(data only: no tags, no templates) and keeps the result per process, keyed by the file's path,
modification time and size, so a changed file is read again.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: yaml_file
short_description: A YAML data file, parsed once per process
author: racksmith maintainers (!UNKNOWN)
description:
  - Reads a YAML file on the controller and returns its data, parsed with PyYAML's safe loader
    (plain data, no tags; strings in it are never templated).
  - Keeps the parsed data for the life of the process, keyed by path, modification time and
    size, so repeated references cost a C(stat) instead of a parse.
  - A file that is missing, unreadable or not YAML fails the lookup, naming the file.
options:
  _terms:
    description: Path of the YAML file (one).
    required: true
    type: list
    elements: path
"""

EXAMPLES = r"""
- name: The rack's network prefix
  ansible.builtin.debug:
    msg: "{{ lookup('racksmith.core.yaml_file', inventory_dir ~ '/rack.yml').network.prefix }}"
"""

RETURN = r"""
_raw:
  description: The file's data (one element).
  type: list
  elements: raw
"""

import os

import yaml
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml: the pure-Python safe loader
    _Loader = yaml.SafeLoader

#: (real path, mtime_ns, size) -> parsed data, for this process
_CACHE: dict[tuple[str, int, int], object] = {}


def load(path: str) -> object:
    """The data of the YAML file ``path``, parsed at most once per version of the file."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise AnsibleLookupError(f"yaml_file: cannot read {path}: {exc.strerror}") from exc
    key = (real, st.st_mtime_ns, st.st_size)
    if key not in _CACHE:
        try:
            with open(real, encoding="utf-8") as handle:
                data = yaml.load(handle, Loader=_Loader)  # noqa: S506 - a safe loader
        except (OSError, UnicodeDecodeError) as exc:
            raise AnsibleLookupError(f"yaml_file: cannot read {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise AnsibleLookupError(f"yaml_file: {path} is not valid YAML: {exc}") from exc
        _CACHE.clear()  # one version of one file is what a run reads; keep the memory bounded
        _CACHE[key] = data
    return _CACHE[key]


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if len(terms) != 1:
            raise AnsibleLookupError(f"yaml_file: give one file, not {len(terms)}")
        return [load(str(terms[0]))]
