"""The GPU-host roles' package choice per source and branch (racksmith.gpupkgs, filter
racksmith.core.gpu_install_plan; issue 20). Each defect the issue lists about names and pins has
a test here that fails on the names and pins the roles used before (quoted in each test)."""

from __future__ import annotations

import itertools

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.gpupkgs import (
    BRANCHES,
    SOURCES,
    PlanError,
    apt_preferences,
    check_gdr,
    check_version,
    default_modules,
    flavour_of_kernel,
    install_plan,
    plan,
)
from racksmith.testing.plugins import plugin_filters


def test_ubuntu_uses_the_flavour_metapackage_not_the_running_kernels_modules():
    """Before: linux-modules-nvidia-535-server-<uname -r>, for the running kernel only, so the
    next kernel update booted without nvidia.ko."""
    driver = install_plan(source="ubuntu", branch="580", modules="proprietary", nvswitch=False)
    assert driver["nvidia_driver"] == [
        "nvidia-headless-no-dkms-580-server",
        "nvidia-utils-580-server",
        "linux-modules-nvidia-580-server-generic-hwe-22.04",
    ]


def test_ubuntu_535_is_refused_because_the_archive_serves_it_as_580():
    """The recorded jammy index: every 535 package is transitional to 580 (535.309.01)."""
    with pytest.raises(PlanError, match="only as transitional packages to 580") as err:
        plan(source="ubuntu", branch="535")
    assert "nvidia_driver_source: cuda" in str(err.value)
    assert plan(source="cuda", branch="535").driver[0] == "nvidia-headless-535"


def test_apt_preferences_keep_driver_and_fabric_manager_on_one_source():
    """cuda x 535 without a pin: apt took Canonical's transitional fabric manager 535.309.01
    (-> 580) beside the CUDA repository's 535.216.03 driver (the resolution test showed it)."""
    assert apt_preferences(source="cuda", branch="535") == (
        "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n"
    )
    ubuntu = apt_preferences(source="ubuntu", branch="580")
    assert ubuntu.startswith("Package: nvidia-* libnvidia-*\n")
    assert ubuntu.endswith("Pin-Priority: -1\n")


def test_ubuntu_580_is_open_by_default_and_follows_the_flavour():
    chosen = plan(source="ubuntu", branch="580", kernel_flavour="nvidia", nvswitch=False)
    assert chosen.modules == "open"
    assert chosen.driver == (
        "nvidia-headless-no-dkms-580-server-open",
        "nvidia-utils-580-server",
        "linux-modules-nvidia-580-server-open-nvidia",
    )


def test_proprietary_modules_on_request():
    chosen = plan(source="ubuntu", branch="580", modules="proprietary", nvswitch=False)
    assert chosen.driver[0] == "nvidia-headless-no-dkms-580-server"
    assert chosen.driver[2] == "linux-modules-nvidia-580-server-generic-hwe-22.04"


@pytest.mark.parametrize("version", ["580.95.05", "580.126.09"])
def test_an_exact_version_on_ubuntu_is_refused_saying_why(version):
    """Before: nvidia_driver pinned =535.216.03-* on Canonical's archive."""
    with pytest.raises(PlanError, match="keeps only the newest version") as err:
        plan(source="ubuntu", branch="580", version=version)
    assert version in str(err.value)
    assert "nvidia_driver_source: cuda" in str(err.value)


def test_no_spec_on_ubuntu_carries_a_version():
    """Before: docker.io=24.0.7-0ubuntu2~22.04.1 and the driver and fabric manager pinned."""
    for branch in ("580",):
        specs = install_plan(source="ubuntu", branch=branch, nvlink5=True)
        assert [s for r in ("nvidia_driver", "dcgm") for s in specs[r] if "=" in s] == []
        assert specs["container_runtime"][0] == "docker.io"


def test_cuda_keeps_releases_so_an_exact_version_pins_driver_and_fabric_manager_together():
    chosen = plan(source="cuda", branch="535", version="535.216.03")
    assert chosen.driver == (
        "nvidia-headless-535=535.216.03-*",
        "nvidia-utils-535=535.216.03-*",
        "linux-headers-generic-hwe-22.04",
    )
    assert chosen.fabricmanager == (
        "nvidia-fabricmanager-535=535.216.03-*",
        "libnvidia-nscq-535=535.216.03-*",
    )
    assert chosen.pin == "535.216.03-*"
    assert "nvidia-fabricmanager-535" in chosen.holds
    assert "linux-headers-generic-hwe-22.04" in chosen.holds


def test_cuda_580_names_fabric_manager_and_nscq_without_the_branch():
    chosen = plan(source="cuda", branch="580", version="580.95.05")
    assert chosen.fabricmanager == (
        "nvidia-fabricmanager=580.95.05-*",
        "libnvidia-nscq=580.95.05-*",
        "libnvsdm=580.95.05-*",
    )
    assert chosen.driver[0] == "nvidia-headless-580-open=580.95.05-*"


def test_ubuntu_fabric_manager_has_no_server_label_and_nscq_beside_it():
    """Before: libnvidia-nscq-<branch> was never installed (DCGM cannot see NVSwitches)."""
    fm = plan(source="ubuntu", branch="580").fabricmanager
    assert fm == ("nvidia-fabricmanager-580", "libnvidia-nscq-580")


def test_fabric_manager_and_nscq_only_with_nvswitches_nvlsm_only_with_nvlink5():
    assert plan(source="cuda", branch="535", nvswitch=False).fabricmanager == ()
    assert "nvlsm" not in plan(source="cuda", branch="580").fabricmanager
    assert plan(source="cuda", branch="580", nvlink5=True).fabricmanager[-1] == "nvlsm"
    with pytest.raises(PlanError, match="NVSwitches"):
        plan(source="cuda", branch="580", nvlink5=True, nvswitch=False)


@pytest.mark.parametrize("version", ["580.95.05", "535", "535.216", "5350.1.2", "x"])
def test_an_exact_version_must_belong_to_the_branch(version):
    if version == "535.216":
        check_version("cuda", "535", version)  # a two-part upstream version is one
        return
    with pytest.raises(PlanError, match="not an upstream version of branch 535"):
        check_version("cuda", "535", version)


def test_unknown_sources_and_branches_are_refused():
    with pytest.raises(PlanError, match="source 'debian'"):
        plan(source="debian", branch="535")
    with pytest.raises(PlanError, match="branch '550' is not one racksmith covers"):
        plan(source="ubuntu", branch="550")


def test_inbox_rdma_core_with_peermem_is_refused_with_the_supported_ways():
    """Before: gdr loaded nvidia-peermem over inbox rdma-core by default."""
    with pytest.raises(PlanError, match="peer-memory API of MLNX_OFED/DOCA-OFED") as err:
        plan(source="ubuntu", branch="580", gdr="inbox")
    assert "doca" in str(err.value) and "dmabuf" in str(err.value)


def test_dmabuf_needs_the_open_modules_and_installs_the_distributions_rdma_core():
    with pytest.raises(PlanError, match="needs NVIDIA's open kernel modules"):
        check_gdr("dmabuf", "proprietary")
    assert plan(source="ubuntu", branch="580", gdr="dmabuf").gdr == ("rdma-core", "ibverbs-utils")
    assert plan(source="ubuntu", branch="580", gdr="doca").gdr == ()


def test_dcgm_4_and_the_exporter_by_their_real_names_3_still_selectable():
    """Before: datacenter-gpu-manager (3) fixed by a private variable and an exporter package
    named dcgm-exporter that NVIDIA does not ship."""
    chosen = plan(source="ubuntu", branch="580")
    assert chosen.dcgm == ("datacenter-gpu-manager-4-cuda12",)
    assert chosen.dcgm_exporter == ("datacenter-gpu-manager-exporter",)
    three = plan(source="cuda", branch="535", dcgm_major=3)
    assert (three.dcgm, three.dcgm_exporter) == (("datacenter-gpu-manager",), ())
    with pytest.raises(PlanError, match="DCGM major 5"):
        plan(source="ubuntu", branch="580", dcgm_major=5)


def test_fabric_manager_from_cuda_needs_the_cuda_repository_in_the_driver_role():
    """Before: the CUDA repository was added by dcgm, which runs after nvidia_driver."""
    assert plan(source="cuda", branch="535").cuda_repo_roles == ("nvidia_driver", "dcgm")
    assert plan(source="ubuntu", branch="580").cuda_repo_roles == ("dcgm",)
    assert plan(source="ubuntu", branch="580", nvlink5=True).cuda_repo_roles[0] == "nvidia_driver"


def test_the_toolkit_pins_only_when_asked():
    assert plan(source="cuda", branch="580", toolkit_version="1.17.8-1").container_runtime == (
        "docker.io",
        "nvidia-container-toolkit=1.17.8-1",
        "nvidia-container-toolkit-base=1.17.8-1",
    )
    with pytest.raises(PlanError, match="toolkit version"):
        plan(source="cuda", branch="580", toolkit_version="=1")


def test_default_modules_by_branch():
    assert (default_modules("535"), default_modules("580")) == ("proprietary", "open")


@pytest.mark.parametrize(
    ("flavour", "kernel", "ok"),
    [
        ("generic-hwe-22.04", "6.8.0-52-generic", True),
        ("generic", "5.15.0-125-generic", True),
        ("nvidia", "5.15.0-1063-nvidia", True),
        ("nvidia", "5.15.0-125-generic", False),
        ("generic-hwe-22.04", "6.1.0-28-amd64", False),
    ],
)
def test_kernel_belongs_to_flavour(flavour, kernel, ok):
    assert flavour_of_kernel(flavour, kernel) is ok


def test_a_bad_flavour_is_refused():
    with pytest.raises(PlanError, match="kernel flavour"):
        plan(source="ubuntu", branch="580", kernel_flavour="Generic HWE")


def test_every_source_and_branch_has_a_plan_for_every_role():
    for source, branch in itertools.product(SOURCES, BRANCHES):
        if (source, branch) == ("ubuntu", "535"):
            continue  # refused: test_ubuntu_535_is_refused_because_the_archive_serves_it_as_580
        specs = install_plan(source=source, branch=branch)
        assert set(specs) == {"nvidia_driver", "gdr", "container_runtime", "dcgm"}
        assert all(specs[role] for role in ("nvidia_driver", "container_runtime", "dcgm"))


def test_filter_returns_the_plan_and_names_itself_on_refusal():
    flt = plugin_filters("plugins/filter/gpupkgs.py")["gpu_install_plan"]
    chosen = flt("ubuntu", 580, nvswitch=False)
    assert chosen["driver"][2] == "linux-modules-nvidia-580-server-open-generic-hwe-22.04"
    with pytest.raises(AnsibleFilterError, match="gpu_install_plan: an exact driver version"):
        flt("ubuntu", "580", version="580.95.05")
    with pytest.raises(AnsibleFilterError, match=r"gpu_install_plan: .*unexpected keyword"):
        flt("ubuntu", "535", colour="red")


POLICY = """\
nvidia-utils-535-server:
  Installed: (none)
  Candidate: 535.274.02-0ubuntu0.22.04.1
  Version table:
     535.274.02-0ubuntu0.22.04.1 500
        500 http://archive.ubuntu.com/ubuntu jammy-updates/restricted amd64 Packages
libnvidia-nscq-535:
  Installed: (none)
  Candidate: (none)
  Version table:
"""


def test_apt_policy_names_what_apt_cannot_install_yet():
    """apt-cache policy prints nothing for a name it never heard of, and "(none)" for one
    without a candidate: both are unknown, so check mode reports instead of failing."""
    flt = plugin_filters("plugins/filter/gpupkgs.py")["apt_unknown"]
    specs = ["nvidia-utils-535-server", "libnvidia-nscq-535", "nvidia-fabricmanager-535=535.1-*"]
    assert flt(specs, POLICY) == ["libnvidia-nscq-535", "nvidia-fabricmanager-535=535.1-*"]
    assert flt(specs[:1], POLICY) == []


def test_the_running_kernel_must_be_of_the_flavour():
    assert plan(source="ubuntu", branch="580", kernel_release="6.8.0-52-generic").driver
    with pytest.raises(PlanError, match="not of flavour generic-hwe-22"):
        plan(source="cuda", branch="535", kernel_release="5.15.0-1063-nvidia")


def test_gdr_filter_takes_the_branchs_default_modules():
    flt = plugin_filters("plugins/filter/gpupkgs.py")["gpu_gdr_packages"]
    assert flt("dmabuf", "", "580") == ["rdma-core", "ibverbs-utils"]
    assert flt("doca", "", "535") == []
    with pytest.raises(AnsibleFilterError, match="needs NVIDIA's open kernel modules"):
        flt("dmabuf", "", "535")
    with pytest.raises(AnsibleFilterError, match="inbox rdma-core"):
        flt("inbox", "open", "580")
