"""Role base's one host probe (racksmith.roles.base.parse_probe, filter racksmith.core.base_probe):
what the role decides from it, and a probe cut short or garbled failing closed."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.base import ProbeError, parse_probe
from racksmith.testing.plugins import plugin_filters

# in the shape apt-cache policy prints for an installed package (written from apt's output format)
POLICY = """chrony:
  Installed: 4.3-2+deb12u1
  Candidate: 4.3-2+deb12u1
  Version table:
 *** 4.3-2+deb12u1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
        100 /var/lib/dpkg/status
"""

PROBE = (
    "@cpufreq no\n"
    "@governor_unit no\n"
    "@writable net.core.somaxconn\n"
    "@writable net.ipv4.tcp_mtu_probing\n"
    "@package chrony hi \n"
    "@package linux-image-amd64 un \n"
    "@package openssh-server ii \n"
    "@package old-tool rc \n"
    "@package unpacked-tool iU \n"
    "@policy\n" + POLICY
)


def test_reads_every_part_of_the_probe():
    probe = parse_probe(PROBE)
    assert (probe.cpufreq, probe.governor_unit) == (False, False)
    assert probe.sysctl_writable == ["net.core.somaxconn", "net.ipv4.tcp_mtu_probing"]
    # installed = files on the host (held, installed, unpacked); not "un" nor config-files only
    assert probe.installed == ["chrony", "openssh-server", "unpacked-tool"]
    assert probe.apt_policy == POLICY


def test_the_filter_returns_the_same_as_a_dict():
    probe = plugin_filters("plugins/filter/base_checks.py")["base_probe"](PROBE)
    assert probe == parse_probe(PROBE).as_dict()
    assert probe["installed"] == ["chrony", "openssh-server", "unpacked-tool"]


def test_a_host_with_cpufreq_and_the_unit_written():
    probe = parse_probe("@cpufreq yes\n@governor_unit yes\n@policy\n")
    assert (probe.cpufreq, probe.governor_unit, probe.installed) == (True, True, [])


def test_apt_knowing_nothing_ends_the_output_at_the_policy_marker():
    """A new host's lists lack chrony: apt-cache prints nothing, and Ansible's stdout has no
    trailing newline."""
    probe = parse_probe("@cpufreq no\n@governor_unit no\n@package chrony un\n@policy")
    assert (probe.installed, probe.apt_policy) == ([], "")


@pytest.mark.parametrize(
    ("stdout", "says"),
    [
        ("", "lacks its @policy line"),
        ("@cpufreq no\n@governor_unit no\n", "lacks its @policy line"),
        ("@cpufreq no\n@policy\n", "lacks @governor_unit"),
        ("@cpufreq maybe\n@governor_unit no\n@policy\n", "@cpufreq says 'maybe'"),
        (
            "@cpufreq no\n@governor_unit no\nsh: 1: dpkg-query: not found\n@policy\n",
            "not a probe line",
        ),
        ("@cpufreq no\n@governor_unit no\n@package chrony i\n@policy\n", "is not two letters"),
    ],
)
def test_output_that_is_not_the_probes_fails_closed(stdout, says):
    with pytest.raises(ProbeError, match=says):
        parse_probe(stdout)
    with pytest.raises(AnsibleFilterError, match="base_probe: "):
        plugin_filters("plugins/filter/base_checks.py")["base_probe"](stdout)
