"""Which of a role's concerns a run's tags select (racksmith.roles.tags, filter
racksmith.core.selected_concerns): base's looped files, units and directories act only on the
items whose concern the run selects, with Ansible's rule for tasks."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.tags import selected_concerns
from racksmith.testing.plugins import plugin_filters

FILTER = plugin_filters("plugins/filter/selected_concerns.py")["selected_concerns"]
BASE = ["base_apt", "base_time", "base_cpu", "base_holds", "base_sysctl"]


@pytest.mark.parametrize(
    ("run", "skip", "want"),
    [
        # no --tags: Ansible reports ['all']; an empty list means the same
        (["all"], [], ["always", *BASE]),
        ([], [], ["always", *BASE]),
        # a phase, play or role tag selects the role's tasks by inheritance: the whole role
        # (a sliced run's --tags configure,validate once left chrony uninstalled)
        (["configure", "validate"], [], ["always", *BASE]),
        (["base"], [], ["always", *BASE]),
        (["tagged"], [], ["always", *BASE]),
        # a concern tag narrows it; with a whole-role tag beside it, the role still runs whole
        (["base_time"], [], ["always", "base_time"]),
        (["base_cpu", "base_apt"], [], ["always", "base_apt", "base_cpu"]),
        (["base_time", "configure"], [], ["always", *BASE]),
        # untagged alone: every item carries a tag, so only what always runs
        (["untagged"], [], ["always"]),
        # skipped concerns are never selected; --skip-tags always drops always
        (["all"], ["base_cpu", "base_holds"], ["always", "base_apt", "base_time", "base_sysctl"]),
        (["base_time"], ["always"], ["base_time"]),
        (["base_time"], ["base_time"], ["always"]),
    ],
)
def test_the_run_tags_select_concerns_as_ansible_selects_tasks(run, skip, want):
    assert selected_concerns(run, skip, BASE) == want
    assert FILTER(run, skip, BASE) == want


def test_a_role_without_concerns_is_an_error_naming_it():
    with pytest.raises(ValueError, match="names no concerns"):
        selected_concerns(["all"], [], [])
    with pytest.raises(AnsibleFilterError, match="names no concerns"):
        FILTER(["all"], [], [])
