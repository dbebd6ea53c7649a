"""Action racksmith.core.role_arguments: check a host's inputs against the argument specs of
several roles at once. (Its documentation: plugins/modules/role_arguments.yml.)

Why: ansible-core puts one "Validating arguments against arg spec" task at the top of every
role it imports, so the configure phase paid seven such tasks per host (a worker and a task
result each, issue 25), also for the roles a host does not select. configure.yml imports the
roles with ``rolespec_validate: false`` and runs this instead: one task per host, every role the
host selects, checked exactly as ansible-core checks a role (the spec's ``main`` entry point
from the role's ``meta/argument_specs.yml``; the values the host's variables give, templated;
ansible's own ``ArgumentSpecValidator`` with ``validate_role_argument_spec``). It fails naming
each role and each error (one line, for the run report), and runs on the controller (no
connection, check mode too).

Arguments:
  roles        the roles (FQCN, e.g. ``racksmith.core.base``) whose specs to check
  entry_point  the spec's entry point (default ``main``, as a role's own tasks/main.yml)
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.utils.collection_loader._collection_finder import _get_collection_role_path
from ansible_collections.racksmith.core.plugins.plugin_utils.controller_action import (
    ControllerAction,
)


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(
            argument_spec={
                "roles": {"type": "list", "elements": "str", "required": True},
                "entry_point": {"type": "str", "default": "main"},
            }
        )[1]
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        errors: dict[str, list[str]] = {}
        checked = []
        for role in args["roles"]:
            options = self._options(role, args["entry_point"])
            if options is None:
                continue  # no spec for this entry point: ansible-core checks nothing either
            given = {name: task_vars[name] for name in options if name in task_vars}
            found = ArgumentSpecValidator(options).validate(
                self._templar.template(given), validate_role_argument_spec=True
            )
            checked.append(role)
            if found.error_messages:
                errors[role] = list(found.error_messages)
        result["changed"] = False
        result["roles_checked"] = checked
        if errors:
            lines = [f"role {role}: {msg}" for role, msgs in errors.items() for msg in msgs]
            result.update(
                failed=True,
                msg="Validation of arguments failed: " + "; ".join(lines),
                argument_errors=errors,
            )
        else:
            result["msg"] = f"The arg specs of {len(checked)} role(s) passed"
        return result

    def _options(self, role: str, entry_point: str) -> dict | None:
        """The ``options`` of ``role``'s spec for ``entry_point`` (None: the role has none)."""
        found = _get_collection_role_path(role)
        if not found:
            raise AnsibleActionFail(f"role_arguments: role {role!r} is not a collection's role")
        path = found[1]
        for ext in (".yml", ".yaml"):
            spec_file = os.path.join(path, "meta", "argument_specs" + ext)
            if os.path.exists(spec_file):
                break
        else:
            return None
        data = self._loader.load_from_file(spec_file) or {}
        if not isinstance(data, dict) or not isinstance(data.get("argument_specs", {}), dict):
            raise AnsibleActionFail(f"role_arguments: {spec_file}: not an argument_specs mapping")
        spec = (data.get("argument_specs") or {}).get(entry_point)
        if not spec:
            return None
        return dict(spec.get("options") or {})
