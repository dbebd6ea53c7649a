# racksmith.core firmware/BIOS baseline as a filter: a thin adapter over
# racksmith.redfish.baseline (tested there). Its documentation is firmware_verdicts.yml.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.redfish import baseline
except ImportError as exc:  # the controller lacks the racksmith package
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def firmware_verdicts(hosts, hostvars, baseline_path):
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            "racksmith.core filters need the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    try:
        loaded = baseline.load(baseline_path)
    except baseline.BaselineError as exc:
        raise AnsibleFilterError(f"firmware_verdicts: {exc}") from None
    results = baseline.results_from_hostvars({str(h): hostvars[h] for h in hosts})
    return baseline.phase_verdicts(results, loaded)


class FilterModule:
    def filters(self):
        return {"firmware_verdicts": firmware_verdicts}
