"""An nvidia-smi that prints without end is UNKNOWN with the cap as its reason, not a FAIL
that says "exited with None" (the command was stopped, it did not exit)."""

from __future__ import annotations

import shutil

from racksmith.health.checks import all_checks
from racksmith.health.host import Host
from racksmith.health.outcome import Severity
from racksmith.health.profile import Profile
from racksmith.health.runner import run_checks


def test_endless_nvidia_smi_is_unknown_naming_the_cap(tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\nexec {shutil.which('yes')}\n")
    fake.chmod(0o755)
    host = Host(env={"PATH": str(tmp_path), "RACKSMITH_HEALTH_MAX_OUTPUT_LINES": "1000"})
    checks = {"nvidia_smi": all_checks()["nvidia_smi"]}
    (result,) = run_checks(checks, Profile("t", "", {}), host, deadline_s=20)
    assert result.status == Severity.UNKNOWN
    assert "cap of 1000 lines" in result.findings[0].reason
    assert "exited with" not in result.findings[0].reason
