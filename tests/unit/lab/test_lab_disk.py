"""A host's disk: overlay options and what counts as a disk left by an earlier boot."""

import pytest

from racksmith.lab import disk
from racksmith.lab.errors import LabError


def test_overlay_options_name_the_three_layers(tmp_path):
    d = disk.Disk(tmp_path / "gpu01")
    assert disk.overlay_options(tmp_path / "img", d.upper, d.work) == (
        f"lowerdir={tmp_path}/img,upperdir={d.upper},workdir={d.work}"
    )


@pytest.mark.parametrize("bad", ["/a,b", "/a:b", "/a\\b"])
def test_overlay_options_refuse_separator_characters(tmp_path, bad):
    with pytest.raises(LabError, match="cannot be used in overlay mount options"):
        disk.overlay_options(tmp_path / bad.lstrip("/"), tmp_path / "u", tmp_path / "w")


def test_a_new_machine_has_no_disk(tmp_path):
    assert not disk.Disk(tmp_path / "gpu01").present()


def test_an_overlay_disk_is_its_upper_layer_and_recorded_image(tmp_path):
    d = disk.Disk(tmp_path / "gpu01")
    d.upper.mkdir(parents=True)
    assert not d.present()  # layers without the image they belong to are not a disk
    d.lower_file.write_text("/var/cache/racksmith/rootfs-x\n")
    assert d.present()


def test_a_copied_disk_is_a_root_tree_without_layers(tmp_path):
    d = disk.Disk(tmp_path / "gpu01")
    (d.root / "etc").mkdir(parents=True)
    assert d.present()


def test_mount_state_is_read_from_proc_mounts(tmp_path):
    assert disk.is_mounted(tmp_path) is False
