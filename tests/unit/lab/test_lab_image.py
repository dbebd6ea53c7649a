"""The image cache key and the safety check that guards deleting a build tree."""

from dataclasses import replace
from pathlib import Path

from racksmith.lab import image


def test_recipe_digest_is_stable_and_tracks_every_input():
    base = image.Recipe()
    assert base.digest() == image.Recipe().digest()
    assert len(base.digest()) == 16
    changed = {
        replace(base, packages=(*base.packages, "chrony")).digest(),
        replace(base, suite="trixie").digest(),
        replace(base, mirror="http://mirror.example/debian").digest(),
        replace(base, customize=base.customize + "\ntrue\n").digest(),
    }
    assert base.digest() not in changed and len(changed) == 4


def test_image_path_is_keyed_by_the_digest(tmp_path):
    recipe = image.Recipe()
    assert image.image_path(recipe, tmp_path) == tmp_path / f"rootfs-{recipe.digest()}.tar.zst"


def test_debootstrap_argv_includes_the_packages_and_mirror(monkeypatch):
    monkeypatch.setenv("RACKSMITH_DEBIAN_MIRROR", "http://mirror.example/debian/")
    argv = image.Recipe().debootstrap_argv(Path("/b"))
    assert argv[:2] == ["debootstrap", "--variant=minbase"]
    assert "openssh-server" in argv[2] and "python3-apt" in argv[2]
    assert argv[-3:] == ["bookworm", "/b", "http://mirror.example/debian"]


def test_image_stays_generic():
    """Per-host identity must never be baked in (a cached image would carry stale values)."""
    script = image.CUSTOMIZE
    assert ": > /etc/machine-id" in script
    assert "rm -f /var/lib/dbus/machine-id /etc/ssh/ssh_host_*" in script
    assert "Proxy" not in script


def test_mounts_under_finds_nested_mounts_deepest_first():
    mounts = "\n".join(
        [
            "proc /proc proc rw 0 0",
            "proc /var/cache/racksmith/build-x/proc proc rw 0 0",
            "sysfs /var/cache/racksmith/build-x/sys sysfs rw 0 0",
            "devpts /var/cache/racksmith/build-x/dev/pts devpts rw 0 0",
            "tmpfs /var/cache/racksmith/build-xy tmpfs rw 0 0",
            "tmpfs /var/cache/racksmith/build-x/with\\040space tmpfs rw 0 0",
        ]
    )
    found = image.mounts_under(Path("/var/cache/racksmith/build-x"), mounts)
    assert found[0] == "/var/cache/racksmith/build-x/with space"
    assert set(found) == {
        "/var/cache/racksmith/build-x/proc",
        "/var/cache/racksmith/build-x/sys",
        "/var/cache/racksmith/build-x/dev/pts",
        "/var/cache/racksmith/build-x/with space",
    }
