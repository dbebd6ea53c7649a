# racksmith.core GPU-host package filters (issue 20): thin adapters over racksmith.gpupkgs, where
# the names per source and branch and the refusals live, are unit-tested
# (tests/unit/roles/test_gpupkgs.py) and resolved with apt against the recorded real package
# indexes. Each filter's documentation is the YAML file of its name beside this one.

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.gpupkgs import (
        PlanError,
        apt_preferences,
        dcgm_packages,
        default_modules,
        gdr_packages,
        plan,
        unknown_packages,
    )
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    plan = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def gpu_install_plan(source, branch, **options):
    if plan is None:
        raise AnsibleFilterError(
            "gpu_install_plan needs the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )
    try:
        return plan(source=str(source), branch=str(branch), **options).as_dict()
    except (PlanError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"gpu_install_plan: {exc}") from exc


def apt_unknown(specs, policy):
    """The install specs apt has no candidate for, from ``apt-cache policy`` output."""
    if plan is None:
        raise AnsibleFilterError(f"apt_unknown needs the racksmith Python package: {_IMPORT_ERROR}")
    return unknown_packages(list(specs or []), str(policy or ""))


def gpu_dcgm_packages(dcgm_major, cuda_major=12):
    """DCGM's engine and exporter package names for a DCGM major."""
    if plan is None:
        raise AnsibleFilterError(f"gpu_dcgm_packages needs the racksmith package: {_IMPORT_ERROR}")
    try:
        return dcgm_packages(int(dcgm_major), int(cuda_major))
    except (PlanError, ValueError) as exc:
        raise AnsibleFilterError(f"gpu_dcgm_packages: {exc}") from exc


def gpu_gdr_packages(method, modules="", branch="535"):
    """The distribution packages GPUDirect RDMA needs for a method, or the refusal's reason
    (inbox rdma-core with nvidia-peermem; DMA-BUF without the open kernel modules). Empty
    modules: NVIDIA's default for the driver branch."""
    if plan is None:
        raise AnsibleFilterError(f"gpu_gdr_packages needs the racksmith package: {_IMPORT_ERROR}")
    try:
        return gdr_packages(str(method), str(modules or default_modules(str(branch))))
    except (PlanError, ValueError) as exc:
        raise AnsibleFilterError(f"gpu_gdr_packages: {exc}") from exc


def gpu_apt_preferences(source, branch):
    """The apt preferences beside the CUDA repository for a driver source and branch."""
    if plan is None:
        raise AnsibleFilterError(
            f"gpu_apt_preferences needs the racksmith package: {_IMPORT_ERROR}"
        )
    try:
        return apt_preferences(source=str(source), branch=str(branch))
    except (PlanError, ValueError) as exc:
        raise AnsibleFilterError(f"gpu_apt_preferences: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "gpu_install_plan": gpu_install_plan,
            "gpu_dcgm_packages": gpu_dcgm_packages,
            "gpu_gdr_packages": gpu_gdr_packages,
            "gpu_apt_preferences": gpu_apt_preferences,
            "apt_unknown": apt_unknown,
        }
