"""Host basics that break training runs: full disks, degraded ZFS pools, a container runtime
that cannot reach the GPUs, CPU frequency scaling, and an unsynchronised clock (TLS and apt
fail on skewed clocks; logs from many hosts stop lining up)."""

from __future__ import annotations

from ..outcome import Finding, Source, fail, ok, unknown
from ..parsers import ParseError, misc, sysfs
from . import CheckContext, check, sources

_LOCAL_FS = frozenset({"ext4", "xfs", "btrfs", "zfs", "ext3", "ext2", "f2fs"})


@check("disk_space", "Disk space", requires="disks")
def disk_space(ctx: CheckContext) -> list[Finding]:
    limit = float(ctx.profile.get("disks.max_used_pct", 95))
    mounts = list(ctx.profile.get("disks.mounts", ["/"]))
    if ctx.profile.get("disks.all_local"):
        path = ctx.host.proc("mounts")
        try:
            local = [
                m.mountpoint for m in sysfs.mounts(ctx.host.read(path)) if m.fstype in _LOCAL_FS
            ]
        except OSError as exc:
            return [unknown(f"cannot read {path}: {exc}")]
        mounts += [m for m in local if m not in mounts]
    findings = []
    for mount in mounts:
        try:
            st = ctx.host.statvfs(mount)
        except OSError as exc:
            findings.append(fail(f"{mount}: {exc.strerror or exc}", "Mount it (see fstab).", mount))
            continue
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        usable = used + st.f_bavail * st.f_frsize
        pct = 100.0 * used / usable if usable else 100.0
        ctx.metrics[f'disk_used_percent{{mount="{mount}"}}'] = round(pct, 2)
        if pct >= limit:
            findings.append(
                fail(
                    f"{pct:.1f}% used (limit {limit:g}%)",
                    "Free space or grow the filesystem.",
                    mount,
                )
            )
    return findings or [ok(f"{', '.join(mounts)} under {limit:g}% used")]


@check("zpool", "ZFS pool health", requires="zpools")
def zpool(ctx: CheckContext) -> list[Finding]:
    names = list(ctx.profile.get("zpools"))
    result = sources.run(ctx, ("zpool", "status", "-P", *names), 15.0)
    if result.missing or result.timed_out or (result.rc != 0 and not result.stdout):
        return [fail(result.describe_failure(), "Create or import the pool (configure phase).")]
    try:
        pools = {p.name: p for p in misc.zpool_status(result.stdout)}
    except ParseError as exc:
        return [unknown(f"cannot parse `zpool status` output: {exc}")]
    findings = []
    for name in names:
        pool = pools.get(name)
        if pool is None:
            findings.append(fail("pool not found", "Create or import it (configure phase).", name))
            continue
        bad = [v for v in pool.vdevs if v.state not in ("ONLINE", "AVAIL") or v.errors]
        if pool.state != "ONLINE" or bad:
            detail = "; ".join(
                f"{v.name} {v.state} r/w/c {v.read}/{v.write}/{v.cksum}" for v in bad
            )
            findings.append(
                fail(
                    f"pool {pool.state}" + (f": {detail}" if detail else ""),
                    "Replace the failing device (`zpool replace`), then `zpool clear`.",
                    name,
                )
            )
    return findings or [ok(f"{', '.join(names)} ONLINE with no errors")]


@check("docker_gpu", "Docker runs a GPU container", requires="docker.image")
def docker_gpu(ctx: CheckContext) -> list[Finding]:
    image = ctx.profile.get("docker.image")
    timeout = float(ctx.profile.get("docker.timeout_s", 60))
    argv = ("docker", "run", "--rm", "--gpus", "all", image, "nvidia-smi", "-L")
    result = sources.run(ctx, argv, timeout)
    if result.timed_out:
        return [unknown(result.describe_failure(), "Pre-pull the image; check dockerd.")]
    if not result.ok:
        return [
            fail(
                result.describe_failure(),
                "Check dockerd and the NVIDIA container toolkit (`nvidia-ctk runtime configure`).",
            )
        ]
    seen, expected = misc.gpu_list(result.stdout), ctx.profile.get("gpu.count")
    if expected is not None and seen != expected:
        return [fail(f"the container sees {seen} GPUs, expected {expected}", "See gpu_count.")]
    return [ok(f"{image} sees {seen} GPUs")]


@check("cpu_governor", "CPU frequency governor", requires="cpu_governor")
def cpu_governor(ctx: CheckContext) -> list[Finding]:
    expected = ctx.profile.get("cpu_governor")
    root = ctx.host.sys("devices/system/cpu")
    try:
        governors = {
            cpu.name: ctx.host.read(cpu / "cpufreq/scaling_governor").strip()
            for cpu in sorted(root.glob("cpu[0-9]*"))
            if (cpu / "cpufreq").is_dir()
        }
    except OSError as exc:
        return [unknown(f"cannot read {root}: {exc}")]
    ctx.sources.append(Source(str(root), str(root)))
    if not governors:
        return [
            unknown(
                f"no cpufreq under {root}: cannot see how CPU frequency is managed",
                "Enable OS-controlled P-states in the BIOS, or skip this check in the profile "
                "for host types whose firmware owns frequency scaling (VMs).",
            )
        ]
    wrong = sorted(cpu for cpu, gov in governors.items() if gov != expected)
    if wrong:
        found = sorted({governors[c] for c in wrong})
        return [
            fail(
                f"{len(wrong)} of {len(governors)} CPUs use governor {'/'.join(found)}, "
                f"expected {expected}",
                f"Set the governor to {expected} (configure phase, role base).",
            )
        ]
    return [ok(f"{len(governors)} CPUs on {expected}")]


@check("clock_sync", "Clock synchronisation", requires="clock_sync")
def clock_sync(ctx: CheckContext) -> list[Finding]:
    limit_ms = float(ctx.profile.get("clock_sync.max_error_ms", 100))
    state = sources.clock_state(ctx)
    return clock_findings(state, limit_ms)


def clock_findings(state: misc.ClockState, limit_ms: float) -> list[Finding]:
    remedy = "Start chrony (or systemd-timesyncd) against the site's NTP servers and wait for sync."
    if not state.synchronized:
        return [fail("the kernel clock is not synchronised (no NTP/PTP discipline)", remedy)]
    if state.maxerror_us > limit_ms * 1000:
        return [
            fail(f"clock error bound {state.maxerror_us / 1000:.0f} ms > {limit_ms:g} ms", remedy)
        ]
    return [ok(f"synchronised, error bound {state.maxerror_us / 1000:.1f} ms")]
