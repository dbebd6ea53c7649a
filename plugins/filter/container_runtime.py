# racksmith.core filters of the container_runtime role's verify-first step: thin adapters over
# racksmith.roles.container_runtime, where the probe and the decision live and are unit-tested.
# Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import container_runtime
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    container_runtime = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need(name: str, **values) -> None:
    if container_runtime is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    for what, value in values.items():
        if not isinstance(value, dict):
            raise AnsibleFilterError(f"{name}: {what} must be a dict, got {type(value).__name__}")


def container_runtime_probe(want):
    _need("container_runtime_probe", want=want)
    try:
        return container_runtime.probe_sections(want)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"container_runtime_probe: {exc!r}") from exc


def container_runtime_drift(sections, want):
    _need("container_runtime_drift", sections=sections, want=want)
    try:
        return container_runtime.drift(sections, want)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"container_runtime_drift: {exc!r}") from exc


class FilterModule:
    def filters(self):
        return {
            "container_runtime_drift": container_runtime_drift,
            "container_runtime_probe": container_runtime_probe,
        }
