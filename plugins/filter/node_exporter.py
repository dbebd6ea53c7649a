# racksmith.core filters of the node_exporter role's verify-first step: thin adapters over
# racksmith.roles.node_exporter, where the probe and the decision live and are unit-tested.
# Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import node_exporter
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    node_exporter = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name: str) -> None:
    if node_exporter is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def node_exporter_probe_argv(package, unit, flags_file, textfile_dir):
    _need_library("node_exporter_probe_argv")
    try:
        return node_exporter.probe_argv(
            package=str(package), unit=str(unit), flags_file=str(flags_file),
            textfile_dir=str(textfile_dir),
        )  # fmt: skip
    except ValueError as exc:
        raise AnsibleFilterError(f"node_exporter_probe_argv: {exc}") from exc


def node_exporter_drift(probe_output, package, flags_sha1, version="", hold=True, method="package"):
    _need_library("node_exporter_drift")
    try:
        return node_exporter.drift(
            probe_output, package=str(package), version=str(version or ""), hold=bool(hold),
            flags_sha1=str(flags_sha1), method=str(method),
        )  # fmt: skip
    except ValueError as exc:
        raise AnsibleFilterError(f"node_exporter_drift: {exc}") from exc


def node_exporter_policy(probe_output):
    _need_library("node_exporter_policy")
    try:
        return node_exporter.policy(probe_output)
    except ValueError as exc:
        raise AnsibleFilterError(f"node_exporter_policy: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "node_exporter_probe_argv": node_exporter_probe_argv,
            "node_exporter_drift": node_exporter_drift,
            "node_exporter_policy": node_exporter_policy,
        }
