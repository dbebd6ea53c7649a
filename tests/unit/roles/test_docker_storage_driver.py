"""Docker's storage driver on the host's disks (racksmith.containers.storage_driver, filter
racksmith.core.docker_storage_driver, used by role container_runtime)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.containers import storage_driver
from racksmith.testing.plugins import plugin_filters


@pytest.mark.parametrize("wanted", ["overlay2", "", "fuse-overlayfs"])
def test_overlay_drivers_on_zfs_become_zfs_with_the_reason(wanted):
    choice = storage_driver(wanted, "zfs\n")
    assert choice.driver == "zfs"
    assert "data root is on ZFS" in choice.reason
    assert (wanted or "the default driver") in choice.reason


@pytest.mark.parametrize("wanted", ["vfs", "zfs", "btrfs"])
def test_drivers_that_run_on_zfs_are_kept(wanted):
    choice = storage_driver(wanted, "zfs")
    assert (choice.driver, choice.reason) == (wanted, "")


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "overlay"])
def test_other_filesystems_keep_the_sites_choice(fstype):
    choice = storage_driver("overlay2", fstype)
    assert (choice.driver, choice.reason) == ("overlay2", "")


def test_an_unknown_filesystem_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="filesystem type of Docker's data root is empty"):
        storage_driver("overlay2", "  ")


def test_filter_returns_a_dict_and_names_itself_on_error():
    flt = plugin_filters("plugins/filter/containers.py")["docker_storage_driver"]
    assert flt("overlay2", "zfs")["driver"] == "zfs"
    assert flt("overlay2", "ext4") == {"driver": "overlay2", "reason": ""}
    with pytest.raises(AnsibleFilterError, match=r"docker_storage_driver: .*empty"):
        flt("overlay2", "")
