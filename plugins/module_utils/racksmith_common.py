# racksmith: what every racksmith module shares around the racksmith library.
"""What racksmith's modules share around the racksmith library: the guard around their imports of
it, a clear failure when the library is missing from the Python that runs the module, and the
shape of the ``diff`` they return.

Deliberately free of racksmith imports: it has to load where racksmith does not.
"""

from __future__ import annotations

import traceback
from types import TracebackType
from typing import Any

from ansible.module_utils.basic import AnsibleModule, _load_params, missing_required_lib


def require_racksmith(import_error: str | None) -> None:
    """Fail the module with ``missing_required_lib`` when racksmith could not be imported.

    A site that runs a module with a Python lacking the package (say the system python3 on the
    controller instead of the venv) gets a message naming the library, the host and the
    interpreter instead of a bare MODULE FAILURE. The option spec lives in racksmith as well, so
    without it the arguments cannot be checked: they are taken unchecked, never logged and never
    echoed back (one of them may be a password).
    """
    if import_error is None:
        return
    spec = {name: {"type": "raw"} for name in _load_params() if not name.startswith("_")}
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True, no_log=True)
    module.fail_json(msg=missing_required_lib("racksmith"), exception=import_error, invocation={})


class RacksmithImports:
    """The guard around a module's imports of racksmith: ``with RacksmithImports() as RACKSMITH:``.

    An ImportError inside is kept (its traceback, in ``error``) instead of raised, so the module
    still loads on a Python without racksmith, and ``RACKSMITH.require()``, the first step of the
    module's main(), fails it with a message naming the library (``require_racksmith``). Any
    other exception is raised as usual. One place for what every module used to spell out as
    try/except ImportError/traceback.format_exc().
    """

    def __init__(self) -> None:
        self.error: str | None = None

    def __enter__(self) -> RacksmithImports:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is None or not issubclass(exc_type, ImportError):
            return False
        self.error = "".join(traceback.format_exception(exc_type, exc, tb))
        return True

    def require(self) -> None:
        """Fail the module (``require_racksmith``) when an import of racksmith failed."""
        require_racksmith(self.error)


def diff(before: Any, after: Any, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Ansible's ``diff`` result from two states; with ``keys``, only those keys of two mappings
    (a missing state, say a machine not created yet, is an empty mapping)."""
    if keys is not None:
        before = {k: before[k] for k in keys if k in before} if before else {}
        after = {k: after[k] for k in keys if k in after} if after else {}
    return {"before": before, "after": after}


# What a MAAS machine's diff shows: where it is in its lifecycle and what racksmith sets on it.
MACHINE_DIFF_KEYS = (
    "hostname",
    "status_name",
    "pool",
    "zone",
    "tags",
    "osystem",
    "distro_series",
    "hwe_kernel",
    "boot_disk",
)


def machine_diff(before: Any, after: Any) -> dict[str, Any]:
    """``diff`` of two MAAS machines (``racksmith.maas.model.Machine`` or None when absent)."""
    return diff(
        before.summary() if before is not None else None,
        after.summary() if after is not None else None,
        keys=MACHINE_DIFF_KEYS,
    )
