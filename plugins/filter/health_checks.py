# racksmith.core health-role filters: a thin adapter over racksmith.roles.health (the role's
# reading of the quick checks' run, and its one probe of the host's Python and shipped agent),
# where it is unit-tested. Their documentation: health_quick_outcome.yml,
# health_probe_sections.yml and health_probe_outcome.yml beside this file.
from __future__ import annotations

import hashlib

from ansible.errors import AnsibleFilterError

try:
    from racksmith.roles import health
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    health = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_library(name):
    if health is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


def health_quick_outcome(run):
    _need_library("health_quick_outcome")
    if run is not None and not isinstance(run, dict):
        raise AnsibleFilterError(
            f"health_quick_outcome: expected the registered run (a dict), got {type(run).__name__}"
        )
    return health.quick_outcome(run)


def _want(want, name):
    if not isinstance(want, dict):
        raise AnsibleFilterError(f"{name}: expected the probe's wants (a dict), got {want!r:.80}")
    return dict(want)


def health_probe_sections(want):
    _need_library("health_probe_sections")
    try:
        return health.probe_sections(_want(want, "health_probe_sections"))
    except ValueError as exc:
        raise AnsibleFilterError(f"health_probe_sections: {exc}") from exc


def _sha1(path):
    """The sha1 of a controller file (the site profile), None when it cannot be read: the
    probe's comparison then counts it as drift (fail closed)."""
    try:
        with open(path, "rb") as handle:
            return hashlib.sha1(handle.read(), usedforsecurity=False).hexdigest()
    except OSError:
        return None


def health_probe_outcome(run, want):
    _need_library("health_probe_outcome")
    if run is not None and not isinstance(run, dict):
        raise AnsibleFilterError(
            "health_probe_outcome: expected the registered probe (a dict), got "
            f"{type(run).__name__}"
        )
    want = _want(want, "health_probe_outcome")
    if want.get("profile_src"):
        want["profile_sha1"] = _sha1(str(want["profile_src"]))
    return health.probe_outcome(run, want)


class FilterModule:
    def filters(self):
        return {
            "health_quick_outcome": health_quick_outcome,
            "health_probe_sections": health_probe_sections,
            "health_probe_outcome": health_probe_outcome,
        }
