"""``racksmith redfish ...`` as an operator runs it (a subprocess, real emulated BMCs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ISSUE_KEYS = [
    "bmc",
    "service_tag",
    "serial",
    "model",
    "manufacturer",
    "bmc_firmware",
    "bios_version",
    "power_state",
    "nics",
    "pxe_mac",
    "gpus",
    "error",
]


@pytest.fixture
def run(lab_dir):
    def go(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RACKSMITH_BMC_")}
        common = [
            "--env-file",
            str(lab_dir / "secrets" / "bmc.env"),
            "--ca-bundle",
            str(lab_dir / "ca" / "ca.pem"),
        ]
        return subprocess.run(
            [sys.executable, "-m", "racksmith", "redfish", *args, *common],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    return go


def test_discover_json_one_object_per_bmc_with_the_issue_keys(rack, server, run):
    lab = rack([server(1), server(4, model="r750-h100pcie")])
    port_a, port_b = lab.bmc("gpu01").port, lab.bmc("gpu04").port
    spec = (
        f"127.0.0.1:{min(port_a, port_b)}-{max(port_a, port_b)}"
        if abs(port_a - port_b) == 1
        else None
    )
    args = (
        ["--bmc", spec]
        if spec
        else ["--bmc", str(lab.target("gpu01")), "--bmc", str(lab.target("gpu04"))]
    )
    done = run("discover", "--json", *args)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 2
    for record in records:
        assert all(key in record for key in ISSUE_KEYS) and record["error"] is None
        assert all(set(n) == {"id", "mac"} and n["mac"] == n["mac"].lower() for n in record["nics"])
        assert all({"id", "model", "serial"} <= set(g) for g in record["gpus"])
    by_bmc = {r["bmc"]: r for r in records}
    assert by_bmc[str(lab.target("gpu01"))]["pxe_mac"] == lab.bmc("gpu01").server.pxe_mac


def test_discover_exits_1_when_any_bmc_failed(rack, server, run):
    lab = rack([server(1), server(6, faults=("bmc_unreachable",))])
    done = run(
        "discover",
        "--json",
        "--bmc",
        str(lab.target("gpu01")),
        "--bmc",
        str(lab.target("gpu06")),
        "--deadline",
        "5",
    )
    assert done.returncode == 1
    failed = [json.loads(line) for line in done.stdout.splitlines() if json.loads(line)["error"]]
    assert (
        len(failed) == 1
        and failed[0]["error_kind"] == "unreachable"
        and failed[0]["service_tag"] is None
    )
    assert "1 of 2 BMCs failed" in done.stderr


def test_table_output_names_the_failure(rack, server, run):
    lab = rack([server(7, faults=("bmc_auth_failed",))])
    done = run("discover", "--bmc", str(lab.target("gpu07")))
    assert done.returncode == 1 and "auth_failed: login: HTTP 401" in done.stdout


def test_power_off_needs_yes_and_explicit_bmcs(rack, server, run):
    lab = rack([server(1)])
    bmc = lab.bmc("gpu01")
    refused = run("power", "off", "--bmc", str(lab.target("gpu01")))
    assert refused.returncode == 2 and "--yes" in refused.stderr
    swept = run("power", "on", "--bmc", "127.0.0.1:1-3")
    assert swept.returncode != 0 and "list each one explicitly" in swept.stderr
    dry = run("power", "on", "--dry-run", "--bmc", str(lab.target("gpu01")))
    assert (
        dry.returncode == 0
        and json.loads(dry.stdout)["changed"] is True
        and bmc.power_state() == "Off"
    )
    assert "would power on" in dry.stderr
    done = run("power", "on", "--bmc", str(lab.target("gpu01")), "--wait", "10")
    assert done.returncode == 0 and json.loads(done.stdout)["after"] == "On"


def test_boot_once_and_clock(rack, server, run):
    lab = rack([server(1, faults=("bmc_clock_skew",))])
    target = str(lab.target("gpu01"))
    boot = json.loads(run("boot-once", "--bmc", target).stdout)
    assert boot["after"]["target"] == "Pxe" and boot["changed"]
    report = run("clock", "--bmc", target)
    assert report.returncode == 0 and json.loads(report.stdout)["before"]["skew_seconds"] > 3600
    fixed = json.loads(run("clock", "--set", "--bmc", target).stdout)
    assert fixed["changed"] and abs(fixed["after"]["skew_seconds"]) <= 5


def test_bad_input_is_named(run):
    done = run("discover", "--bmc", "10.0.0.0/33")
    assert done.returncode != 0 and "10.0.0.0/33" in done.stderr


def test_vendor_option_on_discover_and_actions(rack, server, run):
    lab = rack([server(2, model="dgx-h100")])
    target = str(lab.target("gpu02"))
    found = json.loads(run("discover", "--bmc", target, "--json").stdout)
    assert found["vendor"] == "nvidia-dgx" and found["system_uri"] == "/redfish/v1/Systems/DGX"
    forced = json.loads(run("discover", "--bmc", target, "--json", "--vendor", "generic").stdout)
    assert forced["vendor"] == "generic"
    unknown = run("discover", "--bmc", target, "--vendor", "acme")
    assert unknown.returncode == 2 and "acme" in unknown.stderr
    boot = json.loads(run("boot-once", "--bmc", target, "--system", "DGX").stdout)
    assert boot["changed"] and boot["after"]["target"] == "Pxe"
    assert lab.bmc("gpu02").stats["boot_patch"] == 1
    wrong = json.loads(run("boot-once", "--bmc", target, "--vendor", "dell").stdout)
    assert wrong["error_kind"] == "http_error" and "405" in wrong["error"]


def test_compliance_command_json_and_exit_status(rack, server, run, tmp_path):
    """``racksmith redfish compliance``: one pure JSON report; exit 1 when a host drifts, 0
    when all comply; a broken baseline file is a usage error before any BMC is asked."""
    lab = rack([server(1, model="r750-h100pcie")])
    bmc = f"127.0.0.1:{lab.bmc('gpu01').port}"
    baseline = tmp_path / "baseline.yml"
    baseline.write_text(
        "host_types:\n"
        "  - name: r750\n"
        "    match: {vendor: dell}\n"
        "    firmware: [{component: BIOS.Setup.1-1, target: '1.9.0'}]\n"
    )
    done = run("compliance", "--bmc", bmc, "--baseline", str(baseline), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (host,) = report["hosts"]
    assert (host["status"], host["quarantined"]) == ("DRIFT", True)
    assert host["findings"][0]["current"] == "1.8.2"  # the captured BIOS
    baseline.write_text(baseline.read_text().replace("1.9.0", "1.8.2"))
    done = run("compliance", "--bmc", bmc, "--baseline", str(baseline))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "COMPLIANT" in done.stdout
    baseline.write_text("host_types: nope\n")
    done = run("compliance", "--bmc", bmc, "--baseline", str(baseline))
    assert done.returncode == 2 and "host_types list" in done.stderr
