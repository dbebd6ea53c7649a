"""Firmware and fabric software against the host type's baseline (the profile's ``firmware``):
GPU VBIOS and infoROM from ``nvidia-smi``, HCA firmware from sysfs, the OFED/DOCA-OFED release
from ``ofed_info -s``. The HGX baseboard's components are compared by the controller from the
BMC's Redfish inventory with the same ``racksmith.health.firmware.compare``: the host cannot
read them, and the check says so rather than counting them as checked."""

from __future__ import annotations

from .. import firmware
from ..outcome import Finding, ok
from ..parsers.smi_xml import Gpu
from . import CheckContext, check, sources
from .gpu import per_gpu

#: Baseline key -> the Gpu attribute nvidia-smi fills.
GPU_ITEMS = {
    "vbios": "vbios",
    "inforom": "inforom_image",
    "inforom_oem": "inforom_oem",
    "board_part_number": "board_part_number",
}


@check(
    "firmware",
    "GPU, HCA and OFED/DOCA versions against the host type's baseline",
    requires="firmware",
)
def firmware_check(ctx: CheckContext) -> list[Finding]:
    severity = ctx.profile.get("firmware.severity", "fail")
    gpu_baseline = dict(ctx.profile.get("firmware.gpu") or {})  # items checked by the profile
    findings: list[Finding] = []
    checked = []
    if gpu_baseline:

        def judge(gpu: Gpu) -> list[Finding]:
            found = {k: getattr(gpu, attr) for k, attr in GPU_ITEMS.items() if k in gpu_baseline}
            return firmware.compare(
                found, gpu_baseline, what="nvidia-smi", subject=gpu.label, severity=severity
            )

        findings += per_gpu(sources.smi(ctx), judge)
        checked.append("GPU " + ", ".join(f"{k} {v}" for k, v in sorted(gpu_baseline.items())))
    hca = ctx.profile.get("firmware.hca")
    if hca:
        _, fw = sources.ib_ports(ctx)
        if not fw:
            findings += firmware.compare({}, {"HCA firmware": hca}, what="/sys/class/infiniband")
        for device, version in sorted(fw.items()):
            findings += firmware.compare(
                {"HCA firmware": version},
                {"HCA firmware": hca},
                what=f"/sys/class/infiniband/{device}/fw_ver",
                subject=device,
                severity=severity,
            )
        checked.append(f"HCA firmware {hca} on {len(fw)} HCAs")
    ofed = ctx.profile.get("firmware.ofed")
    if ofed:
        stack = sources.ofed(ctx)
        findings += firmware.compare(
            {"OFED/DOCA-OFED": stack.version if stack else None},
            {"OFED/DOCA-OFED": ofed},
            what="`ofed_info -s` (not installed: inbox rdma-core)"
            if stack is None
            else "`ofed_info -s`",
            severity=severity,
        )
        checked.append(f"OFED {ofed}")
    if findings:
        return findings
    board = ctx.profile.get("firmware.baseboard") or {}
    note = (
        f"; the {len(board)} HGX baseboard components are compared from the BMC's Redfish "
        "inventory on the controller"
        if board
        else ""
    )
    return [ok("at the baseline: " + "; ".join(checked or ["nothing to compare"]) + note)]
