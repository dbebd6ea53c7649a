"""Ansible filter ``racksmith.core.health_fit``: the fit verdict, decided by the library.

A thin adapter over :func:`racksmith.health.golden.judge`, the one fit rule that the golden
set and the rack report use too, so the health role's verdict cannot drift from theirs.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.health import golden
    from racksmith.health.golden import judge
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    golden = judge = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: health_fit
  author: racksmith developers
  version_added: "0.1.0"
  short_description: one host's fit verdict from its quick and load health reports
  description:
    - FIT only when the quick report says FIT and the load report says FIT, or load checks are
      not required and did not fail. Anything missing or undecided is NOT FIT with a reason.
    - The same rule builds the golden set and the rack report (racksmith.health.golden.judge).
  positional: _input
  options:
    _input:
      description: the parsed quick report (the agent's JSON), or an empty dict if none
      type: dict
      required: true
    load:
      description: the parsed load report, or an empty dict if the load checks did not run
      type: dict
      default: {}
    load_required:
      description: whether a host without a load report can be fit
      type: bool
      default: true
    load_why_not:
      description: why there is no load report (shown as the reason, or as why it is fine)
      type: str
      default: ""
    failure:
      description: the host failed outside the checks (unreachable, a rescued task)
      type: str
      default: ""
    quick_error:
      description: the quick checks could not run, and why
      type: str
      default: ""
    load_error:
      description: the load checks could not complete, and why
      type: str
      default: ""
"""

EXAMPLES = """
- name: Decide the verdict
  ansible.builtin.set_fact:
    health_fit: "{{ health_quick | racksmith.core.health_fit(load=health_load,
                    load_required=health_load_required | bool) }}"
"""

RETURN = """
  _value:
    description: C(fit) (bool), C(verdict) (FIT or NOT FIT), C(reasons) (list), C(load) (str)
    type: dict
"""


def health_fit(
    quick,
    load=None,
    load_required=True,
    load_why_not="",
    failure="",
    quick_error="",
    load_error="",
):
    _need_library("health_fit")
    for name, value in (("quick report", quick), ("load report", load)):
        if value not in (None, "") and not isinstance(value, dict):
            raise AnsibleFilterError(f"health_fit: the {name} must be a dict, got {value!r:.80}")
    return judge(
        quick or None,
        load or None,
        load_required=bool(load_required),
        load_why_not=str(load_why_not or ""),
        failure=str(failure or ""),
        quick_error=str(quick_error or ""),
        load_error=str(load_error or ""),
    ).to_dict()


def golden_entry(quick, fitness, host, load=None):
    """One host's golden-set entry from its reports and the verdict ``health_fit`` gave them
    (racksmith.health.golden.entry): judged once, in the play, never again from files."""
    _need_library("golden_entry")
    if not isinstance(fitness, dict) or "fit" not in fitness:
        raise AnsibleFilterError(
            f"golden_entry: fitness must be health_fit's result, got {fitness!r:.80}"
        )
    return golden.entry(str(host), quick or None, load or None, fitness)


def golden_set(inputs, run_id="", generated=None):
    """The golden set from each host's entry, or ``{failure: why}`` for a host that never
    reached the health checks (racksmith.health.golden.assemble)."""
    _need_library("golden_set")
    try:
        return golden.assemble(inputs, run_id=str(run_id or ""), generated=generated or None)
    except (ValueError, KeyError, TypeError) as exc:
        raise AnsibleFilterError(f"golden_set: {exc}") from exc


def golden_files(golden_set_value):
    """File name -> text of the golden set (golden-set.json, golden-set.md)."""
    _need_library("golden_files")
    return golden.files(golden_set_value)


def _need_library(name):
    if judge is None:
        raise AnsibleFilterError(
            f"{name} needs the racksmith Python package on the controller: {_IMPORT_ERROR}"
        )


class FilterModule:
    """racksmith's fit verdict and the golden set (see racksmith.health.golden)."""

    def filters(self):
        return {
            "health_fit": health_fit,
            "golden_entry": golden_entry,
            "golden_set": golden_set,
            "golden_files": golden_files,
        }
