"""Action racksmith.core.maas_outcome: one host's outcome of an enlist or deploy batch, as the
host's own task result. (Its documentation: plugins/modules/maas_outcome.py.)

Why: the MAAS phases used to copy each host's result out of the batch with a ``set_fact`` and
print it with a ``debug`` carrying ``changed_when``/``failed_when``: two task results per host,
each a forked worker on the controller (issue 25). This is one: it prints the line the debug
printed (the actions, ``nothing to do``, or MAAS's cause), reports the host ``changed`` when
its machine changed, and fails it with the cause, so the play's rescue records it. Registered
as ``racksmith_maas_enlist``/``racksmith_maas_deploy``, it keeps MAAS's ``triage``, which the
run report reads (docs/contracts.md). It runs on the controller, in check mode too, and needs
no racksmith package (the decision is :func:`host_outcome`, unit-tested).

Arguments:
  result   the host's entry in the maas_fleet result's ``hosts`` (none: it was not in the batch)
  problem  why the host was left out of the batch (racksmith.core.maas_fleet_batch's problems)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.racksmith.core.plugins.plugin_utils.controller_action import (
    ControllerAction,
)

#: A host with neither a result nor a problem: the batch did not run for it (fail closed).
NO_RESULT = "the batch returned no result for this host"


def _text(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split())


def host_outcome(result: Mapping[str, Any] | None, problem: str = "") -> dict[str, Any]:
    """The host's task result from its ``maas_fleet`` result, or from the problem that kept it
    out of the batch: ``msg`` always (on failure the cause, which the rescue records);
    ``changed``/``failed`` only when true; ``triage`` (MAAS's own) when the failure has one."""
    if _text(problem):
        return {"msg": _text(problem), "failed": True}
    if not isinstance(result, Mapping):
        return {"msg": NO_RESULT, "failed": True}
    out: dict[str, Any] = {}
    if result.get("failed"):
        out["msg"] = _text(result.get("cause")) or _text(result.get("msg")) or "failed (no reason)"
    else:
        out["msg"] = "; ".join(str(a) for a in result.get("actions") or []) or "nothing to do"
    if result.get("changed"):
        out["changed"] = True
    if result.get("failed"):
        out["failed"] = True
        if isinstance(result.get("triage"), Mapping):
            out["triage"] = result["triage"]
    return out


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(
            argument_spec={
                "result": {"type": "dict"},
                "problem": {"type": "str", "default": ""},
            }
        )[1]
        result = super().run(tmp, task_vars)
        result.update(host_outcome(args["result"], args["problem"] or ""))
        result["_ansible_verbose_always"] = True
        return result
