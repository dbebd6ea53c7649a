# racksmith.core phase decisions as filters: thin adapters over racksmith.phases (tested there).
# Each filter's documentation is the YAML file of its name beside this one.
from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

try:
    from racksmith.maas import lifecycle, userdata
    from racksmith.phases import discover, preflight, validate
except ImportError as exc:  # the controller lacks the racksmith package
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library() -> None:
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            "racksmith.core filters need the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )


def hardware_problems(facts, expected=None):
    _need_library()
    return discover.hardware_problems(facts, expected)


def clock_problem(result, max_skew=5):
    _need_library()
    return discover.clock_problem(result, float(max_skew))


def clock_problems(batch, hosts, max_skew=5):
    _need_library()
    if not isinstance(batch, Mapping):
        raise AnsibleFilterError(f"clock_problems: expected the fleet's result, got {batch!r:.80}")
    return discover.clock_problems(batch, [str(h) for h in hosts], float(max_skew))


def discover_verdicts(
    hosts,
    hostvars,
    expected=None,
    quarantined=None,
    firmware_baseline=None,
    slices=1,
    bmc_health_check=False,
    bmc_health_since=None,
    bmc_health_allow=None,
):
    _need_library()
    try:
        return discover.verdicts(
            hostvars,
            [str(h) for h in hosts],
            expected=expected,
            quarantined=[str(h) for h in quarantined or []],
            firmware_baseline=firmware_baseline,
            slices=slices,
            bmc_health_check=bool(bmc_health_check),
            bmc_health_since=bmc_health_since,
            bmc_health_allow=bmc_health_allow or [],
        )
    except ValueError as exc:  # a baseline or a BMC health setting that cannot be used
        raise AnsibleFilterError(f"discover_verdicts: {exc}") from None


def duplicate_identities(hosts, keys=None):
    _need_library()
    if keys is None:
        return preflight.duplicate_identities(hosts)
    return preflight.duplicate_identities(hosts, keys)


def mac_mismatches(hosts):
    _need_library()
    return preflight.mac_mismatches(hosts)


def cloud_config(hostname, **fields):
    _need_library()
    return userdata.user_data(hostname, **fields)


def golden_inputs(hosts):
    _need_library()
    return validate.golden_inputs(hosts)


def hca_ports(hosts):
    _need_library()
    return validate.hca_ports(hosts)


def maas_release_text(erase, quick_erase=True):
    """How reprovision says it will release a machine: the words of
    racksmith.maas.lifecycle.ReleaseOptions.describe, the options maas_release is given."""
    _need_library()
    erase = bool(erase)
    return lifecycle.ReleaseOptions(erase=erase, quick_erase=erase and bool(quick_erase)).describe()


def hca_probe_argv(_ignored=None):
    _need_library()
    return list(validate.HCA_PROBE_ARGV)


def hca_guids(probe_output):
    _need_library()
    if not isinstance(probe_output, str):
        raise AnsibleFilterError(
            f"hca_guids: expected the probe's stdout, got {probe_output!r:.80}"
        )
    try:
        return validate.hca_guids(probe_output)
    except ValueError as exc:
        raise AnsibleFilterError(f"hca_guids: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "hardware_problems": hardware_problems,
            "clock_problem": clock_problem,
            "clock_problems": clock_problems,
            "discover_verdicts": discover_verdicts,
            "duplicate_identities": duplicate_identities,
            "mac_mismatches": mac_mismatches,
            "cloud_config": cloud_config,
            "golden_inputs": golden_inputs,
            "hca_ports": hca_ports,
            "hca_probe_argv": hca_probe_argv,
            "maas_release_text": maas_release_text,
            "hca_guids": hca_guids,
        }
