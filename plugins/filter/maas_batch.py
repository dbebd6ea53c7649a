# racksmith.core.maas_fleet_batch: the enlist/deploy batch for maas_fleet from every host's
# variables at once, a thin adapter over racksmith.maas.entries (tested there). Its
# documentation is maas_fleet_batch.yml beside this file.
from __future__ import annotations

import functools
import os

import yaml
from ansible.errors import AnsibleFilterError
from ansible.utils.collection_loader._collection_finder import _get_collection_role_path

try:
    from racksmith.maas import entries
except ImportError as exc:  # the controller lacks the racksmith package
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

#: The role whose defaults are every playbook knob's default (issue 24).
KNOBS_ROLE = "racksmith.core.racksmith"


@functools.cache
def knob_defaults() -> dict:
    """The racksmith role's defaults: what a knob is where a host's variables lack it
    (``hostvars`` holds inventory, facts and extra vars, never a play's role defaults)."""
    found = _get_collection_role_path(KNOBS_ROLE)
    if not found:
        raise AnsibleFilterError(f"maas_fleet_batch: role {KNOBS_ROLE} not found")
    path = os.path.join(found[1], "defaults", "main.yml")
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise AnsibleFilterError(f"maas_fleet_batch: {path}: {exc}") from None
    if not isinstance(data, dict):
        raise AnsibleFilterError(f"maas_fleet_batch: {path}: not a mapping")
    return data


def maas_fleet_batch(hosts, hostvars, kind):
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            "racksmith.core filters need the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    try:
        # hostvars[h] templates each value on access, and only the ones the entry reads
        return entries.fleet_batch(
            [str(h) for h in hosts],
            {str(h): hostvars[h] for h in hosts},
            str(kind),
            knob_defaults(),
        ).as_dict()
    except ValueError as exc:
        raise AnsibleFilterError(f"maas_fleet_batch: {exc}") from None


class FilterModule:
    def filters(self):
        return {"maas_fleet_batch": maas_fleet_batch}
