"""Role health's one probe (racksmith.roles.health.probe_sections / probe_outcome, filters
racksmith.core.health_probe_sections / health_probe_outcome): run for real against a folder
laid out as the ship steps leave it, nothing drifts and the Python passes; each thing the ship
steps would change is named; a probe that did not run or printed something else fails closed
(a Python problem and drift)."""

from __future__ import annotations

import getpass
import grp
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith import hostprobe
from racksmith.roles.health import AGENT_MARKER, probe_outcome, probe_sections
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/health_checks.py")
PROFILE = b'{"name": "site", "extends": "lab-standin"}\n'


def _layout(tmp_path: Path) -> dict:
    """A host's folders as the ship steps leave them, and the role's wants for them."""
    agent = tmp_path / "agent"
    version = agent / "0123456789ab"
    (version / AGENT_MARKER).parent.mkdir(parents=True)
    (version / AGENT_MARKER).write_text("")
    report = tmp_path / "report"
    report.mkdir()
    for folder in (agent, version, report):
        folder.chmod(0o755)
    (agent / "current").symlink_to(version)
    (agent / "profile.json").write_bytes(PROFILE)
    (agent / "profile.json").chmod(0o644)
    src = tmp_path / "site-profile.json"
    src.write_bytes(PROFILE)
    return {
        "python": sys.executable,
        "agent_dir": str(agent),
        "version_dir": str(version),
        "report_dir": str(report),
        "profile_src": str(src),
        "profile_sha1": hashlib.sha1(PROFILE, usedforsecurity=False).hexdigest(),
    }


def _probe(want: dict) -> dict:
    """The probe run as the role runs it (its argv through racksmith.hostprobe), registered as
    ansible.builtin.command registers it. Not root: the owner is read as root, as on a host."""
    done = subprocess.run(
        hostprobe.probe_argv(probe_sections(want)), capture_output=True, text=True, check=False
    )
    stdout = done.stdout
    if os.geteuid() != 0:
        owner = f" {getpass.getuser()} {grp.getgrgid(os.getegid()).gr_name} "
        stdout = stdout.replace(owner, " root root ")
    return {"rc": done.returncode, "stdout": stdout, "stderr": done.stderr}


def test_a_host_with_this_version_as_shipped_has_no_drift(tmp_path):
    want = _layout(tmp_path)
    assert probe_outcome(_probe(want), want) == {"problem": "", "python": "", "drift": []}


def test_the_filter_hashes_the_controllers_profile(tmp_path):
    want = _layout(tmp_path)
    given = {k: v for k, v in want.items() if k != "profile_sha1"}
    run = _probe(want)
    assert FILTERS["health_probe_outcome"](run, given) == {"problem": "", "python": "", "drift": []}
    Path(given["profile_src"]).write_bytes(b"{}")
    assert FILTERS["health_probe_outcome"](run, given)["drift"] == [
        f"{given['agent_dir']}/profile.json: content differs"
    ]
    Path(given["profile_src"]).unlink()
    assert FILTERS["health_probe_outcome"](run, given)["drift"][0] == (
        f"the site profile {given['profile_src']} could not be read on the controller"
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("link", "current -> {other}, wanted {version}"),
        (
            "unpacked",
            "{version}/racksmith/health/__main__.py: missing (this version is not unpacked)",
        ),
        ("version", "{version}: missing"),
        ("report", "{report}: mode 700"),
        ("profile", "{agent}/profile.json: content differs"),
        ("profile_gone", "{agent}/profile.json: missing"),
    ],
)
def test_each_thing_the_ship_steps_would_change_is_drift(tmp_path, change, reason):
    want = _layout(tmp_path)
    agent, version = Path(want["agent_dir"]), Path(want["version_dir"])
    other = agent / "fedcba987654"
    if change == "link":
        (agent / "current").unlink()
        (agent / "current").symlink_to(other)
    elif change == "unpacked":
        (version / AGENT_MARKER).unlink()
    elif change == "version":
        want["version_dir"] = str(other)
    elif change == "report":
        Path(want["report_dir"]).chmod(0o700)
    elif change == "profile":
        (agent / "profile.json").write_bytes(b"{}")
    else:
        (agent / "profile.json").unlink()
    outcome = probe_outcome(_probe(want), want)
    assert outcome["python"] == ""
    expected = reason.format(
        other=other, version=want["version_dir"], report=want["report_dir"], agent=agent
    )
    assert any(expected in line for line in outcome["drift"]), outcome["drift"]


def test_no_bundle_means_drift_and_reads_no_version(tmp_path):
    want = {**_layout(tmp_path), "version_dir": ""}
    assert "0123456789ab" not in probe_sections(want)["files"]
    outcome = probe_outcome(_probe(want), want)
    assert outcome["drift"] == ["this run's agent bundle was not built (its version is unknown)"]


def test_a_python_that_is_missing_or_too_old_is_a_problem_not_a_failed_probe(tmp_path):
    want = {**_layout(tmp_path), "python": str(tmp_path / "no-python")}
    run = _probe(want)
    assert run["rc"] == 0
    outcome = probe_outcome(run, want)
    assert outcome["python"].startswith("exit 127: ")
    assert "no-python" in outcome["python"]
    assert outcome["drift"] == []
    old = tmp_path / "old-python"
    old.write_text("#!/bin/sh\nexit 1\n")
    old.chmod(0o755)
    want["python"] = str(old)
    assert probe_outcome(_probe(want), want)["python"] == "exit 1:"


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (None, "the probe did not run: no result"),
        ({"unreachable": True, "msg": "ssh: timed out "}, "unreachable: ssh: timed out"),
        ({"skipped": True}, "the probe did not run: skipped"),
        ({"failed": True, "msg": "no module"}, "the probe did not run: no module"),
        ({"rc": 1, "stdout": "", "stderr": "probe section files failed\n"},
         "the probe failed (exit 1): probe section files failed"),
        ({"rc": 0, "stdout": "### racksmith-probe:python\nok\n"},
         "the probe's output could not be read (the probe's output has no 'end' marker"),
        ({"rc": 0, "stdout": "### racksmith-probe:python\nok\n### racksmith-probe:end\n"},
         "the probe's output could not be read (the probe's output lacks section(s)"),
    ],
)  # fmt: skip
def test_a_probe_that_did_not_run_or_cannot_be_read_fails_closed(tmp_path, run, why):
    want = _layout(tmp_path)
    outcome = probe_outcome(run, want)
    assert outcome["problem"].startswith(why)
    assert outcome["python"] == ""
    assert outcome["drift"] == [outcome["problem"]]


def test_paths_that_are_not_absolute_are_refused_before_any_shell(tmp_path):
    want = {**_layout(tmp_path), "agent_dir": "opt/agent"}
    with pytest.raises(ValueError, match="agent_dir 'opt/agent' must be an absolute path"):
        probe_sections(want)
    with pytest.raises(AnsibleFilterError, match="health_probe_sections: health probe: agent_dir"):
        FILTERS["health_probe_sections"](want)


def test_the_filters_refuse_what_is_not_a_run_or_wants():
    with pytest.raises(AnsibleFilterError, match="health_probe_outcome: expected the registered"):
        FILTERS["health_probe_outcome"]("text", {})
    with pytest.raises(AnsibleFilterError, match="health_probe_sections: expected"):
        FILTERS["health_probe_sections"](["python"])
