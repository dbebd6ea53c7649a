# racksmith.core health-role filters: a thin adapter over racksmith.roles.health (the role's
# reading of the quick checks' run), where it is unit-tested. Its documentation is
# health_quick_outcome.yml beside this file.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import health
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    health = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def health_quick_outcome(run):
    if health is None:
        raise AnsibleFilterError(
            "health_quick_outcome needs the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    if run is not None and not isinstance(run, dict):
        raise AnsibleFilterError(
            f"health_quick_outcome: expected the registered run (a dict), got {type(run).__name__}"
        )
    return health.quick_outcome(run)


class FilterModule:
    def filters(self):
        return {"health_quick_outcome": health_quick_outcome}
