"""Role base's verify-first read and comparison (racksmith.roles.base.probe_sections and
drift; filters racksmith.core.base_probe_sections and racksmith.core.base_drift): the probe run
for real on this machine (its snippets are shell: they must print what the parsers read), and
every difference named, anything unread counting as drift (fail closed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith import hostprobe
from racksmith.roles import base
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/base_checks.py")


def reads(tmp_path: Path, **extra: object) -> dict:
    """What the role names for its probe, pointed at files under ``tmp_path``."""
    return {
        "cpufreq": str(tmp_path / "cpufreq"),
        "governor_unit": str(tmp_path / "unit.service"),
        "sysctl": ["kernel.hostname"],
        "packages": ["bash", "racksmith-no-such-package"],
        "files": [str(tmp_path)],
        "services": [],
        "governor_script": str(tmp_path / "governor"),
        "governor": "performance",
        "sysctl_file": str(tmp_path / "90-base.conf"),
        **extra,
    }


def probe(read: dict) -> dict[str, str]:
    """Run the probe the role would run, here, and split its sections."""
    argv = hostprobe.probe_argv(FILTERS["base_probe_sections"](read))
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return hostprobe.parse_sections(out, base.SECTIONS)


def governor_script(tmp_path: Path, status: int) -> None:
    """A stand-in for racksmith-cpu-governor: ``--check GOVERNOR`` exits ``status``."""
    script = tmp_path / "governor"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = --check ] && [ "$2" = performance ] && exit {status}\nexit 9\n'
    )
    script.chmod(0o755)


def me(path: Path) -> tuple[str, str, str]:
    out = subprocess.run(["stat", "-c", "%a %U %G", str(path)], capture_output=True, text=True)
    mode, owner, group = out.stdout.split()
    return mode, owner, group


def test_nothing_drifted_on_what_this_machine_has(tmp_path: Path) -> None:
    # written as ansible.posix.sysctl leaves it, plus what an admin may add around it; the
    # last line has no newline (the probe must still end its section)
    (tmp_path / "90-base.conf").write_text(
        "# a comment = 1\n\n vm.swappiness = 10 \nkernel.numa_balancing=1\n"
        "kernel.numa_balancing=0\nnet.ipv4.tcp_rmem=4096 87380 6291456"
    )
    governor_script(tmp_path, 0)
    mode, owner, group = me(tmp_path)
    hostname = Path("/proc/sys/kernel/hostname").read_text().strip()
    seen = probe(reads(tmp_path))
    assert base.parse_probe(seen["base"]).cpufreq is False  # the base section parses as before
    want = {
        "packages": ["bash"],
        "files": [{"path": str(tmp_path), "directory": True, "mode": mode,
                   "owner": owner, "group": group}],
        "sysctl": {"kernel.hostname": hostname},
        "sysctl_file": {
            "path": str(tmp_path / "90-base.conf"),
            # YAML's native values: ints and booleans, as the module's str option writes them
            "values": {"vm.swappiness": 10, "kernel.numa_balancing": False,
                       "net.ipv4.tcp_rmem": "4096 87380 6291456"},
        },
        "governor": "performance",
        "clock_synced": False,
    }  # fmt: skip
    assert FILTERS["base_drift"](seen, want) == []


def test_every_difference_is_named(tmp_path: Path) -> None:
    conf = tmp_path / "90-base.conf"
    conf.write_text("vm.swappiness=10\nvm.swappiness=60\nnet.core.somaxconn = 128\n")
    governor_script(tmp_path, 1)
    seen = probe(reads(tmp_path))
    want = {
        "packages": ["bash", "racksmith-no-such-package"],
        "hold": ["bash"],
        "sysctl": {"kernel.hostname": "not-this-host"},
        "sysctl_file": {
            "path": str(conf),
            "values": {"vm.swappiness": 10, "net.core.somaxconn": 4096, "kernel.x": "yes"},
        },
        "governor": "performance",
        "clock_synced": True,  # no chrony running here
    }
    reasons = base.drift(seen, want)
    assert "bash: not held" in reasons
    assert "racksmith-no-such-package: not installed" in reasons
    assert any(r.startswith("sysctl kernel.hostname: ") for r in reasons)
    # the module reads the last line of a key; its value is compared as the module writes it
    assert f"{conf}: vm.swappiness=60, wanted vm.swappiness=10" in reasons
    assert f"{conf}: net.core.somaxconn=128, wanted net.core.somaxconn=4096" in reasons
    assert f"{conf}: kernel.x not set, wanted kernel.x=1" in reasons
    assert "CPU governor: not every CPU runs performance" in reasons
    assert "clock: chrony is not synchronised (what chronyc waitsync waits for)" in reasons


def test_a_missing_sysctl_file_and_governor_script(tmp_path: Path) -> None:
    seen = probe(reads(tmp_path))
    want = {
        "sysctl_file": {"path": str(tmp_path / "90-base.conf"), "values": {"vm.swappiness": 10}},
        "governor": "performance",
    }
    assert base.drift(seen, want) == [
        f"{tmp_path / '90-base.conf'}: missing",
        "CPU governor: the governor script is missing",
    ]


@pytest.mark.parametrize(
    ("said", "reason"),
    [
        ("rc 2\n", "CPU governor: performance is not offered by the cpufreq driver"),
        ("", "CPU governor: the check said ''"),
        ("rc 0\nrc 1\n", "CPU governor: the check said 'rc 0\\nrc 1'"),
    ],
)
def test_a_governor_check_that_did_not_pass_is_drift(said: str, reason: str) -> None:
    assert base.drift({"governor": said}, {"governor": "performance"}) == [reason]


def test_what_the_host_does_not_manage_is_not_read() -> None:
    """No governor (no cpufreq), no wait for sync, no settings: those sections need not exist."""
    want = {"governor": "", "clock_synced": False, "sysctl_file": {"path": "/x", "values": {}}}
    assert base.drift({}, want) == []


@pytest.mark.parametrize("missing", ["sysctl_file", "governor", "clock", "files"])
def test_a_section_the_probe_did_not_print_is_drift(missing: str) -> None:
    sections = {
        "files": "dir 755 root root /etc\n",
        "sysctl_file": "@present\nvm.swappiness=10\n",
        "governor": "rc 0\n",
        "clock": "synced\n",
    }
    del sections[missing]
    want = {
        "files": [{"path": "/etc", "directory": True, "mode": "755", "owner": "root",
                   "group": "root"}],
        "sysctl_file": {"path": "/s.conf", "values": {"vm.swappiness": 10}},
        "governor": "performance",
        "clock_synced": True,
    }  # fmt: skip
    assert f"the probe did not read {missing}" in base.drift(sections, want)
    del want[{"sysctl_file": "sysctl_file", "governor": "governor", "clock": "clock_synced",
              "files": "files"}[missing]]  # fmt: skip
    assert base.drift(sections, want) == []


def test_a_sysctl_file_section_without_its_marker_is_drift() -> None:
    """Output that is not the snippet's (the marker line missing) never reads as settings."""
    want = {"sysctl_file": {"path": "/s.conf", "values": {"vm.swappiness": 10}}}
    assert base.drift({"sysctl_file": "vm.swappiness=10\n"}, want) == ["/s.conf: missing"]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (0, "0"),
        (10, "10"),
        (True, "1"),
        (False, "0"),
        ("yes", "1"),
        ("Off", "0"),
        (" 4096 87380 6291456 ", "4096 87380 6291456"),
        (1.5, "1.5"),
        (None, ""),
    ],
)
def test_sysctl_values_as_the_module_writes_them(value: object, written: str) -> None:
    assert base.sysctl_value(value) == written


def test_live_sysctl_values_compare_as_the_module_sets_them() -> None:
    """A boolean is set as 1: the live 1 is no drift."""
    sections = {"sysctl": "net.ipv4.tcp_mtu_probing 1\n"}
    assert base.drift(sections, {"sysctl": {"net.ipv4.tcp_mtu_probing": True}}) == []
    assert base.drift(sections, {"sysctl": {"net.ipv4.tcp_mtu_probing": 0}}) == [
        "sysctl net.ipv4.tcp_mtu_probing: 1, wanted 0"
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"governor": "perf ormance"},
        {"governor_script": "relative/governor"},
        {"sysctl_file": "/etc/sysctl.d/a\nb.conf"},
        {"sysctl": ["a b"]},
        {"packages": ["two words"]},
    ],
)
def test_bad_names_are_refused_before_any_shell_is_written(tmp_path: Path, bad: dict) -> None:
    with pytest.raises(ValueError, match="must be"):
        base.probe_sections(reads(tmp_path, **bad))
    with pytest.raises(AnsibleFilterError, match="base_probe_sections: "):
        FILTERS["base_probe_sections"](reads(tmp_path, **bad))


def test_the_filters_refuse_what_is_not_a_dict() -> None:
    with pytest.raises(AnsibleFilterError, match="base_drift: want must be a dict"):
        FILTERS["base_drift"]({}, ["x"])
    with pytest.raises(AnsibleFilterError, match="base_probe_sections: read must be a dict"):
        FILTERS["base_probe_sections"]("x")
    with pytest.raises(AnsibleFilterError, match="base_probe_sections: KeyError"):
        FILTERS["base_probe_sections"]({"cpufreq": "/x"})
