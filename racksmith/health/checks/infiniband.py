"""InfiniBand: port state and rate, error-counter growth, and the GPUDirect RDMA module."""

from __future__ import annotations

import time

from ..outcome import Finding, fail, ok, warn
from ..parsers import sysfs
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


@check("gdr", "GPUDirect RDMA kernel module", requires="hcas.gdr")
def gdr(ctx: CheckContext) -> list[Finding]:
    modules = sources.proc_modules(ctx)
    for name in ("nvidia_peermem", "nv_peer_mem"):
        if name in modules:
            return [ok(f"{name} loaded")]
    return [
        fail(
            "nvidia_peermem is not loaded: NCCL cannot use GPUDirect RDMA",
            "Load it (`modprobe nvidia_peermem`) and make it persistent (configure phase, gdr).",
        )
    ]
