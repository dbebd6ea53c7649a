"""Ansible filter ``racksmith.core.gpu_install_plan``: the packages the GPU-host roles install
for a package source and driver branch, or an error saying why that choice cannot be served.

A thin adapter over :func:`racksmith.gpupkgs.plan`, where the names and the refusals live and
are unit-tested (tests/unit/roles/test_gpupkgs.py) and resolved with apt against the recorded
real package indexes.
"""

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

DOCUMENTATION = """
  name: gpu_install_plan
  author: racksmith developers
  version_added: "0.1.0"
  short_description: the GPU-host roles' packages for a source and driver branch
  description:
    - C(ubuntu) is Canonical's archive (precompiled modules through the kernel-flavour
      metapackage; no exact versions, since the archive keeps only the newest), C(cuda) NVIDIA's
      CUDA repository (DKMS with the flavour's headers; exact versions allowed).
    - Refuses an exact version the source cannot serve, GPUDirect over inbox rdma-core with
      nvidia-peermem, and DMA-BUF without the open kernel modules, each with the reason.
  positional: _input
  options:
    _input:
      description: the source, C(ubuntu) or C(cuda)
      type: str
      required: true
    branch:
      description: driver branch (C(535), C(580))
      type: str
      required: true
    kernel_flavour:
      description: the flavour of the kernel MAAS deploys (C(generic-hwe-22.04), C(nvidia))
      type: str
      default: generic-hwe-22.04
    nvswitch:
      description: NVSwitches on the PCI bus (fabric manager and NSCQ)
      type: bool
      default: true
    nvlink5:
      description: an NVLink 5 system (nvlsm)
      type: bool
      default: false
    dcgm_major:
      description: DCGM 3 or 4
      type: int
      default: 4
    gdr:
      description: C(doca), C(dmabuf) or C(none); C(inbox) is refused
      type: str
      default: doca
    version:
      description: exact driver version, or empty for the branch's newest
      type: str
      default: ""
    modules:
      description: C(open) or C(proprietary); empty takes the branch's default
      type: str
      default: ""
    cuda_major:
      description: the CUDA major DCGM 4 is built for
      type: int
      default: 12
    toolkit_version:
      description: exact NVIDIA container toolkit version, or empty
      type: str
      default: ""
"""

EXAMPLES = """
- name: Decide the packages
  ansible.builtin.set_fact:
    _plan: "{{ 'ubuntu' | racksmith.core.gpu_install_plan(branch='580', nvswitch=true) }}"
"""

RETURN = """
  _value:
    description: >-
      racksmith.gpupkgs.Plan as a dict: driver, fabricmanager, gdr, container_runtime, dcgm,
      dcgm_exporter (apt specs), holds (names), cuda_repo_roles, pin, modules, version
    type: dict
"""


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
