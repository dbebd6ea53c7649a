# racksmith.core host-probe filters: thin adapters over racksmith.hostprobe (one command that
# reads several things from a host, and the parser that splits its output into sections), where
# they are unit-tested. Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith import hostprobe
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    hostprobe = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name: str) -> None:
    if hostprobe is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def host_probe_argv(sections):
    _need_library("host_probe_argv")
    try:
        return hostprobe.probe_argv(dict(sections or {}))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"host_probe_argv: {exc}") from exc


def host_probe_sections(stdout, expect=()):
    _need_library("host_probe_sections")
    try:
        return hostprobe.parse_sections(stdout, list(expect or ()))
    except ValueError as exc:
        raise AnsibleFilterError(f"host_probe_sections: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"host_probe_argv": host_probe_argv, "host_probe_sections": host_probe_sections}
