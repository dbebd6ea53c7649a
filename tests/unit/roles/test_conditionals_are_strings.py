"""Every conditional in the project's YAML is a string.

Why: an unquoted ``that:`` item holding ``": "`` (``x is search('state: ONLINE')``) is a YAML
mapping, not an expression. YAML and ansible-lint accept it; Ansible only refuses it when the
task runs ("Conditional expressions must be strings"), which for a verify that runs only in the
VM lane means a lost run. This finds such items in every playbook, role and scenario at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CONDITION_KEYS = ("that", "when", "failed_when", "changed_when", "until")


def _yaml_files() -> list[Path]:
    files = [*REPO.glob("*.yml"), *REPO.glob("playbooks/**/*.yml"), *REPO.glob("roles/**/*.yml")]
    return sorted(f for f in files if ".collections" not in f.parts)


def non_string_conditions(document: object, where: str = "") -> list[str]:
    """Where a condition key holds something other than a string or a boolean."""
    found = []
    if isinstance(document, dict):
        for key, value in document.items():
            if key in CONDITION_KEYS:
                items = value if isinstance(value, list) else [value]
                found += [
                    f"{where}/{key}: {item!r}"
                    for item in items
                    if not isinstance(item, str | bool)
                ]
            found += non_string_conditions(value, f"{where}/{key}")
    elif isinstance(document, list):
        for index, item in enumerate(document):
            found += non_string_conditions(item, f"{where}[{index}]")
    return found


def test_the_check_finds_a_colon_in_an_unquoted_condition():
    task = yaml.safe_load("- assert:\n    that:\n      - out is search('state: ONLINE')\n")
    assert non_string_conditions(task) == [
        "[0]/assert/that: {\"out is search('state\": \"ONLINE')\"}"
    ]
    quoted = yaml.safe_load("- assert:\n    that:\n      - \"out is search('state: ONLINE')\"\n")
    assert non_string_conditions(quoted) == []


@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_condition_is_a_string(path):
    documents = list(yaml.safe_load_all(path.read_text()))
    found = [f for d in documents for f in non_string_conditions(d)]
    assert found == [], f"{path.relative_to(REPO)}: quote these conditions: {found}"
