"""The VM image recipe and the checks its build makes (pure parts; the build itself runs in the
lab integration test)."""

from __future__ import annotations

import dataclasses

import pytest

from racksmith.lab import vmimage
from racksmith.lab.errors import LabError

BASE = vmimage.VmRecipe(base="0123456789abcdef", mirror="http://mirror.example/debian")

DKMS_STATUS = """\
nvidia-tesla-535/535.216.03, 6.1.0-50-cloud-amd64, x86_64: installed
zfs/2.1.11, 6.1.0-50-cloud-amd64, x86_64: installed
zfs/2.1.11, 6.18.44-fc-v669, x86_64: built
Error! Could not locate dkms.conf file.
"""


def test_digest_is_stable_and_follows_every_input():
    assert BASE.digest() == dataclasses.replace(BASE).digest()
    stages = (*BASE.stages[:2], ("--no-install-recommends", "nvidia-tesla-550-kernel-dkms"))
    changed = [
        dataclasses.replace(BASE, stages=stages),
        dataclasses.replace(BASE, base="fedcba9876543210"),  # a rebuilt test-host image
        dataclasses.replace(BASE, mirror="http://other.example/debian"),
        dataclasses.replace(BASE, components=("main",)),
        dataclasses.replace(BASE, customize=BASE.customize + "\ntrue\n"),
        dataclasses.replace(BASE, root_label="other"),
        dataclasses.replace(BASE, boot_flavour="amd64"),
        dataclasses.replace(BASE, kernels=3),
    ]
    digests = {r.digest() for r in changed}
    assert BASE.digest() not in digests and len(digests) == len(changed)


def test_default_recipe_follows_the_test_host_image():
    from racksmith.lab import image

    assert vmimage.VmRecipe().base == image.Recipe().digest()


def test_image_dir_is_named_by_digest(tmp_path):
    assert vmimage.image_dir(BASE, tmp_path) == tmp_path / f"vm-{BASE.digest()}"


def test_sources_and_apt_argv():
    assert BASE.sources_list() == (
        "deb http://mirror.example/debian bookworm main contrib non-free non-free-firmware\n"
    )
    argv = BASE.apt_argv(("--no-install-recommends", "dkms"))
    assert argv[:3] == ["apt-get", "install", "-y"] and argv[-2:] == [
        "--no-install-recommends",
        "dkms",
    ]


def test_customize_loads_the_virtio_modules_into_the_initramfs():
    for module in ("virtio_blk", "virtio_pci", "virtio_net", "ext4"):
        assert module in vmimage.CUSTOMIZE
    assert "update-initramfs -u -k all" in vmimage.CUSTOMIZE
    assert "systemd-network-generator" in vmimage.CUSTOMIZE
    assert f"LABEL={vmimage.ROOT_LABEL}" in vmimage.CUSTOMIZE


def test_dkms_status_is_parsed_and_other_lines_ignored():
    entries = vmimage.parse_dkms_status(DKMS_STATUS)
    assert [(e.module, e.version, e.kernel, e.state) for e in entries] == [
        ("nvidia-tesla-535", "535.216.03", "6.1.0-50-cloud-amd64", "installed"),
        ("zfs", "2.1.11", "6.1.0-50-cloud-amd64", "installed"),
        ("zfs", "2.1.11", "6.18.44-fc-v669", "built"),
    ]


def test_missing_dkms_is_per_kernel_and_needs_installed():
    entries = vmimage.parse_dkms_status(DKMS_STATUS)
    required = ("zfs", "nvidia-tesla-535")
    assert vmimage.missing_dkms(entries, required, "6.1.0-50-cloud-amd64") == []
    assert vmimage.missing_dkms(entries, required, "6.18.44-fc-v669") == ["zfs", "nvidia-tesla-535"]
    assert vmimage.missing_dkms([], required, "6.1.0-50-cloud-amd64") == list(required)


BOOT = ["config-6.1.0-50-cloud-amd64", "vmlinuz-6.1.0-50-cloud-amd64", "System.map-x"]


def test_pick_kernels_finds_the_boot_kernel_and_the_update():
    files = [*BOOT, "vmlinuz-6.1.0-50-amd64", "initrd.img-6.1.0-50-amd64"]
    assert vmimage.pick_kernels(files, "cloud-amd64", 2) == (
        "6.1.0-50-cloud-amd64",
        ["6.1.0-50-amd64", "6.1.0-50-cloud-amd64"],
    )


@pytest.mark.parametrize(
    "files",
    [
        ["initrd.img-x"],  # no kernel at all
        BOOT,  # the second kernel's stage installed nothing
        ["vmlinuz-6.1.0-50-amd64", "vmlinuz-6.1.0-49-amd64"],  # none of the boot flavour
        [*BOOT, "vmlinuz-6.1.0-49-cloud-amd64"],  # two of the boot flavour: which boots?
        [*BOOT, "vmlinuz-6.1.0-50-amd64", "vmlinuz-6.1.0-49-amd64"],  # one too many
    ],
)
def test_pick_kernels_refuses_another_set_of_kernels(files):
    with pytest.raises(LabError, match=r"expected 2 kernels .* flavour cloud-amd64"):
        vmimage.pick_kernels(files, "cloud-amd64", 2)


def test_the_recipe_installs_a_second_kernel_after_the_driver():
    """The kernel update comes after the driver's DKMS package, as on a host, so its postinst
    hook builds the driver for it; the VM boots the cloud kernel, not the update."""
    flat = [" ".join(stage) for stage in vmimage.DEFAULT_STAGES]
    driver = next(i for i, s in enumerate(flat) if "nvidia-tesla-535-kernel-dkms" in s)
    update = next(i for i, s in enumerate(flat) if "linux-image-amd64" in s)
    assert driver < update and "linux-headers-amd64" in flat[update]
    assert "kexec-tools" in flat[update]
    assert vmimage.VmRecipe().boot_flavour == "cloud-amd64" and vmimage.VmRecipe().kernels == 2
    # every reboot must not become a kexec of the newest kernel
    assert "LOAD_KEXEC=false" in vmimage.CUSTOMIZE
