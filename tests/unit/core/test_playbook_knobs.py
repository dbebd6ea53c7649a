"""The playbooks' knobs have one home (issue 24): roles/racksmith's defaults, each with a type
and a line of documentation in its argument specs; no playbook carries a default of its own."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "racksmith"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
OPTIONS = SPECS["knobs"]["options"]
PLAYBOOKS = [*sorted((REPO / "playbooks").glob("*.yml")), REPO / "playbooks" / "vars" / "maas.yml"]


def test_every_knob_has_a_type_a_line_of_doc_and_its_default():
    assert set(DEFAULTS) == set(OPTIONS)
    for name, spec in OPTIONS.items():
        assert spec.get("type") and spec.get("description"), name
        assert spec.get("default") == DEFAULTS[name], name


def test_the_defaults_are_valid_for_their_types():
    spec = {
        name: {k: v for k, v in option.items() if k in ("type", "elements", "choices")}
        for name, option in OPTIONS.items()
    }
    given = {k: v for k, v in DEFAULTS.items() if v is not None}
    result = ArgumentSpecValidator(spec).validate(given)
    assert not result.error_messages


def test_no_playbook_defaults_a_knob_inline():
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in PLAYBOOKS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        for knob in OPTIONS
        if f"{knob} | default(" in line
    ]
    assert offenders == []


def test_every_play_that_reads_a_knob_loads_the_role():
    missing = []
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            if "hosts" not in play:
                continue
            text = yaml.safe_dump(play) + " ".join(play.get("vars_files") or [])
            reads = [k for k in OPTIONS if k in text] + (
                ["racksmith_maas_wait_budgets"] if "vars/maas.yml" in text else []
            )
            if reads and "racksmith.core.racksmith" not in (play.get("roles") or []):
                missing.append(f"{path.name}: {play['name']}: {sorted(set(reads))}")
    assert missing == []


def test_entry_point_is_not_main():
    """`main` would make Ansible validate on every play, one task per host per play."""
    assert set(SPECS) == {"knobs"}
    assert not (ROLE / "tasks").exists()
