"""Per-host cgroups: which hierarchies, and leaving no directories behind."""

from racksmith.lab import cgroup

HYBRID = """\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
UNIFIED = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"


def test_systemd_tracks_processes_in_the_named_and_unified_hierarchies():
    assert [str(p) for p in cgroup.tracking_hierarchies(HYBRID)] == [
        "/sys/fs/cgroup/systemd",
        "/sys/fs/cgroup/unified",
    ]
    assert [str(p) for p in cgroup.tracking_hierarchies(UNIFIED)] == ["/sys/fs/cgroup"]
    assert cgroup.tracking_hierarchies("proc /proc proc rw 0 0\n") == []


def test_remove_deletes_nested_directories_deepest_first(tmp_path):
    group = tmp_path / "racksmith" / "rslab0-gpu01"
    (group / "payload" / "system.slice" / "ssh.service").mkdir(parents=True)
    (group / "supervisor").mkdir()
    cgroup.remove([group, tmp_path / "absent"])
    assert not group.exists() and (tmp_path / "racksmith").exists()
