"""Action racksmith.core.role_skip: a role says, as data, that it skips a part on this host.
(Its documentation: plugins/modules/role_skip.yml.)

Every role announces what it leaves out the same way (docs/contracts.md, "What a role skips"):
one task that returns ``racksmith_skip: {role, part, reason}``, which the report callback
(racksmith.core.racksmith_report) collects into report.json/.txt/.html/.prom. It runs on the
controller (no connection to the host), prints the reason like ``debug`` does, works in check
mode and never reports ``changed``, so a second run still ends ``changed=0``.

Arguments:
  reason  why the part does not apply to this host (one line a person can act on); required
  part    the part skipped, named like the role's tag for it (``nvidia_driver_fabricmanager``
          -> ``fabricmanager``); ``all`` (the default) when the whole role is skipped
  role    the role; by default the role the task belongs to (short name, no collection)

Example::

    - name: Say why fabric manager is skipped on this host
      racksmith.core.role_skip:
        part: fabricmanager
        reason: no NVSwitch on the PCI bus
      when: not _nvidia_driver_fm_applies | bool
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible_collections.racksmith.core.plugins.plugin_utils.controller_action import (
    ControllerAction,
)

#: The result key the report callback reads (racksmith.report.model.SKIP_KEY).
SKIP_KEY = "racksmith_skip"
WHOLE_ROLE = "all"


def skip_result(role: str, part: str, reason: str) -> dict:
    """The result keys of a skip (also returned by racksmith.core.role_preflight): the message
    printed as ``debug`` prints, and ``racksmith_skip`` for the report. Whitespace is folded; an
    empty reason fails."""
    reason = " ".join(str(reason).split())
    part = " ".join(str(part).split()) or WHOLE_ROLE
    if not reason:
        raise AnsibleActionFail(f"role_skip: role {role}: 'reason' is empty; say why")
    what = role if part == WHOLE_ROLE else f"{role}: {part}"
    # no "changed" key: Ansible counts it as unchanged, and the output stays two lines
    return {
        "msg": f"{what} skipped: {reason}",
        "_ansible_verbose_always": True,
        SKIP_KEY: {"role": role, "part": part, "reason": reason},
    }


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(
            argument_spec={
                "reason": {"type": "str", "required": True},
                "part": {"type": "str", "default": WHOLE_ROLE},
                "role": {"type": "str"},
            }
        )[1]
        result = super().run(tmp, task_vars)
        role = args["role"] or self._enclosing_role()
        if not role:
            raise AnsibleActionFail("role_skip: give 'role': this task is not inside a role")
        result.update(skip_result(role, args["part"], args["reason"]))
        return result

    def _enclosing_role(self) -> str:
        role = getattr(self._task, "_role", None)
        return str(getattr(role, "_role_name", "") or "") if role is not None else ""
