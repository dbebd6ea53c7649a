"""The kernel log: Xid and SXid events classified by the Xid table, PCIe devices that report a
limited link, and the allow-list that surfaces unknown hardware lines as warnings."""

from __future__ import annotations

from collections import Counter

from .. import allowlist
from ..outcome import Finding, Severity, fail, ok, warn
from ..parsers import kernel_log
from ..xid import HARMLESS_SXIDS, classify
from . import CheckContext, check, sources


@check("xid", "Xid and SXid events in the kernel log", requires="gpu")
def xid(ctx: CheckContext) -> list[Finding]:
    lines = sources.kernel_log_lines(ctx)
    xids = kernel_log.xids(lines)
    sxids = kernel_log.sxids(lines)
    ctx.metrics["xid_events"] = float(len(xids))
    ctx.metrics["sxid_events"] = float(len(sxids))
    findings = []
    for (code, pci), count in sorted(Counter((x.code, x.pci) for x in xids).items()):
        rule = classify(code)
        last = next(x for x in reversed(xids) if (x.code, x.pci) == (code, pci))
        text = f"Xid {code} ({rule.meaning}) x{count}; last: {last.text[:160]}"
        level = fail if rule.severity == Severity.FAIL else warn
        findings.append(level(text, rule.remediation, f"PCI {pci}"))
    for (code, switch), count in sorted(Counter((s.code, s.switch) for s in sxids).items()):
        if code in HARMLESS_SXIDS:
            continue
        findings.append(
            fail(
                f"SXid {code} x{count} on NVSwitch {switch}",
                "Look the SXid up in the Fabric Manager guide; reset the baseboard; RMA if it "
                "repeats.",
                f"nvswitch{switch}",
            )
        )
    window = ctx.profile.get("kernel_log.window_s")
    scope = f"in the last {window} s" if window else "since boot"
    return findings or [ok(f"no Xid or harmful SXid {scope}")]


@check("kernel_log", "Kernel log allow-list", requires=None)
def kernel_log_check(ctx: CheckContext) -> list[Finding]:
    lines = sources.kernel_log_lines(ctx)
    try:
        extra = allowlist.compile_extra(ctx.profile.get("kernel_log.allow", []))
    except ValueError as exc:
        return [fail(f"profile: {exc}", "Fix the pattern in the profile.")]
    limited, unknown_lines = [], []
    watched = 0
    for line in lines:
        text = line.text
        if kernel_log.XID.search(text) or kernel_log.SXID.search(text):
            continue  # the xid check judges these
        if kernel_log.PCIE_LIMITED.search(text):
            limited.append(text)
            continue
        if not allowlist.is_watched(text):
            continue
        watched += 1
        if not allowlist.is_allowed(text, extra):
            unknown_lines.append(text)
    ctx.metrics["kernel_log_unknown_lines"] = float(len(unknown_lines))
    findings = []
    for text in limited[:5]:
        findings.append(
            fail(
                f"a device reports a limited PCIe link: {text[:200]}",
                "Reseat the device named in the line; check its slot, riser and BIOS settings.",
            )
        )
    if unknown_lines:
        distinct = list(dict.fromkeys(unknown_lines))
        shown = "; ".join(t[:160] for t in distinct[:5])
        more = f" (and {len(distinct) - 5} more)" if len(distinct) > 5 else ""
        findings.append(
            warn(
                f"{len(distinct)} hardware-related kernel-log lines not on the allow-list: "
                f"{shown}{more}",
                "Read them; if harmless, add a full-line pattern to the profile's "
                "kernel_log.allow (or to racksmith.health.allowlist); otherwise treat as a fault.",
            )
        )
    return findings or [ok(f"{watched} hardware-related lines, all on the allow-list")]
