"""Ansible filter ``racksmith.core.docker_storage_driver``: the Docker storage driver that can
run on the filesystem under Docker's data root.

A thin adapter over :func:`racksmith.containers.storage_driver`, where the rule lives and is
unit-tested (overlay2 cannot sit on ZFS < 2.2, so a data root on the zfs_pool role's dataset
gets the zfs driver).
"""

from __future__ import annotations

from dataclasses import asdict

from ansible.errors import AnsibleFilterError

try:
    from racksmith.containers import storage_driver
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    storage_driver = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: docker_storage_driver
  author: racksmith developers
  version_added: "0.1.0"
  short_description: the Docker storage driver that runs on the data root's filesystem
  description:
    - Keeps the site's driver unless the data root is on ZFS and the driver needs overlayfs,
      which OpenZFS before 2.2 does not support; then it is C(zfs), with the reason.
  positional: _input
  options:
    _input:
      description: the storage driver the site asked for (empty for Docker's default)
      type: str
      required: true
    fstype:
      description: C(findmnt -n -o FSTYPE --target DATA_ROOT) output
      type: str
      required: true
"""

EXAMPLES = """
- name: Choose the storage driver
  ansible.builtin.set_fact:
    _choice: "{{ 'overlay2' | racksmith.core.docker_storage_driver(fstype=_findmnt.stdout) }}"
"""

RETURN = """
  _value:
    description: >-
      C(driver) (the driver to configure) and C(reason) (empty when the site's choice stands)
    type: dict
"""


def docker_storage_driver(wanted, fstype):
    if storage_driver is None:
        raise AnsibleFilterError(
            "docker_storage_driver needs the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    try:
        return asdict(storage_driver(str(wanted or ""), str(fstype or "")))
    except ValueError as exc:
        raise AnsibleFilterError(f"docker_storage_driver: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"docker_storage_driver": docker_storage_driver}
