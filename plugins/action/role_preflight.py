"""Action racksmith.core.role_preflight: a role's whole preflight as one task.
(Its documentation: plugins/modules/role_preflight.py.)

Why one task: every GPU-host role began with the same three to five tasks (gather the facts
when no earlier role did, read the PCI bus when no earlier role did, read the host, one assert
over every problem, say why the role is skipped). Each is a forked worker and a task result
per host, and the "when no earlier role did" ones cost that even when skipped: on a rerun of
the configure phase they were a third of its results (issue 25). This action does the same
steps in one worker:

1. the facts (``ansible.builtin.setup`` with ``gather_subset``), only when one of ``facts`` is
   missing from ``ansible_facts``;
2. the PCI bus (the probe of ``racksmith.pci``), only when ``pci_root`` is given and no earlier
   role of the run counted the bus under that root; the counts are kept as the host fact
   ``ansible_facts.racksmith_pci_counts`` (the counts plus ``root``) for the roles after it;
3. the role's problems (``problems``: the name of a variable listing them), evaluated only
   now, with what steps 1-2 found, so the role's lazy vars read the facts as if an earlier task
   had set them; any problem fails the task with every problem, before the host is read further;
4. the role's own read-only probe (``probe``: the name of a variable holding an argv), whose
   result is returned as ``ansible.builtin.command`` returns it (``rc``, ``stdout``, ...), so
   ``register`` gives the role what its probe task registered before;
5. why the role is skipped (``skip``, a variable name, evaluated with the probe's result under
   the task's ``register`` name): a reason returns ``racksmith_skip`` as
   ``racksmith.core.role_skip`` does, for the report;
6. where it applies, what drifted (``drift``, the name of the role's verify-first list, also
   evaluated with the probe's result): returned as ``drift`` and said, so that the role's
   ``meta: end_role`` reads ``<register>.drift | length == 0`` in the main process without
   working anything out again; otherwise ``say``'s message, if given.

Everything it runs on the host only reads, so it runs in check mode as well (the task needs
``check_mode: false`` for the probe, as the probe task had). It never reports a change.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template
from ansible.vars.clean import namespace_facts
from ansible_collections.racksmith.core.plugins.action.role_skip import WHOLE_ROLE, skip_result

#: The host fact the PCI counts are kept under (ansible_facts.racksmith_pci_counts).
PCI_FACT = "racksmith_pci_counts"
#: What the probe returns, as ansible.builtin.command would.
PROBE_KEYS = ("rc", "stdout", "stderr", "stdout_lines", "stderr_lines", "cmd")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(
            argument_spec={
                "facts": {"type": "list", "elements": "str", "default": ["os_family"]},
                "gather_subset": {"type": "list", "elements": "str", "default": ["min"]},
                "pci_root": {"type": "str"},
                "probe": {"type": "str"},
                "problems": {"type": "str", "required": True},
                "skip": {"type": "str"},
                "skip_part": {"type": "str", "default": WHOLE_ROLE},
                "drift": {"type": "str"},
                "say": {"type": "str"},
            }
        )[1]
        task_vars = dict(task_vars or {})
        result = super().run(tmp, task_vars)
        facts = dict(task_vars.get("ansible_facts") or {})
        found: dict = {}  # what this task learnt, returned as host facts

        # a fact the role decides on is missing: gather (it never decides without it)
        if any(name not in facts for name in args["facts"]):
            gathered = self._module(
                "ansible.legacy.setup", {"gather_subset": args["gather_subset"]}, task_vars
            )
            if gathered.get("failed"):
                return self._failed(result, "gathering the facts failed", gathered)
            found.update(gathered.get("ansible_facts") or {})

        # counts an earlier role read under another root (a test tree), or of another shape,
        # are read again, never trusted
        root = args["pci_root"]
        known_counts = facts.get(PCI_FACT)
        if root and not (isinstance(known_counts, dict) and known_counts.get("root") == root):
            # the probe and its parser are the filters' (racksmith.pci): one format, one place
            argv = self._filter("pci_probe_argv", root)
            read = self._module("ansible.legacy.command", {"argv": argv}, task_vars)
            if read.get("failed") or read.get("rc"):
                return self._failed(result, f"reading the PCI bus under {root} failed", read)
            try:
                counts = self._filter("pci_counts", read.get("stdout", ""))
            except AnsibleError as exc:
                return self._failed(result, f"the PCI bus under {root}", {"msg": str(exc)})
            found[PCI_FACT] = {**counts, "root": root}

        # as a later task will see them: ansible_facts without the modules' "ansible_" prefix
        known = {**task_vars, "ansible_facts": {**facts, **namespace_facts(found)["ansible_facts"]}}
        result["changed"] = False
        if found:
            result["ansible_facts"] = found
        problems = self._evaluate(known, args["problems"])
        if not isinstance(problems, list):
            raise AnsibleActionFail(f"role_preflight: {args['problems']} is not a list of problems")
        if problems:
            result.update(failed=True, msg="; ".join(str(p) for p in problems), problems=problems)
            return result
        if args["probe"]:
            argv = self._evaluate(known, args["probe"])
            if not isinstance(argv, list) or not argv:
                raise AnsibleActionFail(f"role_preflight: {args['probe']} is not an argv list")
            probe = self._module(
                "ansible.legacy.command", {"argv": [str(a) for a in argv]}, task_vars
            )
            if probe.get("failed") or probe.get("rc"):
                return self._failed(result, "the role's probe failed", probe)
            probe = {
                k: probe[k]
                for k in ("rc", "stdout", "stderr", "stdout_lines", "stderr_lines", "cmd")
                if k in probe
            }
            result.update(probe)
            if self._task.register:
                known[self._task.register] = {**probe, "changed": False, "failed": False}

        reason = self._evaluate(known, args["skip"]) if args["skip"] else ""
        if reason:
            result.update(skip_result(self._role(), args["skip_part"], str(reason)))
            if args["drift"]:
                result["drift"] = []  # the role does not apply: nothing of it to repair
            return result
        if args["drift"]:
            drift = self._evaluate(known, args["drift"])
            if not isinstance(drift, list):
                raise AnsibleActionFail(f"role_preflight: {args['drift']} is not a list")
            result["drift"] = drift
            if self._task.register:  # what the role reads of it from here on (say's message)
                known[self._task.register] = {**known.get(self._task.register, {}), "drift": drift}
            if drift:  # said as the role's "Say what drifted" debug said it
                result.update(msg=drift, _ansible_verbose_always=True)
                return result
        said = self._evaluate(known, args["say"]) if args["say"] else None
        if said:
            result.update(msg=said, _ansible_verbose_always=True)
        else:
            result["msg"] = "nothing drifted" if args["drift"] else "preflight passed"
        return result

    def _module(self, name: str, module_args: dict, task_vars: dict) -> dict:
        return self._execute_module(module_name=name, module_args=module_args, task_vars=task_vars)

    def _filter(self, name: str, value):
        """``value | racksmith.core.<name>``, through the collection's filter."""
        expression = trust_as_template(f"value | racksmith.core.{name}")
        return self._templar.evaluate_expression(expression, local_variables={"value": value})

    def _evaluate(self, known: dict, name: str):
        """The role variable ``name``, templated now, with what this task found."""
        templar = self._templar.copy_with_new_env(available_variables=known)
        return templar.evaluate_expression(trust_as_template(name))

    @staticmethod
    def _failed(result: dict, what: str, got: dict) -> dict:
        detail = got.get("msg") or got.get("stderr") or f"rc={got.get('rc')}"
        result.update(failed=True, changed=False, msg=f"{what}: {detail}")
        return result

    def _role(self) -> str:
        role = getattr(self._task, "_role", None)
        name = str(getattr(role, "_role_name", "") or "") if role is not None else ""
        if not name:
            raise AnsibleActionFail("role_preflight: this task is not inside a role")
        return name
