"""Links: NVLink state and error counters, and the PCIe links of GPUs, HCAs and NVMe drives
(a link that trained at x4 where x16 is expected quarters its bandwidth and nothing else
reports it)."""

from __future__ import annotations

from ..outcome import Finding, fail, ok, unknown, warn
from ..parsers.sysfs import PciLink
from . import CheckContext, check, sources


@check("nvlink_state", "NVLink link state and speed", requires="gpu.nvlink")
def nvlink_state(ctx: CheckContext) -> list[Finding]:
    per_gpu = ctx.profile.get("gpu.nvlink.links_per_gpu")
    min_speed = ctx.profile.get("gpu.nvlink.min_speed_gbs", 0.0)
    expected_gpus = ctx.profile.get("gpu.count")
    status = sources.nvlink_status(ctx)
    findings = []
    if expected_gpus is not None and len(status) != expected_gpus:
        findings.append(
            fail(
                f"`nvidia-smi nvlink -s` lists {len(status)} GPUs, expected {expected_gpus}",
                "See the gpu_count check.",
            )
        )
    active_total = 0
    for gpu, links in sorted(status.items()):
        label = f"GPU {gpu}"
        inactive = [link.link for link in links if not link.active]
        slow = [link for link in links if link.active and (link.speed_gbs or 0) < min_speed]
        active_total += len(links) - len(inactive)
        if per_gpu is not None and len(links) != per_gpu:
            findings.append(
                fail(
                    f"{len(links)} NVLinks reported, expected {per_gpu}",
                    "Reset the GPU; if links stay missing, check the baseboard (RMA).",
                    label,
                )
            )
        if inactive:
            findings.append(
                fail(
                    f"NVLink {', '.join(map(str, inactive))} inactive",
                    "Reset the GPUs (or reboot); if the link stays down, the GPU or NVSwitch "
                    "baseboard needs service.",
                    label,
                )
            )
        if slow:
            speeds = ", ".join(f"link {link.link} {link.speed_gbs} GB/s" for link in slow)
            findings.append(
                fail(f"NVLinks below {min_speed} GB/s: {speeds}", "Reset the GPUs.", label)
            )
    ctx.metrics["nvlink_active_links"] = float(active_total)
    return findings or [ok(f"{active_total} NVLinks active on {len(status)} GPUs ({per_gpu} each)")]


@check("nvlink_errors", "NVLink error counters", requires="gpu.nvlink")
def nvlink_errors(ctx: CheckContext) -> list[Finding]:
    fail_at = ctx.profile.get("gpu.nvlink.errors_fail")
    findings = []
    total = 0
    for gpu, links in sorted(sources.nvlink_errors(ctx).items()):
        bad = {
            link: {k: v for k, v in counters.items() if v}
            for link, counters in links.items()
            if any(counters.values())
        }
        gpu_total = sum(sum(c.values()) for c in bad.values())
        total += gpu_total
        if not bad:
            continue
        detail = "; ".join(
            f"link {link}: " + ", ".join(f"{k} {v}" for k, v in c.items())
            for link, c in bad.items()
        )
        level = fail if fail_at is not None and gpu_total >= fail_at else warn
        findings.append(
            level(
                f"NVLink errors: {detail}",
                "Note the counts; the load checks fail the host if they grow under load.",
                f"GPU {gpu}",
            )
        )
    ctx.metrics["nvlink_errors_total"] = float(total)
    return findings or [ok("no NVLink replay, recovery or CRC errors")]


@check("pcie", "PCIe link speed and width (GPUs, HCAs, NVMe)", requires="gpu.pcie")
def pcie(ctx: CheckContext) -> list[Finding]:
    links = sources.pci_links(ctx)
    findings: list[Finding] = []
    for kind, key, count_key in (
        ("gpu", "gpu.pcie", "gpu.count"),
        ("hca", "hcas.pcie", "hcas.count"),
        ("nvme", "nvme.pcie", "nvme.count"),
    ):
        expect = ctx.profile.get(key)
        of_kind = [link for link in links if link.kind == kind]
        count = ctx.profile.get(count_key)
        if count is not None and len(of_kind) < count:
            findings.append(
                fail(
                    f"{len(of_kind)} {kind.upper()} PCI functions on the bus, expected {count}",
                    f"A {kind.upper()} is missing from the PCI bus: reseat or replace it "
                    "(compare with the BMC inventory).",
                )
            )
        if not expect:
            continue
        idle_ok = kind == "gpu" and bool(expect.get("allow_idle_downshift"))
        for link in of_kind:
            findings += link_findings(link, int(expect["width"]), int(expect["gen"]), idle_ok)
    gpus = [link for link in links if link.kind == "gpu"]
    ctx.metrics["pcie_gpu_links"] = float(len(gpus))
    if findings:
        return findings
    summary = ", ".join(
        f"{sum(1 for link in links if link.kind == k)} {k.upper()}" for k in ("gpu", "hca", "nvme")
    )
    return [ok(f"every link at its expected width and speed ({summary})")]


def link_findings(link: PciLink, width: int, gen: int, idle_downshift_ok: bool) -> list[Finding]:
    subject = f"{link.kind.upper() if link.kind else 'device'} {link.address}"
    remedy = (
        "Reseat the device and its riser/cable; check the slot's BIOS link settings; a link "
        "that trains narrow again needs the riser, cable or device replaced."
    )
    out = []
    if link.width is None or link.speed_gts is None:
        out.append(
            unknown(
                "link width/speed could not be read from sysfs (current_link_width "
                f"{link.width}, current_link_speed {link.speed_gts})",
                "Read the device's sysfs link files by hand; a device whose link state cannot "
                "be read is in a bad state (reset or reseat it); the host is not fit until it "
                "can be read.",
                subject,
            )
        )
        return out
    if link.width < width or (link.max_width is not None and link.width < link.max_width):
        out.append(
            fail(
                f"link trained at x{link.width}, expected x{max(width, link.max_width or 0)}",
                remedy,
                subject,
            )
        )
    current_gen = link.gen or 0
    if current_gen < gen:
        text = f"link at Gen{current_gen} ({link.speed_gts} GT/s), expected Gen{gen}"
        if idle_downshift_ok:
            out.append(warn(text + " (GPUs lower the link speed when idle)", remedy, subject))
        else:
            out.append(fail(text, remedy, subject))
    return out
