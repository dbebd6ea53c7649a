"""The PCI probe of roles nvidia_driver, gdr, container_runtime and dcgm (racksmith.pci, filters
racksmith.core.pci_probe_argv and racksmith.core.pci_counts): the real /bin/sh command run on a
sysfs tree built from the HGX H200 fixture, its output parsed and counted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.pci import ParseError, PciCounts, count_kinds, parse_probe, probe_argv
from racksmith.testing.plugins import plugin_filters
from racksmith.testing.sysfs import write_pci_tree

HGX = Path(__file__).resolve().parents[2] / "fixtures" / "ubuntu-22.04" / "pci-sysfs.txt"
FILTERS = plugin_filters("plugins/filter/pci.py")


def probe(root: Path | str) -> subprocess.CompletedProcess:
    return subprocess.run(
        probe_argv(str(root)), capture_output=True, text=True, timeout=30, check=False
    )


@pytest.fixture
def hgx(tmp_path) -> Path:
    assert write_pci_tree(HGX, tmp_path) == 50
    return tmp_path


def test_hgx_board_counts(hgx):
    done = probe(hgx)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 50
    assert "0000:1b:00.0 0x10de 0x030200" in done.stdout.splitlines()
    # 8 H200, 4 NVSwitches, 8 CX-7 InfiniBand + 2 CX-7 Ethernet; the ASPEED BMC display
    # (0x1a03, class 0x030000) and the Intel management NIC are not counted
    assert count_kinds(parse_probe(done.stdout)) == PciCounts(
        gpu=8, nvswitch=4, hca=10, nvme=9, functions=50
    )


def test_filters_give_what_the_roles_read(hgx):
    argv = FILTERS["pci_probe_argv"](str(hgx))
    # the check-mode integration test finds the loop over the root it was given
    assert f"for d in {hgx}/bus/pci/devices/*;" in argv[-1]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    assert FILTERS["pci_counts"](out) == {
        "gpu": 8, "nvswitch": 4, "hca": 10, "nvme": 9, "functions": 50,
    }  # fmt: skip


def test_function_without_a_readable_vendor_is_left_out(hgx):
    (hgx / "bus/pci/devices/0000:1b:00.0/vendor").unlink()
    (hgx / "bus/pci/devices/not-a-function").mkdir()
    counts = count_kinds(parse_probe(probe(hgx).stdout))
    assert (counts.gpu, counts.functions) == (7, 49)


def test_empty_bus_counts_nothing(tmp_path):
    (tmp_path / "bus/pci/devices").mkdir(parents=True)
    done = probe(tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    assert count_kinds(parse_probe(done.stdout)) == PciCounts(0, 0, 0, 0, 0)


def test_root_without_a_pci_bus_fails_naming_it(tmp_path):
    done = probe(tmp_path / "nowhere")
    assert done.returncode == 1 and done.stdout == ""
    assert f"no PCI bus to read: {tmp_path}/nowhere/bus/pci/devices is not a directory" in (
        done.stderr
    )


def test_root_with_shell_characters_is_one_word(tmp_path):
    root = tmp_path / "a b;$(touch pwned)'"
    write_pci_tree(HGX, root)
    done = probe(root)
    assert done.returncode == 0, done.stderr
    assert count_kinds(parse_probe(done.stdout)).gpu == 8
    assert not list(Path.cwd().glob("pwned")) and not (tmp_path / "pwned").exists()


def test_unreadable_class_is_an_error_naming_the_line(hgx):
    (hgx / "bus/pci/devices/0000:05:00.0/class").unlink()
    out = probe(hgx).stdout
    assert "0000:05:00.0 0x10de -" in out.splitlines()
    with pytest.raises(ParseError, match=r"line 3: 0000:05:00.0: vendor/class are not hex"):
        parse_probe(out)


@pytest.mark.parametrize(
    "text, error",
    [
        ("0000:18:00.0 0x10de\n", r"line 1: expected '<address> <vendor> <class>'"),
        ("\n0000:18:00.0 0x10de 0x0302 extra\n", r"line 2: expected"),
        ("0000:18:00.0 nvidia 0x030200\n", r"line 1: 0000:18:00.0: vendor/class are not hex"),
    ],
)
def test_malformed_output_is_refused(text, error):
    with pytest.raises(ParseError, match=error):
        parse_probe(text)
    with pytest.raises(AnsibleFilterError, match="pci_counts: .*" + error):
        FILTERS["pci_counts"](text)


def test_kinds_follow_the_health_checks_rule():
    out = "\n".join(
        [
            "a 0x10de 0x030200",  # H200/H100 SXM: 3D controller
            "b 0x10de 0x030000",  # VGA-class NVIDIA GPU
            "c 0x1a03 0x030000",  # ASPEED BMC display: no GPU
            "d 0x10de 0x068000",  # NVSwitch
            "e 0x15b3 0x020700",  # ConnectX InfiniBand
            "f 0x15b3 0x020000",  # ConnectX Ethernet
            "g 0x8086 0x020000",  # Intel NIC: no RDMA NIC
            "h 0x144d 0x010802",  # NVMe
        ]
    )
    assert count_kinds(parse_probe(out)) == PciCounts(2, 1, 2, 1, 8)


@pytest.mark.parametrize("root", ["", "sys", "relative/sys", "/sys\n/x", None])
def test_root_must_be_an_absolute_path(root):
    with pytest.raises(ValueError, match="sysfs root must be an absolute path"):
        probe_argv(root)
    with pytest.raises(AnsibleFilterError, match="pci_probe_argv: "):
        FILTERS["pci_probe_argv"](root)


def test_counts_filter_wants_text():
    with pytest.raises(AnsibleFilterError, match="expected the probe's stdout"):
        FILTERS["pci_counts"](["0000:18:00.0 0x10de 0x030200"])


@pytest.mark.parametrize(
    "listing, error",
    [
        ("0000:18:00.0 vendor=0x10de class=0x030200\n", r"x\.txt:1: expected"),
        ("\n", r"x\.txt:1: expected"),
        ("a vendor=1 device=2 class=3\na vendor=1 device=2 class=3\n", r"x\.txt:2: a is listed"),
    ],
)
def test_tree_builder_refuses_a_bad_listing(tmp_path, listing, error):
    (tmp_path / "x.txt").write_text(listing)
    with pytest.raises(ValueError, match=error):
        write_pci_tree(tmp_path / "x.txt", tmp_path / "root")
