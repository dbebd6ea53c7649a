"""Benchmark: the VM lane's costs (what a molecule VM scenario pays before converge starts).

Measures, on a private lab of its own (bridge ``rslab8`` / 192.168.244, a lab directory in
/tmp: never another lab's):

- the VM image: ready time (0 s when cached; a build is ~5 min on an idle machine);
- ``racksmith lab vm up`` with five 1 GiB data disks: fresh OS disk + boot under TCG until SSH
  answers as ``ubuntu`` (the ``boot_seconds`` it reports, and the command's wall time);
- qemu's RSS once booted and settled (from /proc/PID/status);
- ``racksmith lab vm down``: SSH poweroff, PID stop, tap and disks removed.

``--quick`` times only the image check and one fresh OS disk (no boot), in seconds. Needs
root and qemu-system-x86; run one at a time (a TCG guest pins a vCPU).

    python tests/bench/bench_lab_vm.py            # image + boot + RSS + down
    python tests/bench/bench_lab_vm.py --quick    # image check + one OS disk
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from racksmith.lab import aptcache, paths, spec, vm, vmimage
from racksmith.testing.rack import write_rack

SETTLE = 10.0  # seconds after SSH answers before reading RSS (first-boot units finish)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for pid {pid}")


def make_rack(directory: Path) -> spec.RackSpec:
    """The bench's own lab (rslab8, 192.168.244, BMCs from 18843, MAAS on 15244)."""
    return write_rack(
        directory, bridge="rslab8", prefix="192.168.244", bmc_base_port=18843,
        maas_listen="127.0.0.1:15244",
    )  # fmt: skip


def racksmith(env: dict, *argv: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "racksmith", "lab", *argv],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"racksmith lab {' '.join(argv)} failed:\n{done.stderr}")
    return done


def quick(rack: spec.RackSpec, lab: paths.LabPaths, built: vmimage.VmImage) -> None:
    """One fresh OS disk, as `vm up` makes it (overlay + personalise + mkfs.ext4 -d)."""
    from racksmith.lab import creds

    creds.ensure_ssh_key(lab)
    files = vm._Files(lab, "bench")
    vm._teardown(files, None)
    files.dir.mkdir(parents=True)
    disks = vm.disk_layout("bench", files.dir, [], 0)
    fake = vm.VmSpec("bench", "192.168.244.200", rack.bridge, 24, 2048, 1, 0, None,
                     tuple(disks), str(built.dir))  # fmt: skip
    t0 = time.monotonic()
    vm._make_os_disk(
        lab, fake, built, files, Path(disks[0].file),
        aptcache.proxy_url(rack.controller_ip, rack.apt_proxy_port), built.info()["root_label"],
    )  # fmt: skip
    took = time.monotonic() - t0
    used = os.stat(disks[0].file).st_blocks * 512 >> 20
    print(f"fresh OS disk (overlay + keys + mkfs.ext4 -d): {took:.1f} s, {used} MiB used")
    vm._teardown(files, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="image check + one OS disk only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_lab_vm needs root (chroot, tap, qemu)")
    t0 = time.monotonic()
    built = vmimage.ensure_vm_image()
    print(f"VM image ready: {time.monotonic() - t0:.1f} s ({built.dir.name},"
          f" kernel {built.info()['kernel']})")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rsbench-vm-") as tmp:
        rack = make_rack(Path(tmp))
        lab = paths.LabPaths(Path(tmp) / "lab")
        env = {**os.environ, "RACKSMITH_LAB_DIR": str(lab.root), "RACKSMITH_RACK": str(rack.path)}
        try:
            if args.quick:
                quick(rack, lab, built)
                return 0
            disks = [f"--disk=rs-d{i}:1G" for i in range(1, 6)]
            t1 = time.monotonic()
            up = json.loads(
                racksmith(env, "vm", "up", "bench", "192.168.244.200", *disks, "--json").stdout
            )
            wall = time.monotonic() - t1
            print(f"vm up, 5 data disks: boot to SSH {up['boot_seconds']} s, command {wall:.1f} s"
                  f" (OS disk at position {up['os_position']}, seed {up['seed']})")  # fmt: skip
            time.sleep(SETTLE)
            print(f"qemu RSS after boot + {SETTLE:.0f} s (-m 2048): {rss_mib(up['pid']):.0f} MiB")
            t2 = time.monotonic()
            racksmith(env, "vm", "down", "bench")
            print(f"vm down (poweroff, stop, tap and disks removed): {time.monotonic() - t2:.1f} s")
        finally:
            racksmith(env, "down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
