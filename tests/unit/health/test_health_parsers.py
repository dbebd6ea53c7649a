"""Pure parsers on real captured output (tests/fixtures/h200x2 and h200-x2), plus the inputs
they must refuse."""

from __future__ import annotations

import pytest
from health_support import CAPTURES, FAILURES, FIXTURES

from racksmith.health.parsers import (
    ParseError,
    int_or_none,
    kernel_log,
    misc,
    nvlink,
    smi_xml,
    sysfs,
)
from racksmith.lab.standin import parse_pci_capture


@pytest.mark.parametrize("capture", CAPTURES)
def test_smi_xml_on_real_capture(capture):
    log = smi_xml.parse((FIXTURES / capture / "smi_q.xml").read_text())
    assert log.driver_version == "580.159.04"
    assert log.cuda_version == "13.0"
    assert log.attached_gpus == 2 and len(log.gpus) == 2
    gpu = log.gpus[0]
    assert gpu.name == "NVIDIA H200"
    assert gpu.bus_id == "00000000:00:06.0"
    assert gpu.vbios == "96.00.A5.00.1A"
    assert gpu.inforom_image == "G520.0282.02.02"
    assert (gpu.ecc_current, gpu.ecc_pending) == ("Enabled", "Enabled")
    assert gpu.uncorrectable() == 0 and gpu.correctable() == 0
    assert (gpu.remap_pending, gpu.remap_failure) == (False, False)
    assert gpu.recovery_action == "None"
    assert gpu.clock_events == frozenset({"gpu_idle"})
    assert (gpu.pcie_gen, gpu.pcie_width, gpu.pcie_width_max) == (5, 16, 16)
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")
    assert 20 < gpu.temperature_c < 90


def test_smi_xml_failure_fixture_values():
    ecc = smi_xml.parse((FAILURES / "ecc-uncorrectable" / "smi_q.xml").read_text())
    assert [g.uncorrectable() for g in ecc.gpus] == [0, 3]
    assert ecc.gpus[1].uncorrectable("aggregate") == 3
    hot = smi_xml.parse((FAILURES / "thermal-slowdown" / "smi_q.xml").read_text())
    assert {"hw_slowdown", "hw_thermal_slowdown"} <= hot.gpus[0].clock_events
    assert "gpu_idle" not in hot.gpus[0].clock_events


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "empty output"),
        ("<nvidia_smi_log><attached_gpus>2", "not well-formed"),
        ("<other/>", "expected <nvidia_smi_log>"),
        (
            "<nvidia_smi_log><attached_gpus>2</attached_gpus><gpu id='x'/></nvidia_smi_log>",
            "says 2 but 1",
        ),
        ("<nvidia_smi_log><gpu id='x'/></nvidia_smi_log>", "no <attached_gpus>"),
    ],
)
def test_smi_xml_refuses_bad_input(text, error):
    with pytest.raises(ParseError, match=error):
        smi_xml.parse(text)


def test_smi_xml_truncated_real_output_is_refused():
    text = (FIXTURES / "h200-x2" / "smi_q.xml").read_text()
    with pytest.raises(ParseError):
        smi_xml.parse(text[: len(text) // 2])


def test_smi_xml_counter_that_is_not_a_number_names_the_gpu():
    text = (FIXTURES / "h200-x2" / "smi_q.xml").read_text()
    broken = text.replace(
        "<dram_uncorrectable>0</dram_uncorrectable>",
        "<dram_uncorrectable>lots</dram_uncorrectable>",
        1,
    )
    gpu = smi_xml.parse(broken).gpus[0]  # the other fields stay readable
    assert gpu.name == "NVIDIA H200"
    with pytest.raises(ParseError, match=r"GPU 0 \(00000000:00:06.0\): ecc_volatile .*'lots'"):
        gpu.uncorrectable()


@pytest.mark.parametrize("capture", CAPTURES)
def test_nvlink_status_and_errors_on_real_capture(capture):
    status = nvlink.parse_status((FIXTURES / capture / "nvlink-s.txt").read_text())
    assert sorted(status) == [0, 1]
    assert all(len(links) == 18 for links in status.values())
    assert all(
        link.active and link.speed_gbs == 26.562 for links in status.values() for link in links
    )
    errors = nvlink.parse_errors((FIXTURES / capture / "nvlink-e.txt").read_text())
    assert len(errors[1]) == 18
    assert errors[1][17] == {"Replay Errors": 0, "Recovery Errors": 0, "CRC Errors": 0}


def test_nvlink_inactive_link_from_failure_fixture():
    status = nvlink.parse_status((FAILURES / "nvlink-inactive" / "nvlink-s.txt").read_text())
    inactive = [
        (link.gpu, link.link) for links in status.values() for link in links if not link.active
    ]
    assert inactive == [(1, 5)]


@pytest.mark.parametrize(
    "text", ["", "Link 0: 26.562 GB/s\n", "GPU 0: NVIDIA H200\n\t Link 0: fast\n"]
)
def test_nvlink_status_refuses_bad_input(text):
    with pytest.raises(ParseError):
        nvlink.parse_status(text)


def test_kernel_log_real_capture_has_no_xid_and_keeps_timestamps():
    lines = kernel_log.parse((FIXTURES / "h200-x2" / "dmesg.txt").read_text())
    assert len(lines) > 300
    assert lines[0].seconds == 0.0 and lines[0].text.startswith("Linux version")
    assert kernel_log.xids(lines) == [] and kernel_log.sxids(lines) == []


@pytest.mark.parametrize(
    "fixture, code, pci", [("xid79", 79, "0000:00:07"), ("xid48", 48, "0000:00:06")]
)
def test_kernel_log_xids_from_failure_fixtures(fixture, code, pci):
    lines = kernel_log.parse((FAILURES / fixture / "dmesg.txt").read_text())
    xids = kernel_log.xids(lines)
    assert [(x.code, x.pci) for x in xids] == [(code, pci)]
    assert xids[0].seconds > 5000


def test_kernel_log_sxid_and_window():
    lines = kernel_log.parse(
        "[  10.0] nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 46 egress\n"
        "[ 900.5] NVRM: Xid (PCI:0000:18:00): 13, pid=1, Graphics Exception\n"
    )
    assert [(s.code, s.switch, s.pci) for s in kernel_log.sxids(lines)] == [
        (12028, 2, "0000:05:00.0")
    ]
    recent = kernel_log.since(lines, uptime_s=1000.0, window_s=200.0)
    assert [x.code for x in kernel_log.xids(recent)] == [13]
    assert kernel_log.since(lines, None, 200.0) == lines


@pytest.mark.parametrize("capture", CAPTURES)
def test_pci_links_from_real_sysfs_capture(capture):
    devices = parse_pci_capture((FIXTURES / capture / "pci-sysfs.txt").read_text())
    links = [sysfs.pci_link(addr, attrs) for addr, attrs in devices.items()]
    assert [link.kind for link in links] == ["gpu", "gpu"]
    assert all(
        (link.gen, link.width, link.max_gen, link.max_width) == (5, 16, 5, 16) for link in links
    )


def test_pci_link_values():
    assert sysfs.link_speed("32.0 GT/s PCIe") == 32.0
    assert sysfs.link_speed("Unknown") is None
    assert sysfs.link_width("0") is None
    nvme = sysfs.pci_link(
        "0000:c1:00.0",
        {
            "vendor": "0x144d",
            "class": "0x010802",
            "current_link_speed": "16.0 GT/s PCIe",
            "current_link_width": "4",
        },
    )
    assert (nvme.kind, nvme.gen, nvme.width) == ("nvme", 4, 4)
    switch = sysfs.pci_link("0000:05:00.0", {"vendor": "0x10de", "class": "0x068000"})
    assert switch.kind == "nvswitch"
    with pytest.raises(ParseError, match="not hex"):
        sysfs.pci_link("x", {"vendor": "nvidia"})


def test_ib_port_values():
    port = sysfs.ib_port(
        "mlx5_0",
        1,
        {
            "state": "4: ACTIVE",
            "phys_state": "5: LinkUp",
            "rate": "400 Gb/sec (4X NDR)",
            "link_layer": "InfiniBand",
        },
        {"symbol_error": "0", "link_downed": "2\n"},
    )
    assert (port.state, port.phys_state, port.rate_gbps) == ("ACTIVE", "LinkUp", 400.0)
    assert port.counters == {"symbol_error": 0, "link_downed": 2}
    with pytest.raises(ParseError, match="not a number"):
        sysfs.ib_port("mlx5_0", 1, {}, {"symbol_error": "N/A"})


def test_modules_and_mounts_from_real_capture():
    names = sysfs.module_names(
        (FIXTURES / "h200-x2" / "proc-modules.txt").read_text() or "nvidia 1 0 - Live 0x0\n"
    )
    assert isinstance(names, frozenset)
    mounts = sysfs.mounts("/dev/vda / ext4 rw 0 0\ntank /mnt/my\\040data zfs rw 0 0\n")
    assert [(m.mountpoint, m.fstype) for m in mounts] == [("/", "ext4"), ("/mnt/my data", "zfs")]


ZPOOL = """\
  pool: scratch
 state: DEGRADED
status: One or more devices could not be used because the label is missing or invalid.
config:

\tNAME                     STATE     READ WRITE CKSUM
\tscratch                  DEGRADED     0     0     0
\t  raidz1-0               DEGRADED     0     0     0
\t    /dev/nvme0n1p1       ONLINE       0     0     0
\t    /dev/nvme1n1p1       UNAVAIL      0     0     0  was /dev/nvme1n1p1
\t    /dev/nvme2n1p1       ONLINE       0     0    12

errors: No known data errors
"""


def test_zpool_status_layout_of_openzfs_man_page():
    """Layout as zpool-status(8) documents it (no ZFS on the capture host, so not a capture)."""
    [pool] = misc.zpool_status(ZPOOL)
    assert (pool.name, pool.state) == ("scratch", "DEGRADED")
    bad = [v.name for v in pool.vdevs if v.state != "ONLINE" or v.errors]
    assert bad == ["scratch", "raidz1-0", "/dev/nvme1n1p1", "/dev/nvme2n1p1"]
    with pytest.raises(ParseError):
        misc.zpool_status("cannot open 'x': no such pool\nsomething else")


def test_gpu_list_and_clock_state():
    text = (
        "GPU 0: NVIDIA H200 (UUID: GPU-7f44e7c6-5a62-fe80-67d1-82857b17d482)\n"
        "GPU 1: NVIDIA H200 (UUID: GPU-5ec807cd-2473-364c-3cab-dfc771bd7dc2)\n"
    )
    assert misc.gpu_list(text) == 2
    assert misc.gpu_list("No devices were found") == 0
    # the H200 capture host's real adjtimex(2) reading (tests/fixtures/h200-x2/capture.json)
    assert not misc.ClockState(5, 64, 16_000_000, 16_000_000).synchronized
    assert misc.ClockState(0, 0x2001, 12_000, 500).synchronized


def test_int_or_none():
    assert int_or_none("N/A") is None and int_or_none("[N/A]") is None and int_or_none(" 7 ") == 7
    with pytest.raises(ParseError):
        int_or_none("seven")
