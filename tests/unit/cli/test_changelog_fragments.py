"""The changelog is antsibull-changelog fragments (issue 27 item 6): every fragment under
``changelogs/fragments/`` and ``changelogs/changelog.yaml`` must pass antsibull-changelog's own
linter, and the linter must really refuse a bad fragment (so a pass here means something)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TOOL = Path(sys.executable).with_name("antsibull-changelog")


def _lint(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is missing: `make setup` installs antsibull-changelog (dev extra)")
    return subprocess.run(
        [str(TOOL), *args], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_fragments_pass_antsibull_changelog_lint():
    fragments = sorted((REPO / "changelogs" / "fragments").glob("*.yml"))
    assert fragments, "no fragments: every change adds one (docs/collection.md)"
    done = _lint(REPO, "lint")
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr
    done = _lint(REPO, "lint-changelog-yaml", "changelogs/changelog.yaml")
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_the_linter_refuses_a_bad_fragment(tmp_path):
    shutil.copy(REPO / "galaxy.yml", tmp_path / "galaxy.yml")
    shutil.copytree(REPO / "changelogs", tmp_path / "changelogs")
    bad = tmp_path / "changelogs" / "fragments" / "bad.yml"
    bad.write_text("minor_changes: not a list\nnew_things:\n  - x\n")
    done = _lint(tmp_path, "lint")
    assert done.returncode != 0
    assert "bad.yml" in done.stdout and "new_things" in done.stdout, done.stdout
