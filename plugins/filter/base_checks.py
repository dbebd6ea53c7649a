"""Ansible filters of role base: ``racksmith.core.base_probe`` (its host probe's ``base``
section, parsed), ``racksmith.core.base_probe_sections`` (the snippets of its one read of the
host) and ``racksmith.core.base_drift`` (its verify-first comparison).

Thin adapters over :mod:`racksmith.roles.base`, where the formats and decisions live and are
unit-tested (tests/unit/roles/test_base_probe.py, tests/unit/roles/test_base_drift.py). Each
filter's documentation is the YAML file of its name beside this one.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import base as base_role
    from racksmith.roles.base import ProbeError, parse_probe
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    base_role = parse_probe = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def base_probe(stdout):
    if parse_probe is None:
        raise AnsibleFilterError(
            f"base_probe needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    try:
        return parse_probe(str(stdout or "")).as_dict()
    except ProbeError as exc:
        raise AnsibleFilterError(f"base_probe: {exc}") from exc


def _need(name: str, **values) -> None:
    if base_role is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )
    for what, value in values.items():
        if not isinstance(value, dict):
            raise AnsibleFilterError(f"{name}: {what} must be a dict, got {type(value).__name__}")


def base_probe_sections(read):
    _need("base_probe_sections", read=read)
    try:
        return base_role.probe_sections(read)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"base_probe_sections: {exc!r}") from exc


def base_drift(sections, want):
    _need("base_drift", sections=sections, want=want)
    try:
        return base_role.drift(sections, want)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"base_drift: {exc!r}") from exc


class FilterModule:
    def filters(self):
        return {
            "base_probe": base_probe,
            "base_probe_sections": base_probe_sections,
            "base_drift": base_drift,
        }
