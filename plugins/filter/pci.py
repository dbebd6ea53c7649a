# racksmith.core PCI filters: thin adapters over racksmith.pci, where the probe, its parser and
# the count by kind live and are unit-tested. Each filter's documentation is the YAML file of its
# name beside this one.
from __future__ import annotations

from dataclasses import asdict

from ansible.errors import AnsibleFilterError

try:
    from racksmith import pci
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    pci = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name: str) -> None:
    if pci is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def pci_probe_argv(sysfs_root):
    _need_library("pci_probe_argv")
    try:
        return pci.probe_argv(sysfs_root)
    except ValueError as exc:
        raise AnsibleFilterError(f"pci_probe_argv: {exc}") from exc


def pci_counts(probe_output):
    _need_library("pci_counts")
    if not isinstance(probe_output, str):
        raise AnsibleFilterError(
            f"pci_counts: expected the probe's stdout (text), got {type(probe_output).__name__}"
        )
    try:
        return asdict(pci.count_kinds(pci.parse_probe(probe_output)))
    except ValueError as exc:
        raise AnsibleFilterError(f"pci_counts: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"pci_probe_argv": pci_probe_argv, "pci_counts": pci_counts}
