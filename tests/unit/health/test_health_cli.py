"""The agent's command line on this machine (no GPU: it must say NOT FIT with reasons and
exit 1 or 2), its JSON and Prometheus outputs, and bad invocations."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from health_support import ROOT

from racksmith.health.outcome import EXIT_NOT_FIT, EXIT_UNDECIDED


def agent(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "racksmith.health", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(env or os.environ, PYTHONPATH=str(ROOT)),
    )


@pytest.fixture
def no_gpu_env(tmp_path):
    """PATH without any nvidia-smi, whatever the test machine has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dmesg", "systemctl", "zpool", "docker", "sh"):
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if os.path.isfile(os.path.join(d, tool)):
                os.symlink(os.path.join(d, tool), bin_dir / tool)
                break
    return dict(os.environ, PATH=str(bin_dir))


def test_machine_without_gpu_is_not_fit_with_reasons(no_gpu_env):
    proc = agent("check", env=no_gpu_env)
    assert proc.returncode in (EXIT_NOT_FIT, EXIT_UNDECIDED), proc.stderr
    assert re.search(r"^\S+: NOT FIT", proc.stdout, re.M)
    assert (
        "FAIL     nvidia_smi       nvidia-smi is not installed: no NVIDIA driver on this host"
        in proc.stdout
    )
    assert "fix: Install the NVIDIA driver" in proc.stdout


def test_default_run_on_this_machine_is_never_fit():
    """Plain `python3 -m racksmith.health check`, exactly as the issue asks."""
    proc = agent("check")
    assert proc.returncode in (EXIT_NOT_FIT, EXIT_UNDECIDED)
    assert "NOT FIT" in proc.stdout and "FIT  [" not in proc.stdout.replace("NOT FIT", "")


def test_json_report_and_prometheus_file(no_gpu_env, tmp_path):
    prom = tmp_path / "textfile" / "racksmith_health.prom"
    report_file = tmp_path / "report.json"
    proc = agent(
        "check", "--json", "--prom", str(prom), "--report", str(report_file), env=no_gpu_env
    )
    report = json.loads(proc.stdout)
    assert report == json.loads(report_file.read_text())
    assert report["schema"] == "racksmith.health/v1" and report["kind"] == "quick"
    assert report["verdict"] == "NOT FIT" and report["exit_code"] == proc.returncode
    assert report["profile"]["name"] == "hgx-h200-8gpu"
    assert report["reasons"][0].split()[0] in ("UNKNOWN", "FAIL")
    names = [c["name"] for c in report["checks"]]
    assert len(names) == len(set(names)) == 24
    text = prom.read_text()
    assert (
        f'racksmith_health_exit_code{{kind="quick",profile="hgx-h200-8gpu"}} {proc.returncode}'
        in text
    )
    assert 'racksmith_health_fit{kind="quick",profile="hgx-h200-8gpu"} 0' in text
    assert re.search(
        r'racksmith_health_check_status\{kind="quick",profile="hgx-h200-8gpu",'
        r'check="nvidia_smi",status="FAIL"\} 1',
        text,
    )
    for line in text.splitlines():  # exposition format: comments or `name{labels} value`
        assert line.startswith("# ") or re.fullmatch(r"[a-z_:]+(\{[^}]*\})? -?[\d.e+-]+", line), (
            line
        )
    assert not list(prom.parent.glob(".*"))  # no temporary file left behind


def test_bad_profile_is_a_report_not_a_crash(tmp_path):
    proc = agent("check", "--profile", "no-such-profile")
    assert proc.returncode == EXIT_UNDECIDED
    assert "NOT FIT (could not decide)" in proc.stdout
    assert "no profile named 'no-such-profile'" in proc.stdout


def test_unknown_only_check_is_refused():
    proc = agent("check", "--only", "ecc,eccc")
    assert proc.returncode == EXIT_UNDECIDED
    assert "--only names unknown checks: eccc" in proc.stderr


def test_profiles_lists_the_builtins():
    proc = agent("profiles")
    assert proc.returncode == 0
    assert re.search(r"^h200-x2-vm\s+2 x H200", proc.stdout, re.M)
    assert "LAB STAND-IN" in proc.stdout
