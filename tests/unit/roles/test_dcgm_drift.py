"""Role dcgm's verify-first decision (racksmith.roles.dcgm.drift, filter racksmith.core.dcgm_drift):
nothing drifted only when every package, hold, file, service and the endpoint is as the role
sets them up; each difference is named; a section the probe did not read is drift (the whole
role runs). The files section comes from a real run of the role's shell loop (sha1sum, stat)."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles.dcgm import drift
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/dcgm_checks.py")

# dpkg-query -W -f '${Package} ${Version} ${Status}\n' as on a lab host after the role ran
PACKAGES = (
    "datacenter-gpu-manager-4-cuda12 1:4.5.2-1 hold ok installed\n"
    "datacenter-gpu-manager-exporter 4.8.1-1 hold ok installed\n"
)
SERVICES = "nvidia-dcgm active enabled\nnvidia-dcgm-exporter active enabled\n"


def files_section(paths) -> str:
    """The role's loop (roles/dcgm/vars/main.yml, section files), run for real."""
    loop = (
        'for f in "$@"; do if [ -e "$f" ]; then echo "$(sha1sum < "$f" | cut -d" " -f1)'
        ' $(stat -c "%a %U %G" "$f") $f"; else echo "- - - - $f"; fi; done'
    )
    done = subprocess.run(
        ["/bin/sh", "-c", loop, "sh", *map(str, paths)],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def host(tmp_path):
    counters = tmp_path / "racksmith-counters.csv"
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    counters.chmod(0o644)
    key = tmp_path / "racksmith-cuda.asc"
    key.write_text("key\n")
    key.chmod(0o644)
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout
    group = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout
    owner = {"mode": "644", "owner": user.strip(), "group": group.strip()}
    want = {
        "packages": [
            "datacenter-gpu-manager-4-cuda12=1:4.5.2-1",
            "datacenter-gpu-manager-exporter",
        ],
        "hold": True,
        "files": [
            {"path": str(key), "sha1": "", **owner},
            {
                "path": str(counters),
                "sha1": hashlib.sha1(counters.read_bytes(), usedforsecurity=False).hexdigest(),
                **owner,
            },
        ],
        "services": ["nvidia-dcgm", "nvidia-dcgm-exporter"],
        "endpoint": True,
    }
    sections = {
        "packages": PACKAGES,
        "files": files_section([key, counters]),
        "services": SERVICES,
        "endpoint": "yes\n",
    }
    return sections, want, counters


def test_nothing_drifted_on_a_host_as_the_role_left_it(host):
    sections, want, _ = host
    assert drift(sections, want) == []
    assert FILTERS["dcgm_drift"](sections, want) == []


def test_each_difference_is_named(host):
    sections, want, counters = host
    counters.write_text("DCGM_FI_DEV_GPU_TEMP, gauge, edited by hand\n")
    counters.chmod(0o600)
    missing = str(counters) + ".absent"
    want["files"].append({**want["files"][1], "path": missing})
    sections = {
        "packages": PACKAGES.replace("1:4.5.2-1 hold", "1:4.4.1-1 install").replace(
            "datacenter-gpu-manager-exporter 4.8.1-1 hold ok installed",
            "datacenter-gpu-manager-exporter 4.8.1-1 deinstall ok config-files",
        ),
        "files": files_section([want["files"][0]["path"], counters, missing]),
        "services": "nvidia-dcgm active enabled\nnvidia-dcgm-exporter failed enabled\n",
        "endpoint": "no\n",
    }
    reasons = drift(sections, want)
    assert reasons == [
        "datacenter-gpu-manager-4-cuda12: version 1:4.4.1-1, wanted 1:4.5.2-1",
        "datacenter-gpu-manager-4-cuda12: not held",
        "datacenter-gpu-manager-exporter: not installed",
        f"{counters}: content differs",
        f"{counters}: mode 600 {want['files'][1]['owner']}:{want['files'][1]['group']}, wanted "
        f"644 {want['files'][1]['owner']}:{want['files'][1]['group']}",
        f"{missing}: missing",
        "nvidia-dcgm-exporter: failed enabled, wanted active enabled",
        "the metrics endpoint does not answer",
    ]


def test_holds_and_the_endpoint_count_only_when_wanted(host):
    sections, want, _ = host
    sections = {**sections, "packages": PACKAGES.replace("hold ok", "install ok"), "endpoint": "no"}
    assert len(drift(sections, want)) == 3
    assert drift(sections, {**want, "hold": False, "endpoint": False}) == []


@pytest.mark.parametrize("section", ["packages", "files", "services", "endpoint"])
def test_a_section_not_read_is_drift(host, section):
    sections, want, _ = host
    del sections[section]
    assert drift(sections, want) == [f"the probe did not read {section}"]


def test_a_unit_systemctl_did_not_answer_for_is_drift(host):
    sections, want, _ = host
    sections["services"] = "nvidia-dcgm active enabled\nnvidia-dcgm-exporter  \n"
    assert drift(sections, want) == ["nvidia-dcgm-exporter: unknown, wanted active enabled"]


def test_the_filter_refuses_what_is_not_a_dict():
    with pytest.raises(AnsibleFilterError, match="dcgm_drift: expected"):
        FILTERS["dcgm_drift"]("text", {})
