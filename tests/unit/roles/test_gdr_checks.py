"""Role gdr's checks (racksmith.roles.gdr, filters racksmith.core.gdr_problems/gdr_probe): every
input problem in one list with the messages the separate asserts had, and the host probe read
back, failing closed."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.gdr import ProbeError, parse_probe, problems
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/gdr_checks.py")
GOOD = {
    "os_family": "Debian",
    "distribution": "Ubuntu",
    "kernel_params": ["iommu=pt"],
    "method": "doca",
    "modules": "",
    "branch": "580",
}


def test_good_inputs_have_no_problem():
    assert problems(**GOOD) == []
    assert problems(**{**GOOD, "method": "dmabuf", "modules": "open"}) == []
    assert FILTERS["gdr_problems"]("none", "Debian", "Debian", ["iommu=pt", "pci=realloc"]) == []


def test_every_problem_is_said_at_once_in_the_asserts_words():
    found = problems(
        os_family="RedHat",
        distribution="Rocky",
        kernel_params=["iommu=pt", "bad word"],
        method="inbox",
    )
    assert found[0] == "role gdr supports Ubuntu 22.04 and Debian 12; this host is Rocky"
    assert found[1] == (
        "gdr_kernel_params must be name or name=value words: ['iommu=pt', 'bad word']"
    )
    assert found[2].startswith("gpu_gdr_packages: ")
    assert "inbox" in found[2]
    assert len(found) == 3


def test_dmabuf_needs_the_open_modules():
    (found,) = problems(**{**GOOD, "method": "dmabuf", "modules": "proprietary"})
    assert found.startswith("gpu_gdr_packages: ")


def test_the_probe_is_read_back():
    out = "@openibd no\n@unit:racksmith-disable-acs.service yes\n@policy\nrdma-core:\n"
    assert parse_probe(out, ["openibd"]) == {
        "openibd": "no",
        "unit:racksmith-disable-acs.service": "yes",
        "policy": "rdma-core:\n",
    }
    verify = "@driver NVRM version: NVIDIA UNIX Open Kernel Module  580.95.05\n@open yes\n"
    after = FILTERS["gdr_probe"](verify + "@cmdline BOOT_IMAGE=/vmlinuz iommu=pt\n@policy\n")
    assert after["open"] == "yes"
    assert after["cmdline"].split()[-1] == "iommu=pt"
    assert after["driver"].startswith("NVRM version")


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("@openibd no\n", "lacks its @policy line"),
        ("@policy\n", "lacks @openibd"),
        ("@openibd no\nhead: cannot open\n@policy\n", "not a probe line"),
    ],
)
def test_output_that_is_not_the_probes_fails_closed(stdout, says):
    with pytest.raises(ProbeError, match=says):
        parse_probe(stdout, ["openibd"])
    with pytest.raises(AnsibleFilterError, match="gdr_probe: "):
        FILTERS["gdr_probe"](stdout, ["openibd"])
