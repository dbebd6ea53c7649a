"""The nvidia_driver role's decisions (racksmith.roles.nvidia_driver, filters in
plugins/filter/nvidia_driver.py): the source's refusals as a preflight problem, and the
after-install check over one probe's output.

The nvidia-smi lines are the recorded two-H200 host's (tests/fixtures/h200x2/query-gpu.csv,
see its README), cut to the three columns the role's probe asks for (pci.bus_id,
driver_version, persistence_mode), in nvidia-smi's csv,noheader form."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles import nvidia_driver
from racksmith.testing.plugins import plugin_filters

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "h200x2" / "query-gpu.csv"
DROPIN = "/etc/systemd/system/nvidia-persistenced.service.d/racksmith.conf"


def _recorded_smi() -> str:
    rows = list(csv.reader(FIXTURE.read_text().splitlines(), skipinitialspace=True))
    header, gpus = rows[0], rows[1:]
    cols = [header.index(name) for name in ("pci.bus_id", "driver_version", "persistence_mode")]
    return "".join(", ".join(row[c] for c in cols) + "\n" for row in gpus)


SMI = _recorded_smi()
FM = f"{nvidia_driver.FM_MARK}\nactive\n"


def problems(text=SMI, **changes):
    options = dict(gpus=2, version="", branch="580", persistence=True, dropin=DROPIN,
                   fabricmanager=False)  # fmt: skip
    return nvidia_driver.check_problems(text, **{**options, **changes})


def test_the_recorded_host_passes_on_its_branch_and_exact_version():
    assert SMI.splitlines()[0] == "00000000:00:06.0, 580.159.04, Enabled"
    assert problems() == []
    assert problems(version="580.159.04") == []
    assert problems(SMI + FM, fabricmanager=True) == []


def test_each_failure_is_said_in_the_roles_words():
    assert problems(branch="535") == [
        "nvidia-smi reports ['580.159.04', '580.159.04']; expected 2 GPUs on branch 535"
    ]
    assert problems(version="580.95.05") == [
        "nvidia-smi reports ['580.159.04', '580.159.04']; expected 2 GPUs on 580.95.05"
    ]
    # a GPU missing from nvidia-smi (fallen off the bus)
    assert problems(gpus=8)[0].endswith("expected 8 GPUs on branch 580")
    off = SMI.replace("Enabled\n", "Disabled\n", 1)
    assert problems(off) == [
        "persistence mode is off on ['00000000:00:06.0, Disabled'] (nvidia-persistenced must run"
        f" with --persistence-mode: {DROPIN})"
    ]
    assert problems(off, persistence=False) == []
    assert problems(SMI + f"{nvidia_driver.FM_MARK}\nfailed\n", fabricmanager=True) == [
        "nvidia-fabricmanager is failed"
    ]


def test_output_that_is_not_the_probes_fails_closed():
    with pytest.raises(ValueError, match="expected bus id, driver, persistence"):
        problems("NVIDIA-SMI has failed because it couldn't communicate with the driver\n")
    with pytest.raises(ValueError, match="lacks fabric manager's state"):
        problems(SMI, fabricmanager=True)


def test_the_check_command_asks_what_the_parser_reads(tmp_path):
    """The argv, run by /bin/sh with nvidia-smi and systemctl replaced by commands that print
    the recorded lines when asked exactly the role's questions."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "smi.txt").write_text(SMI)
    scripts = {
        "nvidia-smi": '[ "$*" = "--query-gpu=pci.bus_id,driver_version,persistence_mode'
        f' --format=csv,noheader" ] || exit 2\ncat {tmp_path}/smi.txt\n',
        "systemctl": '[ "$*" = "show --property=ActiveState --value nvidia-fabricmanager" ]'
        " || exit 2\necho active\n",
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    argv = nvidia_driver.check_argv(smi=True, fabricmanager=True)
    done = subprocess.run(argv, env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True,
                          text=True, check=True, timeout=60)  # fmt: skip
    assert problems(done.stdout, fabricmanager=True) == []
    only_fm = nvidia_driver.check_argv(smi=False, fabricmanager=True)
    assert "nvidia-smi" not in only_fm[2]
    # nvidia-smi failing fails the command (set -e), so the task fails naming it
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found' >&2; exit 6\n")
    failed = subprocess.run(argv, env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, capture_output=True,
                            text=True, check=False, timeout=60)  # fmt: skip
    assert failed.returncode == 6


def test_the_sources_refusal_is_a_problem_to_list():
    refused = nvidia_driver.install_refusals(
        "ubuntu", "580", kernel_flavour="generic-hwe-22.04", version="580.95.05",
        kernel_release="5.15.0-125-generic",
    )  # fmt: skip
    assert len(refused) == 1
    assert "keeps only the newest version of each package" in refused[0]
    assert "nvidia_driver_source: cuda" in refused[0]
    assert (
        nvidia_driver.install_refusals(
            "ubuntu", "580", kernel_flavour="generic", kernel_release="5.15.0-125-generic"
        )
        == []
    )


def test_the_filters_are_thin_adapters():
    filters = plugin_filters("plugins/filter/nvidia_driver.py")
    assert filters["nvidia_driver_check_argv"](True, fabricmanager=False) == (
        nvidia_driver.check_argv(smi=True, fabricmanager=False)
    )
    assert filters["nvidia_driver_check_problems"](SMI, "2", "580", persistence=True) == []
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_check_problems: nvidia-smi line"):
        filters["nvidia_driver_check_problems"]("garbage\n", 2, "580")
    assert filters["gpu_install_refusals"]("ubuntu", "580", kernel_flavour="generic",
                                           kernel_release="5.15.0-125-generic") == []  # fmt: skip
