"""Issue 23 (and issue 20's persistence-mode and GPUDirect items) on real H200 captures: a GPU
held by a leftover process, persistence mode, firmware against the baseline, the GPUDirect
path, and remediation text by severity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from health_support import FIXTURES

from racksmith.health import firmware
from racksmith.health.checks import all_checks, requirements
from racksmith.health.checks.gpu import leftover_findings
from racksmith.health.host import Host
from racksmith.health.outcome import CheckResult, Finding, Severity, fail, unknown
from racksmith.health.parsers import ParseError, rdma, smi_xml
from racksmith.health.profile import load
from racksmith.health.report import Report
from racksmith.health.runner import run_checks

HELD = FIXTURES / "h200-x1-held"


def by_name(results):
    return {r.name: r for r in results}


@pytest.fixture
def x1_profile(tmp_path: Path) -> Path:
    path = tmp_path / "unit-x1.json"
    path.write_text(
        json.dumps(
            {
                "extends": "h200-x1-vm",
                "name": "unit-x1",
                "skip": {"disk_space": "unit test: the test machine's disks are not under test"},
            }
        )
    )
    return path


def test_clean_h200_host_is_fit_with_the_new_checks(replay, x1_profile):
    results = by_name(replay("h200-x1").run(x1_profile))
    bad = {
        n: r.findings for n, r in results.items() if r.status not in (Severity.OK, Severity.SKIPPED)
    }
    assert not bad
    for name in ("gpu_processes", "persistence_mode", "firmware"):
        assert results[name].status is Severity.OK, name
    assert results["firmware"].findings[0].reason == (
        "at the baseline: GPU inforom G520.0282.02.02, vbios 96.00.A5.00.1A"
    )


def test_leftover_process_holding_125_gib_is_not_fit_and_named(replay, x1_profile):
    r = replay("h200-x1", overlays=[HELD])
    results = by_name(r.run(x1_profile))
    held = results["gpu_processes"]
    assert held.status is Severity.FAIL
    reasons = [(f.subject, f.reason) for f in held.problems()]
    assert (
        "GPU 0 (00000000:00:06.0)",
        "process 704 (python3) holds the GPU: 128610 MiB",
    ) in reasons
    assert any(
        "128619 MiB of 143771 MiB in use" in reason and "704 (python3)" in reason
        for _, reason in reasons
    )
    others = {n for n, res in results.items() if res.status not in (Severity.OK, Severity.SKIPPED)}
    assert others == {"gpu_processes"}
    proc = r.agent("--profile", str(x1_profile))
    assert proc.returncode == 1 and "NOT FIT" in proc.stdout
    assert "process 704 (python3) holds the GPU: 128610 MiB" in proc.stdout


def test_allow_list_and_memory_limit_come_from_the_profile():
    log = smi_xml.parse((HELD / "smi_q.xml").read_text())
    assert leftover_findings(log, ("python3",), 200_000) == []
    only_memory = leftover_findings(log, ("/usr/bin/python3",), 1024)
    assert [f.severity for f in only_memory] == [Severity.FAIL]
    assert "128619 MiB" in only_memory[0].reason


def test_persistence_mode_off_fails(replay, x1_profile, tmp_path):
    overlay = tmp_path / "pm-off"
    overlay.mkdir()
    text = (FIXTURES / "h200-x1" / "smi_q.xml").read_text()
    (overlay / "smi_q.xml").write_text(
        text.replace(
            "<persistence_mode>Enabled</persistence_mode>",
            "<persistence_mode>Disabled</persistence_mode>",
        )
    )
    result = by_name(replay("h200-x1", overlays=[overlay]).run(x1_profile))["persistence_mode"]
    assert result.status is Severity.FAIL
    assert result.findings[0].reason == "persistence mode is Disabled"
    assert "--no-persistence-mode" in result.findings[0].remediation


def test_firmware_baseline_mismatch_fails_naming_gpu_and_item(replay, tmp_path):
    profile = tmp_path / "site.json"
    profile.write_text(
        json.dumps(
            {
                "extends": "h200-x1-vm",
                "name": "site",
                "firmware": {"gpu": {"vbios": "96.00.B0.00.01"}},
                "skip": {"disk_space": "unit test"},
            }
        )
    )
    result = by_name(replay("h200-x1").run(profile))["firmware"]
    assert result.status is Severity.FAIL
    assert result.findings[0].reason == "vbios 96.00.A5.00.1A, baseline 96.00.B0.00.01"
    assert result.findings[0].subject == "GPU 0 (00000000:00:06.0)"


def test_firmware_compare_for_the_redfish_inventory():
    """The controller's side (issue 21) calls the same compare with the BMC's inventory."""
    baseline = {"HGX_FW_BMC_0": "24.09-1", "HGX_FW_GPU_SXM_1": "96.00.A5.00.1A"}
    found = firmware.compare(
        {"HGX_FW_BMC_0": "24.09-1", "HGX_FW_GPU_SXM_1": "96.00.99.00.01"},
        baseline,
        what="Redfish firmware inventory",
    )
    assert [(f.severity, f.reason) for f in found] == [
        (Severity.FAIL, "HGX_FW_GPU_SXM_1 96.00.99.00.01, baseline 96.00.A5.00.1A")
    ]
    missing = firmware.compare({}, baseline, what="Redfish firmware inventory")
    assert {f.severity for f in missing} == {Severity.UNKNOWN}


# -- HCA firmware, OFED/DOCA and the GPUDirect path, on a host built from files ------------
# `ofed_info -s` lines are written from NVIDIA's documentation and public site scripts: no host
# with MLNX_OFED or DOCA-OFED was available to capture (tests/fixtures/h200-x1/README.md).
OFED_LINES = {
    "mlnx": "MLNX_OFED_LINUX-23.10-1.1.9.0:",
    "doca": "OFED-internal-24.10-1.1.4:",
}
OPEN_NVRM = (FIXTURES / "h200-x1" / "driver-version.txt").read_text()
PROPRIETARY_NVRM = OPEN_NVRM.replace("Open Kernel Module", "Kernel Module")


def _host(
    tmp_path: Path,
    *,
    modules: str,
    nvrm: str,
    ofed: str | None,
    fw: str = "28.39.1002",
    kernel: str = "6.8.0-45-generic",
) -> Host:
    sysfs, procfs, bin_dir = tmp_path / "sys", tmp_path / "proc", tmp_path / "bin"
    for n in range(2):
        dev = sysfs / f"class/infiniband/mlx5_{n}"
        dev.mkdir(parents=True)
        (dev / "fw_ver").write_text(fw + "\n")
        port = dev / "ports/1"
        port.mkdir(parents=True)
        for name, value in (
            ("state", "4: ACTIVE"),
            ("phys_state", "5: LinkUp"),
            ("rate", "400 Gb/sec (4X NDR)"),
            ("link_layer", "InfiniBand"),
        ):
            (port / name).write_text(value + "\n")
    (procfs / "driver/nvidia").mkdir(parents=True)
    (procfs / "sys/kernel").mkdir(parents=True)
    (procfs / "driver/nvidia/version").write_text(nvrm)
    (procfs / "sys/kernel/osrelease").write_text(kernel + "\n")
    (procfs / "modules").write_text(modules)
    bin_dir.mkdir()
    if ofed is not None:
        tool = bin_dir / "ofed_info"
        tool.write_text(f"#!/bin/sh\necho '{ofed}'\n")
        tool.chmod(0o755)
    return Host(sysfs=sysfs, procfs=procfs, env={"PATH": str(bin_dir)})


PEERMEM = "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n"
NO_PEERMEM = "nvidia 1 0 - Live 0x0\n"


def _run(host: Host, names, **profile_over):
    data = {"extends": "hgx-h200-8gpu", "name": "unit-ib"}
    data.update(profile_over)
    path = host.procfs.parent / "p.json"
    path.write_text(json.dumps(data))
    return by_name(run_checks(all_checks(), load(str(path), requirements()), host, only=names))


@pytest.mark.parametrize("stack", ["mlnx", "doca"])
def test_gdr_peermem_over_ofed_is_ok_and_says_which(tmp_path, stack):
    host = _host(tmp_path, modules=PEERMEM, nvrm=PROPRIETARY_NVRM, ofed=OFED_LINES[stack])
    result = _run(host, ["gdr"])["gdr"]
    assert result.status is Severity.OK
    flavour = {"mlnx": "MLNX_OFED 23.10-1.1.9.0", "doca": "DOCA-OFED 24.10-1.1.4"}[stack]
    assert result.findings[0].reason == (
        f"GPUDirect RDMA path: nvidia_peermem over {flavour} (proprietary kernel modules)"
    )


def test_gdr_peermem_over_inbox_rdma_core_fails_with_the_reason(tmp_path):
    host = _host(tmp_path, modules=PEERMEM, nvrm=OPEN_NVRM, ofed=None)
    result = _run(host, ["gdr"])["gdr"]
    assert result.status is Severity.FAIL
    assert "inbox rdma-core" in result.findings[0].reason
    assert "DOCA-OFED" in result.findings[0].remediation


def test_gdr_dmabuf_with_the_open_modules(tmp_path):
    host = _host(tmp_path, modules=NO_PEERMEM, nvrm=OPEN_NVRM, ofed=None)
    result = _run(host, ["gdr"])["gdr"]
    assert result.status is Severity.OK
    assert result.findings[0].reason.startswith("GPUDirect RDMA path: DMA-BUF (open kernel modules")
    wants_peermem = _run(host, ["gdr"], hcas={"gdr": "peermem"})["gdr"]
    assert wants_peermem.status is Severity.FAIL


def test_gdr_no_path_with_the_proprietary_modules(tmp_path):
    host = _host(tmp_path, modules=NO_PEERMEM, nvrm=PROPRIETARY_NVRM, ofed=None)
    result = _run(host, ["gdr"])["gdr"]
    assert result.status is Severity.FAIL
    assert "proprietary kernel modules cannot export DMA-BUF" in result.findings[0].reason


def test_hca_firmware_and_ofed_against_the_baseline(tmp_path):
    host = _host(
        tmp_path, modules=PEERMEM, nvrm=OPEN_NVRM, ofed=OFED_LINES["mlnx"], fw="28.41.1000"
    )
    # GPU items out of this test: nvidia-smi is not on this host's PATH
    result = _run(host, ["firmware"], firmware={"gpu": None})["firmware"]
    assert result.status is Severity.FAIL
    assert [(f.subject, f.reason) for f in result.problems()] == [
        ("mlx5_0", "HCA firmware 28.41.1000, baseline 28.39.1002"),
        ("mlx5_1", "HCA firmware 28.41.1000, baseline 28.39.1002"),
    ]
    inbox = _host(tmp_path / "b", modules=PEERMEM, nvrm=OPEN_NVRM, ofed=None)
    result = _run(inbox, ["firmware"], firmware={"gpu": None})["firmware"]
    assert result.status is Severity.UNKNOWN
    assert "OFED/DOCA-OFED: not read from the `ofed_info -s` (not installed" in (
        result.findings[0].reason
    )


def test_ofed_info_and_driver_flavour_parsers():
    assert str(rdma.ofed_info("MLNX_OFED_LINUX-23.10-1.1.9.0:\n")) == "MLNX_OFED 23.10-1.1.9.0"
    with pytest.raises(ParseError, match="ofed_info -s"):
        rdma.ofed_info("command not found\n")
    assert rdma.kernel_module_flavour(OPEN_NVRM) == "open"
    assert rdma.kernel_module_flavour(PROPRIETARY_NVRM) == "proprietary"
    assert rdma.kernel_at_least("5.15.0-1-generic", 5, 12)
    assert not rdma.kernel_at_least("5.4.0-200-generic", 5, 12)


# -- remediation text by severity ----------------------------------------------------------


def test_each_severity_gets_its_own_default_remediation():
    texts = {
        s: Finding(s, "x").remediation for s in (Severity.WARN, Severity.FAIL, Severity.UNKNOWN)
    }
    assert len(set(texts.values())) == 3
    assert "could not run" in texts[Severity.UNKNOWN]
    assert "could not run" not in texts[Severity.FAIL]


def test_a_fail_prints_the_fail_text_not_the_unknown_text():
    """Before: a check with an UNKNOWN finding first and a FAIL printed only the first fix,
    whatever its severity (a FAIL of gpu_count read "find out why the check could not run")."""
    result = CheckResult(
        "gpu_count",
        "GPU count and model",
        (
            unknown("GPU 1: name could not be read"),
            fail("found 7 GPUs, expected 8", "Compare `nvidia-smi -L` with `lspci -d 10de:`."),
        ),
    )
    text = Report("quick", "p", "", [result], 0.0, 0.1).to_text()
    assert "fix (UNKNOWN): Find out why the check could not run" in text
    assert "fix (FAIL): Compare `nvidia-smi -L` with `lspci -d 10de:`." in text
    only_fail = CheckResult("gpu_count", "t", (fail("found 7 GPUs, expected 8", ""),))
    text = Report("quick", "p", "", [only_fail], 0.0, 0.1).to_text()
    assert "fix: Not fit: repair or replace" in text and "could not run" not in text


def test_the_recorded_h200_reports_say_what_docs_health_md_says():
    """The figures in docs/health.md come from these files (2026-12-01, real H200)."""
    run = FIXTURES / "h200-x1-run"
    clean = json.loads((run / "clean-quick.json").read_text())
    held = json.loads((run / "held-quick.json").read_text())
    load = json.loads((run / "held-load-report.json").read_text())
    assert (clean["verdict"], clean["exit_code"]) == ("FIT", 0)
    assert (held["verdict"], held["exit_code"]) == ("NOT FIT", 1)
    assert held["reasons"][0] == (
        "FAIL gpu_processes [GPU 0 (00000000:00:06.0)]: process 988 (python3) holds the GPU: "
        "128610 MiB"
    )
    assert (load["verdict"], [c["name"] for c in load["checks"]]) == ("NOT FIT", ["gpu_processes"])
    before = json.loads((run / "before-held-load-report.json").read_text())
    assert before["verdict"] == "FIT"  # the defect this issue fixed, as recorded


def test_the_xml_process_list_agrees_with_query_compute_apps():
    """The check reads ``<processes>`` from the one ``nvidia-smi -q -x`` call the GPU checks
    share; ``--query-compute-apps``, recorded at the same moment, says the same."""
    gpu = smi_xml.parse((HELD / "smi_q.xml").read_text()).gpus[0]
    rows = (HELD / "probe" / "compute-apps-nounits.csv").read_text().strip().splitlines()
    bus, _uuid, pid, name, used = (v.strip() for v in rows[0].split(","))
    assert len(rows) == 1 and bus == gpu.bus_id
    assert [(p.pid, p.name, p.used_mib) for p in gpu.processes] == [(int(pid), name, int(used))]
