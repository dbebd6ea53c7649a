"""The Xid table as data matches the reference's proposed severities, and the kernel-log
allow-list accepts real benign lines while surfacing anything else."""

from __future__ import annotations

import pytest
from health_support import FAILURES, FIXTURES

from racksmith.health import allowlist
from racksmith.health.outcome import Severity
from racksmith.health.parsers import kernel_log
from racksmith.health.xid import HARMLESS_SXIDS, classify

# docs/health.md, Xid table, "Proposed" column (from the reference, section 3)
FAIL = (48, 61, 62, 64, 74, 79, 94, 95, 119, 120)
WARN = (13, 31, 43, 45, 63, 92, 154)


@pytest.mark.parametrize("code", FAIL)
def test_fail_codes(code):
    assert classify(code).severity == Severity.FAIL and classify(code).remediation


@pytest.mark.parametrize("code", WARN)
def test_warn_codes(code):
    assert classify(code).severity == Severity.WARN


def test_codes_outside_the_table():
    assert classify(57).severity == Severity.FAIL  # an error class in imbue's list
    assert classify(999).severity == Severity.WARN
    assert "not in racksmith's table" in classify(999).meaning
    assert 12021 in HARMLESS_SXIDS and 12028 not in HARMLESS_SXIDS


@pytest.mark.parametrize("capture", ["h200x2", "h200-x2"])
def test_real_healthy_logs_are_fully_allowed(capture):
    name = "dmesg.txt" if (FIXTURES / capture / "dmesg.txt").exists() else "dmesg-nvrm.txt"
    lines = kernel_log.parse((FIXTURES / capture / name).read_text())
    watched = [ln.text for ln in lines if allowlist.is_watched(ln.text)]
    assert len(watched) >= 10
    assert [t for t in watched if not allowlist.is_allowed(t)] == []


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: GPU 0000:00:07.0: GPU has fallen off the bus.",
        "mlx5_core 0000:18:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe"
        " x8 link at 0000:17:01.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)",
        "nvme nvme0: I/O 123 QID 4 timeout, aborting",
        "pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:01:00.0",
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (x)"
        "  and then something else entirely; Xid",
        "123 nvidia anything",
    ],
)
def test_bad_or_unknown_lines_are_not_allowed(line):
    assert allowlist.is_watched(line)
    assert not allowlist.is_allowed(line)


def test_patterns_must_match_the_whole_line():
    benign = "nvidia: loading out-of-tree module taints kernel."
    assert allowlist.is_allowed(benign)
    assert not allowlist.is_allowed(benign + " but the GPU is on fire")


def test_fixture_fall_off_line_is_the_one_surfaced():
    lines = kernel_log.parse((FAILURES / "xid79" / "dmesg.txt").read_text())
    unknown = [
        ln.text
        for ln in lines
        if allowlist.is_watched(ln.text)
        and not allowlist.is_allowed(ln.text)
        and not kernel_log.XID.search(ln.text)
    ]
    assert unknown == ["NVRM: GPU 0000:00:07.0: GPU has fallen off the bus."]


def test_profile_patterns_are_compiled_and_bad_ones_named():
    extra = allowlist.compile_extra([r"nvme nvme\d+: I/O \d+ QID \d+ timeout, aborting"])
    assert allowlist.is_allowed("nvme nvme0: I/O 123 QID 4 timeout, aborting", extra)
    with pytest.raises(ValueError, match=r"kernel_log\.allow pattern '\('"):
        allowlist.compile_extra(["("])
