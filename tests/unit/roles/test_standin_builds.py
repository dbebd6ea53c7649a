"""LAB ONLY: each host's stand-in build (racksmith.roles.lab_gpu_standin, filter
racksmith.core.standin_builds, role lab_gpu_standin): one per distinct capture + overlays,
named after them, the same names as before issue 25 (so archives on hosts stay valid)."""

from __future__ import annotations

import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.lab_gpu_standin import build, builds
from racksmith.testing.plugins import plugin_filters

CAPTURE = "/repo/tests/fixtures/h200-x2"
XID79 = "/repo/tests/fixtures/h200-x2-failures/xid79"


def test_a_build_is_named_after_its_sources():
    healthy = build(CAPTURE)
    digest = hashlib.sha1(CAPTURE.encode()).hexdigest()[:8]  # noqa: S324 (a name, as the role computes it)
    assert healthy == {"capture": CAPTURE, "overlays": [], "name": f"h200-x2-{digest}"}
    faulty = build(CAPTURE, [XID79])
    digest = hashlib.sha1(f"{CAPTURE}|{XID79}".encode()).hexdigest()[:8]  # noqa: S324 (a name, as the role computes it)
    assert faulty["name"] == f"h200-x2+xid79-{digest}"
    assert faulty["overlays"] == [XID79]


def test_hosts_with_the_same_sources_share_a_build():
    by_host = builds(["gpu01", "gpu02", "gpu03"], [CAPTURE] * 3, [[], [XID79], []])
    assert by_host["gpu01"] == by_host["gpu03"] != by_host["gpu02"]
    filtered = plugin_filters("plugins/filter/standin_checks.py")["standin_builds"](
        ["gpu01", "gpu02", "gpu03"], [CAPTURE] * 3, [[], [XID79], []]
    )
    assert filtered == by_host


@pytest.mark.parametrize(
    ("hosts", "captures", "overlays", "says"),
    [
        (["gpu01"], [], [[]], "1 hosts but 0 captures"),
        (["gpu01"], [""], [[]], "capture folder is empty"),
    ],
)
def test_bad_input_is_refused_naming_it(hosts, captures, overlays, says):
    with pytest.raises(ValueError, match=says):
        builds(hosts, captures, overlays)
    with pytest.raises(AnsibleFilterError, match=f"standin_builds: .*{says}"):
        plugin_filters("plugins/filter/standin_checks.py")["standin_builds"](
            hosts, captures, overlays
        )
