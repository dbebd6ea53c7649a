"""Ansible filters ``racksmith.core.gdr_problems`` and ``racksmith.core.gdr_probe`` (role gdr).

Thin adapters over :mod:`racksmith.roles.gdr`, where the checks and the probe format live and
are unit-tested (tests/unit/roles/test_gdr_checks.py).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles.gdr import ProbeError, parse_probe, problems
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    problems = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

# Each filter's documentation is the YAML file of its name beside this one (gdr_problems.yml,
# gdr_probe.yml).


def _need(name):
    if problems is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def gdr_problems(method, os_family, distribution, kernel_params, modules="", branch="580"):
    _need("gdr_problems")
    return problems(
        os_family=str(os_family or ""),
        distribution=str(distribution or ""),
        kernel_params=list(kernel_params or []),
        method=str(method or ""),
        modules=str(modules or ""),
        branch=str(branch or "580"),
    )


def gdr_probe(stdout, required=()):
    """Role gdr's host probe as a dict of its markers (and ``policy``)."""
    _need("gdr_probe")
    try:
        return parse_probe(str(stdout or ""), list(required or []))
    except ProbeError as exc:
        raise AnsibleFilterError(f"gdr_probe: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"gdr_problems": gdr_problems, "gdr_probe": gdr_probe}
