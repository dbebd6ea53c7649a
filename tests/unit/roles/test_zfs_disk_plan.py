"""The ZFS disk decision (racksmith.disks.plan, filter racksmith.core.zfs_disk_plan) on the
lsblk and /dev/disk/by-id data of a Dell XE9680: OS on a BOSS-N1 RAID1 virtual disk, eight
3.84 TB data NVMe, and the iDRAC's virtual CD and floppy on USB."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith import disks
from racksmith.disks import DiskPlanError, parse_by_id, parse_zpool_import, plan
from racksmith.testing.plugins import plugin_filters

FIXTURES = Path(__file__).parent / "fixtures"
LSBLK = json.loads((FIXTURES / "xe9680-lsblk.json").read_text())
BY_ID_TEXT = (FIXTURES / "xe9680-by-id.txt").read_text()
BY_ID = parse_by_id(BY_ID_TEXT)
NVME = [f"/dev/disk/by-id/nvme-Dell_Ent_NVMe_CM6_RI_3.84TB_Y0R0A0{i}1TBGJ" for i in range(8)]
ZPOOL_IMPORT = """\
   pool: data
     id: 15301263395816411735
  state: ONLINE
 action: The pool can be imported using its name or numeric identifier.
 config:

        data                                             ONLINE
          raidz2-0                                       ONLINE
            nvme-Dell_Ent_NVMe_CM6_RI_3.84TB_Y0R0A001TBGJ  ONLINE
"""


def lsblk_with(**changes: dict) -> dict:
    """The fixture with fields of some disks changed (kname -> fields)."""
    data = copy.deepcopy(LSBLK)
    for dev in data["blockdevices"]:
        dev.update(changes.get(dev["kname"], {}))
    return data


def test_blank_data_disks_make_a_raidz2_of_every_nvme_by_id():
    result = plan(
        LSBLK,
        BY_ID,
        pool="data",
        pool_options={"ashift": "12"},
        fs_options={"compression": "lz4", "atime": "off"},
        mountpoint="/data",
    )
    assert result.action == "create"
    assert [d.by_id for d in result.disks] == NVME
    assert result.shell == [
        "zpool create -o ashift=12 -O atime=off -O compression=lz4 -m /data data raidz2 "
        + " ".join(NVME)
    ]
    # the OS disk, the virtual media: skipped with their reasons, never candidates
    assert {s.kname: s.reason for s in result.skipped} == {
        "sda": "the OS disk (mounted: /, /boot, /boot/efi)",
        "sdb": "removable or read-only",
    }


def test_kernel_name_order_does_not_change_the_pool():
    shuffled = copy.deepcopy(LSBLK)
    random.Random(7).shuffle(shuffled["blockdevices"])
    # lsblk's order (kernel probe order) changes between boots; the pool must not
    a = plan(shuffled, BY_ID, pool="data")
    assert a.commands == plan(LSBLK, BY_ID, pool="data").commands


def test_os_disk_found_by_its_mounts_wherever_it_is():
    os_on_nvme = lsblk_with(
        sda={"mountpoints": [None], "pttype": None, "children": []},
        nvme3n1={"pttype": "gpt", "children": [
            {"kname": "nvme3n1p1", "type": "part", "mountpoints": ["/boot/efi"], "fstype": "vfat"},
            {"kname": "nvme3n1p2", "type": "part", "mountpoints": ["/"], "fstype": "ext4"},
        ]},
    )  # fmt: skip
    result = plan(os_on_nvme, BY_ID, pool="data")
    assert result.action == "create"
    assert "/dev/disk/by-id/ata-DELLBOSS_VD_b6b2c3a1e7f40010" in [d.by_id for d in result.disks]
    assert NVME[3] not in [d.by_id for d in result.disks]
    assert ("nvme3n1", "the OS disk (mounted: /, /boot/efi)") in [
        (s.kname, s.reason) for s in result.skipped
    ]


def test_disk_with_a_partition_table_is_refused_naming_it():
    leftover = lsblk_with(
        nvme5n1={
            "pttype": "gpt",
            "children": [
                {"kname": "nvme5n1p1", "type": "part", "fstype": "ext4", "mountpoints": [None]}
            ],
        }
    )
    result = plan(leftover, BY_ID, pool="data")
    assert result.action == "refuse"
    assert result.commands == ()
    assert [(r.disk, r.reason) for r in result.refused] == [
        (NVME[5], "has a gpt partition table (1 partitions); name it in zfs_pool_wipe to reuse it")
    ]
    assert NVME[5] in result.message


def test_wipe_list_allows_that_disk_and_wipes_it_first():
    leftover = lsblk_with(nvme5n1={"pttype": "gpt"})
    name = NVME[5].rsplit("/", 1)[1]
    result = plan(leftover, BY_ID, pool="data", wipe=[name])
    assert result.action == "create"
    assert result.shell[0] == f"wipefs --all --force {NVME[5]}"
    assert result.shell[1].startswith("zpool create data raidz2 ")
    assert [d.by_id for d in result.wipe] == [NVME[5]]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"fstype": "xfs"}, "carries a xfs filesystem signature"),
        ({"fstype": "zfs_member", "label": "scratch"}, "carries the label of ZFS pool 'scratch'"),
        ({"fstype": "linux_raid_member"}, "carries a linux_raid_member filesystem signature"),
    ],
)
def test_filesystems_and_foreign_pool_labels_are_refused(fields, reason):
    result = plan(lsblk_with(nvme2n1=fields), BY_ID, pool="data")
    assert result.action == "refuse"
    assert result.refused[0].disk == NVME[2]
    assert result.refused[0].reason.startswith(reason)


def test_a_wiped_zfs_member_gets_its_labels_cleared_too():
    result = plan(lsblk_with(nvme2n1={"fstype": "zfs_member", "label": "old"}), BY_ID,
                  pool="data", wipe=[NVME[2]])  # fmt: skip
    assert result.shell[:2] == [f"zpool labelclear -f {NVME[2]}", f"wipefs --all --force {NVME[2]}"]


def test_existing_pool_is_imported_not_created():
    labelled = lsblk_with(**{f"nvme{i}n1": {"fstype": "zfs_member", "label": "data"}
                             for i in range(8)})  # fmt: skip
    result = plan(labelled, BY_ID, pool="data", importable=parse_zpool_import(ZPOOL_IMPORT))
    assert result.action == "import"
    assert result.shell == ["zpool import -d /dev/disk/by-id data"]


def test_imported_pool_is_left_alone():
    result = plan(LSBLK, BY_ID, pool="data", imported=["rpool", "data"])
    assert (result.action, result.commands) == ("exists", ())


def test_the_os_disk_is_never_wiped_even_when_listed():
    result = plan(LSBLK, BY_ID, pool="data", wipe=["ata-DELLBOSS_VD_b6b2c3a1e7f40010"])
    assert result.action == "refuse"
    assert result.refused[0].reason == "is the OS disk: never wiped"


def test_a_wipe_entry_that_is_not_on_the_host_is_refused():
    result = plan(LSBLK, BY_ID, pool="data", wipe=["nvme-Other_Disk_XYZ"])
    assert result.action == "refuse"
    assert result.refused[0].reason == "is in the wipe list but not on this host"


def test_a_disk_without_a_by_id_name_is_refused():
    links = {k: v for k, v in BY_ID.items() if k != "nvme7n1"}
    result = plan(LSBLK, links, pool="data")
    assert result.action == "refuse"
    assert result.refused[0].disk == "nvme7n1"
    assert "kernel names" in result.refused[0].reason


def test_expected_disk_count_catches_a_missing_nvme():
    missing = copy.deepcopy(LSBLK)
    missing["blockdevices"] = [d for d in missing["blockdevices"] if d["kname"] != "nvme4n1"]
    result = plan(missing, BY_ID, pool="data", expected_disks=8)
    assert result.action == "refuse"
    assert "found 7 data disks, the site expects 8" in result.message
    assert plan(LSBLK, BY_ID, pool="data", expected_disks=8).action == "create"


def test_too_few_disks_for_the_level():
    two = copy.deepcopy(LSBLK)
    two["blockdevices"] = [d for d in two["blockdevices"] if d["kname"] in ("sda", "nvme0n1")]
    assert "raidz2 needs at least 4 disks, found 1" in plan(two, BY_ID, pool="d").message
    assert plan(two, BY_ID, pool="d", level="stripe").shell == [f"zpool create d {NVME[0]}"]


def test_excluded_disks_are_skipped():
    result = plan(LSBLK, BY_ID, pool="data", exclude=[NVME[0]])
    assert NVME[0] not in [d.by_id for d in result.disks]
    assert ("nvme0n1", "excluded by the site (zfs_pool_exclude)") in [
        (s.kname, s.reason) for s in result.skipped
    ]


def test_by_id_prefers_model_and_serial_over_opaque_names():
    assert BY_ID["nvme0n1"][0].startswith("nvme-Dell")
    assert disks.preferred_by_id(["nvme-eui.36344730", "nvme-Dell_X_S1_1", "nvme-Dell_X_S1"]) == (
        "nvme-Dell_X_S1"
    )
    assert disks.preferred_by_id(["wwn-0x5000c5", "ata-DELLBOSS_VD_b6"]) == "ata-DELLBOSS_VD_b6"


def test_partition_links_are_not_disks():
    assert "sda1" not in BY_ID
    assert BY_ID["sda"] == ["ata-DELLBOSS_VD_b6b2c3a1e7f40010", "wwn-0x5000c500a1b2c3d4"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pool": "1data"}, "not a valid ZFS pool name"),
        ({"pool": "data", "level": "raid5"}, "level 'raid5' is not one of"),
    ],
)
def test_bad_arguments_name_the_input(kwargs, message):
    with pytest.raises(DiskPlanError, match=message):
        plan(LSBLK, BY_ID, **kwargs)


def test_bad_host_outputs_fail_closed():
    with pytest.raises(DiskPlanError, match="no 'blockdevices' list"):
        plan({"devices": []}, BY_ID, pool="data")
    with pytest.raises(DiskPlanError, match="line 2: expected 'name target'"):
        parse_by_id("a ../../sda\nbroken\n")


def test_filter_takes_the_raw_outputs_the_role_registers():
    zfs_disk_plan = plugin_filters("plugins/filter/disks.py")["zfs_disk_plan"]
    result = zfs_disk_plan(json.dumps(LSBLK), BY_ID_TEXT, "data", level="raidz1",
                           importable="no pools available to import\n", imported="")  # fmt: skip
    assert result["action"] == "create"
    assert result["disks"] == NVME
    assert result["commands"][-1][:4] == ["zpool", "create", "data", "raidz1"]
    assert result["not_used"] == [
        "sdb: removable or read-only",
        "sda: the OS disk (mounted: /, /boot, /boot/efi)",
    ]
    with pytest.raises(AnsibleFilterError, match=r"zfs_disk_plan: .*not a valid ZFS pool name"):
        zfs_disk_plan(json.dumps(LSBLK), BY_ID_TEXT, "-x")
    with pytest.raises(AnsibleFilterError, match="zfs_disk_plan: "):
        zfs_disk_plan("lsblk: command not found", BY_ID_TEXT, "data")


def test_the_role_calls_the_filter_by_its_collection_name(tmp_path):
    """racksmith.core.zfs_disk_plan resolves through the collection, as the role calls it."""
    repo = Path(__file__).resolve().parents[3]
    playbook = tmp_path / "plan.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.assert:\n"
        "        that: (lookup('file', fx ~ '/xe9680-lsblk.json')\n"
        "               | racksmith.core.zfs_disk_plan(pool='data', level='raidz2',\n"
        "                   by_id=lookup('file', fx ~ '/xe9680-by-id.txt'))).shell[0] == want\n"
    )
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")  # not the project's (report callback)
    want = "zpool create data raidz2 " + " ".join(NVME)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         str(playbook), "-e", f"fx={FIXTURES}", "-e", f"want='{want}'"],
        capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(repo / ".collections"),
             "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_os_disk_under_lvm_and_md_is_still_the_os_disk():
    # Ubuntu's default install: / on an LVM volume inside the third partition; swap on md.
    lvm = lsblk_with(
        sda={"pttype": None, "children": []},
        nvme0n1={"pttype": "gpt", "children": [
            {"kname": "nvme0n1p3", "type": "part", "fstype": "LVM2_member", "mountpoints": [None],
             "children": [{"kname": "dm-0", "type": "lvm", "fstype": "ext4",
                           "mountpoints": ["/"]}]},
        ]},
        nvme1n1={"pttype": "gpt", "children": [
            {"kname": "nvme1n1p1", "type": "part", "fstype": "linux_raid_member",
             "mountpoints": [None],
             "children": [{"kname": "md0", "type": "raid1", "fstype": "swap",
                           "mountpoints": [None]}]},
        ]},
    )  # fmt: skip
    result = plan(lvm, BY_ID, pool="data", level="raidz1")
    skipped = {s.kname: s.reason for s in result.skipped}
    assert skipped["nvme0n1"] == "the OS disk (mounted: /)"
    assert skipped["nvme1n1"] == "in use (mounted: [SWAP])"
    assert NVME[0] not in [d.by_id for d in result.disks]
    assert NVME[1] not in [d.by_id for d in result.disks]
    assert result.action == "create"


# --- the role's one probe (racksmith.disks.probe_argv / plan_from_probe) -----------------------


def _probe_text(imported="", imported_rc=0, importable="", importable_rc=1) -> str:
    """What probe_argv prints on the XE9680 (its recorded lsblk and by-id listing)."""
    mark = "### racksmith-zfs-probe"
    return (
        f"{mark} lsblk\n{json.dumps(LSBLK, indent=2)}\n{mark} by-id\n{BY_ID_TEXT}"
        f"{mark} imported\n{imported}{mark} rc {imported_rc}\n"
        f"{mark} importable\n{importable}{mark} rc {importable_rc}\n"
    )


def _run_probe(
    tmp_path,
    zpool_list: str,
    zpool_list_rc: int,
    zpool_import: str,
    zpool_import_rc: int,
    zpool: bool = True,
) -> subprocess.CompletedProcess:
    """probe_argv's script, run by /bin/sh with udevadm, lsblk, find and zpool replaced by
    commands that print the XE9680's recorded outputs (find: its by-id listing) and exit as the
    real ones do; zpool=False: the ZFS tools are not installed (check mode on a new host)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "lsblk.json").write_text(json.dumps(LSBLK))
    (tmp_path / "by-id.txt").write_text(BY_ID_TEXT)
    (tmp_path / "list.txt").write_text(zpool_list)
    (tmp_path / "import.txt").write_text(zpool_import)
    scripts = {
        "udevadm": '[ "$1 $2" = "settle --timeout=30" ] || exit 2\n',
        "lsblk": f'[ "$*" = "--json --bytes --output {disks.LSBLK_COLUMNS}" ] || exit 2\n'
        f"cat {tmp_path}/lsblk.json\n",
        "find": f'[ "$1" = /dev/disk/by-id ] || exit 2\ncat {tmp_path}/by-id.txt\n',
    }
    if zpool:
        scripts["zpool"] = (
            f'case "$1" in list) cat {tmp_path}/list.txt; exit {zpool_list_rc};;\n'
            f" import) cat {tmp_path}/import.txt >&2; exit {zpool_import_rc};; esac; exit 2\n"
        )
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    argv = disks.probe_argv()
    path = f"{bin_dir}:/usr/bin:/bin" if zpool else str(bin_dir) + ":/nonexistent"
    # without zpool on PATH, sh and cat must still be found: link them into bin
    if not zpool:
        for tool in ("cat",):
            (bin_dir / tool).symlink_to(subprocess.check_output(["which", tool], text=True).strip())
    return subprocess.run(
        ["/bin/sh", "-c", argv[2]], env={"PATH": path}, capture_output=True, text=True,
        check=False, timeout=60,
    )  # fmt: skip


def test_the_probe_prints_what_the_plan_reads_and_the_plan_creates(tmp_path):
    done = _run_probe(tmp_path, "", 0, "no pools available to import\n", 1)
    assert done.returncode == 0, done.stderr
    assert disks.probe_argv()[:2] == ["/bin/sh", "-c"]
    probed = disks.plan_from_probe(done.stdout, pool="data", level="raidz2")
    assert probed.notes == ()
    assert probed.plan.action == "create"
    assert [d.by_id for d in probed.plan.disks] == NVME
    # the same decision as from the four outputs taken one by one
    assert probed.plan == plan(LSBLK, BY_ID, pool="data", level="raidz2")


def test_the_probe_finds_a_pool_to_import_and_one_imported(tmp_path):
    done = _run_probe(tmp_path, "", 0, ZPOOL_IMPORT, 0)
    probed = disks.plan_from_probe(done.stdout, pool="data")
    assert probed.plan.action == "import"
    assert probed.plan.commands == (("zpool", "import", "-d", "/dev/disk/by-id", "data"),)
    assert disks.plan_from_probe(_probe_text(imported="data\n"), pool="data").plan.action == (
        "exists"
    )


def test_zpool_missing_is_said_in_check_mode_and_fails_a_real_run(tmp_path):
    done = _run_probe(tmp_path, "", 0, "", 0, zpool=False)
    assert done.returncode == 0, done.stderr
    probed = disks.plan_from_probe(done.stdout, pool="data", check_mode=True)
    assert probed.notes == ("zpool is not installed yet: pools were not probed",)
    assert probed.plan.action == "create"
    with pytest.raises(DiskPlanError, match=r"zpool list failed \(exit 127\): .*zpool"):
        disks.plan_from_probe(done.stdout, pool="data")


def test_zpool_import_failing_otherwise_than_nothing_to_import_fails():
    text = _probe_text(importable="cannot discover pools: permission denied\n", importable_rc=2)
    with pytest.raises(DiskPlanError, match=r"zpool import failed \(exit 2\): cannot discover"):
        disks.plan_from_probe(text, pool="data")
    assert disks.plan_from_probe(text, pool="data", check_mode=True).plan.action == "create"


def test_a_probe_that_failed_or_is_not_the_probe_fails_closed(tmp_path):
    # udev, lsblk or the by-id directory failing fails the command itself (set -e)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "udevadm").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "lsblk").write_text("#!/bin/sh\necho 'lsblk: failed' >&2; exit 32\n")
    for name in ("udevadm", "lsblk"):
        (bin_dir / name).chmod(0o755)
    done = subprocess.run(
        ["/bin/sh", "-c", disks.probe_argv()[2]], env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 32
    with pytest.raises(DiskPlanError, match="lacks the by-id, imported, importable part"):
        disks.plan_from_probe(done.stdout, pool="data")
    with pytest.raises(DiskPlanError, match="lsblk did not print JSON"):
        disks.plan_from_probe(_probe_text().replace('"blockdevices"', "blockdevices"), pool="d")
    with pytest.raises(DiskPlanError, match="the importable listing has no exit status"):
        disks.plan_from_probe(_probe_text().rsplit("### racksmith-zfs-probe rc", 1)[0], pool="d")
    with pytest.raises(DiskPlanError, match="unexpected section 'lsblk'"):
        disks.plan_from_probe(_probe_text() + "### racksmith-zfs-probe lsblk\n", pool="d")
    with pytest.raises(DiskPlanError, match="must be a positive number"):
        disks.probe_argv(0)


def test_the_probe_filters_take_the_registered_stdout():
    filters = plugin_filters("plugins/filter/zfs_pool.py")
    assert filters["zfs_probe_argv"](30) == disks.probe_argv(30)
    result = filters["zfs_probe_plan"](
        _probe_text(importable="no pools available to import\n"), "data", level="raidz1",
        wipe=[], pool_options={"ashift": 12}, check_mode=False,
    )  # fmt: skip
    assert result["action"] == "create"
    assert result["notes"] == []
    assert result["commands"][-1][:6] == ["zpool", "create", "-o", "ashift=12", "data", "raidz1"]
    with pytest.raises(AnsibleFilterError, match="zfs_probe_plan: probe output lacks"):
        filters["zfs_probe_plan"]("lsblk: command not found", "data")
    with pytest.raises(AnsibleFilterError, match="expected the probe's stdout"):
        filters["zfs_probe_plan"]({"stdout": ""}, "data")
