"""The lab stays in the lab: production playbooks and roles never name it (issue 8).

The lab enters through its own inventory (inventory/lab/), its group_vars and lab-only roles
(named lab_*); a production path that branches on the lab would test something other than
what a real site runs.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
_LAB = re.compile(r"racksmith_lab|racksmith\.lab")


def _production_files():
    for top in ("playbooks", "roles"):
        for path in sorted((REPO / top).rglob("*")):
            rel = path.relative_to(REPO)
            if not path.is_file() or (top == "roles" and rel.parts[1].startswith("lab_")):
                continue
            if "molecule" in rel.parts:  # test scenarios run on lab hosts by design
                continue
            yield rel, path


def test_no_production_playbook_or_role_mentions_the_lab():
    offenders = [
        f"{rel}:{n}: {line.strip()}"
        for rel, path in _production_files()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if _LAB.search(line)
    ]
    assert offenders == []


def test_the_check_would_see_a_lab_branch(tmp_path):
    """Guard against the scan silently finding no files."""
    files = [rel for rel, _ in _production_files()]
    assert any(rel.parts[0] == "playbooks" for rel in files)
    assert any(rel.parts[:2] == ("roles", "base") for rel in files)
    assert _LAB.search("when: racksmith_lab | bool")
