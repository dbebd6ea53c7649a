"""Action racksmith.core.health_verdict: the health role's verdict, decided and said in one task.
(Its documentation: plugins/modules/health_verdict.py.)

Why: the role decided the verdict with a ``set_fact`` and said it with a ``debug``, two task
results per host (each costs ansible-playbook's main process 50-70 ms, issue 25). This does
both in one worker: the one fit rule through filter ``racksmith.core.health_fit``
(racksmith.health.golden.judge), the host's golden-set entry from that same verdict through
filter ``racksmith.core.golden_entry`` (nothing judged twice), returned as ``golden_entry``,
and the verdict line printed as ``debug`` prints it. The decisions stay in those filters (the
collection's convention: actions import no racksmith). It runs on the controller (no
connection), works in check mode and never reports ``changed``.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.template import trust_as_template
from ansible_collections.racksmith.core.plugins.plugin_utils.controller_action import (
    ControllerAction,
)

_JUDGE = (
    "quick | racksmith.core.health_fit(load=load, load_required=load_required,"
    " load_why_not=load_why_not, quick_error=quick_error, load_error=load_error)"
)
_ENTRY = "quick | racksmith.core.golden_entry(fitness=fitness, host=host, load=load)"


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(
            argument_spec={
                "host": {"type": "str", "required": True},
                "profile": {"type": "str", "default": ""},
                "quick": {"type": "dict", "default": {}},
                "load": {"type": "dict", "default": {}},
                "load_required": {"type": "bool", "default": True},
                "load_why_not": {"type": "str", "default": ""},
                "quick_error": {"type": "str", "default": ""},
                "load_error": {"type": "str", "default": ""},
            }
        )[1]
        result = super().run(tmp, task_vars)
        if not args["host"].strip():
            raise AnsibleActionFail("health_verdict: 'host' is empty")
        known = dict(args)
        known["fitness"] = self._evaluate(_JUDGE, known)
        entry = self._evaluate(_ENTRY, known)
        quick = args["quick"] or {}
        name = (quick.get("profile") or {}).get("name") or args["profile"]
        standin = quick.get("standin")
        line = f"{args['host']}: {entry['verdict']} (profile {name}"
        line += f", LAB STAND-IN: {standin})" if standin else ")"
        # no "changed" key: Ansible counts it as unchanged; the line is shown without -v
        result.update(
            msg=f"{line} {'; '.join(entry['reasons'])}".rstrip(),
            golden_entry=entry,
            _ansible_verbose_always=True,
        )
        return result

    def _evaluate(self, expression: str, known: dict):
        """``expression`` over ``known``, through the collection's filters."""
        return self._templar.evaluate_expression(
            trust_as_template(expression), local_variables=known
        )
