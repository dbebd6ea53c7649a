"""InfiniBand: port state and rate, error-counter growth, and the GPUDirect RDMA module."""

from __future__ import annotations

import time

from ..outcome import Finding, fail, ok, warn
from ..parsers import rdma, sysfs
from . import CheckContext, check, sources

#: Counters whose growth means a bad link (cable, transceiver, port). Absent ones are skipped.
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_constraint_errors",
    "port_xmit_constraint_errors",
)


def _expected_ports(ctx: CheckContext) -> list[sysfs.IbPort]:
    ports, _ = sources.ib_ports(ctx)
    layer = ctx.profile.get("hcas.link_layer", "InfiniBand")
    return [p for p in ports if p.link_layer == layer]


@check("ib_ports", "InfiniBand port state, rate and firmware", requires="hcas.count")
def ib_ports(ctx: CheckContext) -> list[Finding]:
    expected = ctx.profile.get("hcas.count")
    rate = ctx.profile.get("hcas.rate_gbps")
    ports = _expected_ports(ctx)
    _, firmware = sources.ib_ports(ctx)
    findings = []
    active = [p for p in ports if p.state == "ACTIVE" and p.phys_state == "LinkUp"]
    ctx.metrics["ib_ports_active"] = float(len(active))
    if len(ports) != expected:
        findings.append(
            fail(
                f"{len(ports)} InfiniBand ports found, expected {expected}",
                "Check that every HCA is seated and its driver (mlx5_ib) loaded.",
            )
        )
    for port in ports:
        if port.state != "ACTIVE" or port.phys_state != "LinkUp":
            findings.append(
                fail(
                    f"state {port.state or '?'}, physical state {port.phys_state or '?'}",
                    "Check the cable and the switch port; an INIT port means no subnet manager.",
                    port.label,
                )
            )
        elif rate and (port.rate_gbps or 0) < rate:
            findings.append(
                fail(
                    f"rate {port.rate_gbps} Gb/s, expected {rate}",
                    "Replace the cable or transceiver; check the switch port speed.",
                    port.label,
                )
            )
    versions = {v for d, v in firmware.items() if any(p.device == d for p in ports)}
    golden = ctx.profile.get("versions.hca_firmware")
    if len(versions) > 1:
        findings.append(
            warn(f"HCA firmware differs: {sorted(versions)}", "Flash every HCA to one version.")
        )
    elif golden and versions and versions != {golden}:
        findings.append(
            warn(f"HCA firmware {versions.pop()}, golden {golden}", "Flash the golden version.")
        )
    return findings or [ok(f"{len(active)} ports ACTIVE/LinkUp at {rate} Gb/s")]


@check("ib_counters", "InfiniBand error-counter growth", requires="hcas.count")
def ib_counters(ctx: CheckContext) -> list[Finding]:
    """Two reads ``hcas.counter_sample_s`` apart (the other checks run meanwhile): a counter
    that moves on an idle host is a link that is failing now."""
    before = {p.label: p.counters for p in _expected_ports(ctx)}
    if not before:
        return [fail("no InfiniBand ports to read counters from", "See the ib_ports check.")]
    time.sleep(float(ctx.profile.get("hcas.counter_sample_s", 1.0)))
    after_ports = _read_ports_again(ctx)
    findings = []
    for port in after_ports:
        old = before.get(port.label, {})
        grown = {
            name: port.counters[name] - old.get(name, 0)
            for name in ERROR_COUNTERS
            if name in port.counters and port.counters[name] > old.get(name, 0)
        }
        if grown:
            detail = ", ".join(f"{k} +{v}" for k, v in grown.items())
            findings.append(
                fail(
                    f"error counters growing: {detail}",
                    "Replace the cable/transceiver; if it persists, move to another switch port.",
                    port.label,
                )
            )
        elif port.counters.get("link_downed", 0) > 0:
            findings.append(
                warn(
                    f"link went down {port.counters['link_downed']} times since the last reset",
                    "Watch for flaps; one flapping link slows a whole job.",
                    port.label,
                )
            )
    return findings or [ok(f"no error counter moved on {len(after_ports)} ports")]


def _read_ports_again(ctx: CheckContext) -> list[sysfs.IbPort]:
    layer = ctx.profile.get("hcas.link_layer", "InfiniBand")
    out = []
    for port in _expected_ports(ctx):
        port_dir = ctx.host.sys(f"class/infiniband/{port.device}/ports/{port.port}")
        counters = ctx.host.read_attrs(port_dir / "counters", tuple(port.counters))
        attrs = ctx.host.read_attrs(port_dir, ("state", "phys_state", "rate", "link_layer"))
        fresh = sysfs.ib_port(port.device, port.port, attrs, counters)
        if fresh.link_layer == layer:
            out.append(fresh)
    return out


#: The GPUDirect RDMA paths NVIDIA supports, as ``hcas.gdr`` names them in a profile.
GDR_PATHS = ("peermem", "dmabuf")


@check("gdr", "GPUDirect RDMA path", requires="hcas.gdr")
def gdr(ctx: CheckContext) -> list[Finding]:
    """Which GPUDirect path is active, and whether NVIDIA supports it: ``nvidia-peermem`` over
    MLNX_OFED or DOCA-OFED, or DMA-BUF with the open kernel modules (Linux 5.12+). peermem over
    the distribution's inbox rdma-core is refused: NVIDIA documents MLNX_OFED/DOCA-OFED as its
    prerequisite, and without it NCCL can fall back to copies through host memory unseen.
    ``hcas.gdr``: ``true`` (either path), ``"peermem"`` or ``"dmabuf"`` (only that one)."""
    wanted = ctx.profile.get("hcas.gdr")  # the profile loader refuses other values
    allowed = GDR_PATHS if wanted is True else (wanted,)
    modules = sources.proc_modules(ctx)
    peermem = next((m for m in ("nvidia_peermem", "nv_peer_mem") if m in modules), None)
    flavour = sources.driver_flavour(ctx)
    if peermem:
        stack = sources.ofed(ctx)
        if stack is None:
            return [
                fail(
                    f"{peermem} is loaded over the inbox rdma-core (no MLNX_OFED or DOCA-OFED: "
                    "`ofed_info` is not installed): NVIDIA does not support GPUDirect RDMA "
                    "through peermem on that stack",
                    "Install DOCA-OFED (role gdr with its DOCA source), or use DMA-BUF with the "
                    "open kernel modules and unload nvidia_peermem.",
                )
            ]
        if "peermem" not in allowed:
            return [
                fail(
                    f"GPUDirect path is {peermem} over {stack}; the profile wants DMA-BUF",
                    "Unload nvidia_peermem and use the open kernel modules (DMA-BUF).",
                )
            ]
        return [ok(f"GPUDirect RDMA path: {peermem} over {stack} ({flavour} kernel modules)")]
    release = sources.kernel_release(ctx)
    if flavour == "open" and rdma.kernel_at_least(release, 5, 12):
        if "dmabuf" not in allowed:
            return [
                fail(
                    "nvidia_peermem is not loaded (the GPUDirect path would be DMA-BUF); the "
                    "profile wants peermem",
                    "Load it (`modprobe nvidia_peermem`) and make it persistent (role gdr).",
                )
            ]
        return [
            ok(
                f"GPUDirect RDMA path: DMA-BUF (open kernel modules, Linux {release}); "
                "nvidia_peermem not loaded"
            )
        ]
    why = (
        "the proprietary kernel modules cannot export DMA-BUF"
        if flavour != "open"
        else f"Linux {release} is older than 5.12 (no DMA-BUF for RDMA)"
    )
    return [
        fail(
            f"no GPUDirect RDMA path: nvidia_peermem is not loaded and {why}",
            "Install DOCA-OFED and load nvidia_peermem (role gdr), or move to the open kernel "
            "modules on Linux 5.12+ for DMA-BUF.",
        )
    ]
