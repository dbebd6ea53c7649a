# racksmith.core BMC health as a filter: a thin adapter over racksmith.redfish.bmc_health
# (tested there). Its documentation is bmc_health_problems.yml.
from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

try:
    from racksmith.redfish import bmc_health
except ImportError as exc:  # the controller lacks the racksmith package
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def bmc_health_problems(facts, since=None, allow=None):
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            "racksmith.core filters need the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"bmc_health_problems: expected host variables, got {facts!r:.80}")
    try:
        return bmc_health.host_problems(facts.get("redfish_bmc_health"), since, allow or [])
    except ValueError as exc:
        raise AnsibleFilterError(f"bmc_health_problems: {exc}") from None


class FilterModule:
    def filters(self):
        return {"bmc_health_problems": bmc_health_problems}
