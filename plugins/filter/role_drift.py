# racksmith.core verify-first filters for any role: thin adapters over racksmith.roles.drift
# (the snippets that read what a role sets up, and the comparison with what it wants), where
# they are unit-tested. Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import drift
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    drift = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need(name: str, **values) -> None:
    if drift is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    for what, value in values.items():
        if not isinstance(value, dict):
            raise AnsibleFilterError(f"{name}: {what} must be a dict, got {type(value).__name__}")


def role_drift_probe(want):
    _need("role_drift_probe", want=want)
    try:
        return drift.probe_sections(want)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"role_drift_probe: {exc}") from exc


def role_drift(sections, want):
    _need("role_drift", sections=sections, want=want)
    try:
        return drift.drift(sections, want)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"role_drift: {exc!r}") from exc


class FilterModule:
    def filters(self):
        return {"role_drift": role_drift, "role_drift_probe": role_drift_probe}
