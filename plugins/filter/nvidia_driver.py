# racksmith.core filters of the nvidia_driver role: thin adapters over
# racksmith.roles.nvidia_driver, where the decisions live and are unit-tested. Each filter's
# documentation is the YAML file of its name beside this one.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import nvidia_driver
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    nvidia_driver = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name: str) -> None:
    if nvidia_driver is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def gpu_install_refusals(source, branch, **options):
    _need_library("gpu_install_refusals")
    return nvidia_driver.install_refusals(str(source), str(branch), **options)


def nvidia_driver_check_argv(smi, fabricmanager=False):
    _need_library("nvidia_driver_check_argv")
    return nvidia_driver.check_argv(smi=bool(smi), fabricmanager=bool(fabricmanager))


def nvidia_driver_check_problems(
    check_output, gpus, branch, version="", persistence=False, dropin="", fabricmanager=False
):
    _need_library("nvidia_driver_check_problems")
    try:
        return nvidia_driver.check_problems(
            check_output,
            gpus=int(gpus),
            version=str(version or ""),
            branch=str(branch),
            persistence=bool(persistence),
            dropin=str(dropin),
            fabricmanager=bool(fabricmanager),
        )
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"nvidia_driver_check_problems: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "gpu_install_refusals": gpu_install_refusals,
            "nvidia_driver_check_argv": nvidia_driver_check_argv,
            "nvidia_driver_check_problems": nvidia_driver_check_problems,
        }
