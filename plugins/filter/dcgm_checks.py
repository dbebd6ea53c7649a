# racksmith.core dcgm filters: a thin adapter over racksmith.roles.dcgm (the role's verify-first
# decision), where it is unit-tested. Its documentation is dcgm_drift.yml beside this file.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import dcgm
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    dcgm = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def dcgm_drift(sections, want):
    if dcgm is None:
        raise AnsibleFilterError(
            f"dcgm_drift needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    if not isinstance(sections, dict) or not isinstance(want, dict):
        raise AnsibleFilterError(
            "dcgm_drift: expected the probe's sections and the wanted state as dicts, got "
            f"{type(sections).__name__} and {type(want).__name__}"
        )
    try:
        return dcgm.drift(sections, want)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"dcgm_drift: {exc!r}") from exc


class FilterModule:
    def filters(self):
        return {"dcgm_drift": dcgm_drift}
