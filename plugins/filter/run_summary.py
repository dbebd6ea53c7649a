"""Ansible filter ``racksmith.core.run_summary``: the run's results and causes for set_stats.

A thin adapter over :func:`racksmith.report.summary.run_summary`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

try:
    from racksmith.report.summary import run_summary
except ImportError as exc:  # the controller lacks the racksmith package: say so when used
    run_summary = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

DOCUMENTATION = """
  name: run_summary
  author: racksmith developers
  version_added: "0.1.0"
  short_description: hosts of the run counted by result and by failure cause
  description:
    - From the host facts the phases left (the ones the rack report reads), each host's result
      (GOLDEN, QUARANTINED, FAILED:<phase>, NOT_FIT, INCOMPLETE) and, for failed hosts, the
      triaged cause; counted for C(ansible.builtin.set_stats), which AWX shows as the job's
      artifacts.
    - A host that failed without recording its phase is INCOMPLETE here; the run directory's
      report.json has the full account.
  positional: _input, hosts
  options:
    _input:
      description: C(hostvars)
      type: dict
      required: true
    hosts:
      description: the hosts of the run (the controller, localhost, is left out)
      type: list
      elements: str
      required: true
    run_dir:
      description: the run directory, reported as is
      type: str
      default: ""
"""

EXAMPLES = """
- name: Hand AWX the run's summary
  ansible.builtin.set_stats:
    data:
      racksmith: >-
        {{ hostvars | racksmith.core.run_summary(ansible_play_hosts_all,
                                                 lookup('env', 'RACKSMITH_RUN_DIR')) }}
"""

RETURN = """
  _value:
    description: schema, run_dir, hosts (count), golden (count), results (count per result),
      causes (count per cause name)
    type: dict
"""


def _run_summary(hostvars, hosts, run_dir=""):
    if run_summary is None:
        raise AnsibleFilterError(
            f"racksmith.core.run_summary needs the racksmith Python package: {_IMPORT_ERROR}"
        )
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("racksmith.core.run_summary: input must be hostvars")
    try:
        return run_summary(hostvars, list(hosts), str(run_dir or ""))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"run_summary": _run_summary}
