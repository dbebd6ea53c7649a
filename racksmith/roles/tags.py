"""Which of a role's concerns a run's ``--tags``/``--skip-tags`` select.

A role that folds several concerns into one looped task (base writes the apt proxy, chrony's
files and the governor unit in one ``template`` loop: issue 25, fewer task results per host)
cannot let Ansible's tags pick the items: tags select tasks, not loop items. Each item carries
its concern's tag instead, and this module decides which items a run acts on, with the rule
Ansible applies to tasks:

- a run tag that is not one of the role's concerns (``all``, ``tagged``, a play or phase tag
  such as ``configure``, the role's own tag) selects the whole role, because the role's tasks
  inherit that tag from the play or import;
- otherwise only the concerns named by run tags are selected (``--tags base_time``);
- ``untagged`` alone selects no concern (every item carries a tag);
- a skipped concern is never selected, whatever the run tags;
- ``always`` is selected unless ``--skip-tags always`` says otherwise, as in Ansible.

The decision lives here once, unit-tested, and reaches roles through the filter
``racksmith.core.selected_concerns``.
"""

from __future__ import annotations

from collections.abc import Iterable

ALWAYS = "always"


def selected_concerns(
    run_tags: Iterable[str], skip_tags: Iterable[str], concerns: Iterable[str]
) -> list[str]:
    """The concern tags (plus ``always``) a run selects, in the order of ``concerns``.

    ``run_tags`` and ``skip_tags`` are Ansible's ``ansible_run_tags`` and
    ``ansible_skip_tags``; an empty ``run_tags`` means ``all``, as Ansible reports it.
    """
    concerns = list(dict.fromkeys(concerns))
    if not concerns:
        raise ValueError("selected_concerns: the role names no concerns")
    run = set(run_tags) or {"all"}
    skip = set(skip_tags)
    whole_role = bool(run - set(concerns) - {ALWAYS, "untagged"})
    chosen = concerns if whole_role else [c for c in concerns if c in run]
    return [t for t in [ALWAYS, *chosen] if t not in skip]
