"""Per-GPU checks read from one ``nvidia-smi -q -x`` call: count and model, the tool's own
exit code, ECC, row remapping, recovery action, clock-event reasons, versions, fabric state."""

from __future__ import annotations

from collections.abc import Callable

from ..outcome import Finding, fail, ok, unknown, warn
from ..parsers.smi_xml import Gpu, SmiLog, Unreadable
from . import CheckContext, check, sources

UNREADABLE_REMEDY = (
    "nvidia-smi could not read this field (an NVML error): read the kernel log for Xids, reset "
    "the GPU or reboot, and re-run; if it stays unreadable the GPU or its driver is faulty."
)


def unreadable(exc: Unreadable, subject: str = "") -> Finding:
    """The finding for a field a check needs and nvidia-smi could not read: UNKNOWN, named."""
    return unknown(str(exc), UNREADABLE_REMEDY, subject)


def per_gpu(log: SmiLog, judge: Callable[[Gpu], list[Finding]]) -> list[Finding]:
    """``judge`` on every GPU; a GPU whose needed field is unreadable gives UNKNOWN naming the
    field, and the other GPUs are still judged."""
    out: list[Finding] = []
    for gpu in log.gpus:
        try:
            out += judge(gpu)
        except Unreadable as exc:
            out.append(unreadable(exc, gpu.label))
    return out


#: nvidia-smi exit codes (nvidia-smi(1), "RETURN VALUE") and what to do about each.
SMI_EXIT_CODES = {
    2: ("invalid argument or flag", "Report a racksmith bug: the agent passed a bad flag."),
    3: ("the requested operation is not available", "Check the driver version."),
    4: ("no permission", "Run the agent as root."),
    6: ("the query was unsuccessful", "Reset the GPU or reboot; RMA if it persists."),
    8: ("external power cables are not attached", "Reconnect the GPU's power cables."),
    9: ("the NVIDIA driver is not loaded", "Load the driver (modprobe nvidia) or reinstall it."),
    10: ("the kernel detected an interrupt issue with a GPU", "Reboot; reseat the GPU."),
    12: ("the NVML library was not found", "Reinstall the NVIDIA driver (libnvidia-ml)."),
    13: ("NVML does not implement a requested function", "Match nvidia-smi to the driver."),
    14: ("the infoROM is corrupted", "Flash or RMA the GPU (corrupt infoROM)."),
    15: ("a GPU has fallen off the bus", "Drain the host; reseat or RMA the GPU (Xid 79)."),
}


def _models(ctx: CheckContext) -> list[str]:
    model = ctx.profile.get("gpu.model")
    return [model] if isinstance(model, str) else list(model or [])


@check("gpu_count", "GPU count and model", requires="gpu.count")
def gpu_count(ctx: CheckContext) -> list[Finding]:
    log = sources.smi(ctx)
    expected = ctx.profile.get("gpu.count")
    ctx.metrics["gpus"] = len(log.gpus)
    findings = []
    if len(log.gpus) != expected:
        findings.append(
            fail(
                f"found {len(log.gpus)} GPUs, expected {expected}",
                "Compare `nvidia-smi -L` with `lspci -d 10de:` and the BMC inventory: a GPU "
                "missing from both needs reseating or replacing; one on the bus but not in "
                "nvidia-smi failed to initialise (see the kernel log).",
            )
        )
    models = _models(ctx)

    def model(gpu: Gpu) -> list[Finding]:
        if models and gpu.name not in models:
            return [
                fail(
                    f"model {gpu.name!r} is not the expected {' or '.join(models)}",
                    "Use the profile for this host type, or replace the GPU.",
                    gpu.label,
                )
            ]
        return []

    findings += per_gpu(log, model)
    return findings or [ok(f"{len(log.gpus)} x {log.gpus[0].name if log.gpus else 'GPU'}")]


@check("nvidia_smi", "nvidia-smi answers", requires="gpu")
def nvidia_smi(ctx: CheckContext) -> list[Finding]:
    result = sources.smi_raw(ctx)
    if result.missing:
        return [
            fail(
                "nvidia-smi is not installed: no NVIDIA driver on this host",
                "Install the NVIDIA driver (configure phase, role nvidia_driver).",
            )
        ]
    if result.timed_out:
        return [
            unknown(
                f"nvidia-smi did not answer within {result.duration_s:.0f} s",
                "A hung nvidia-smi usually means a GPU in a bad state (look for Xid 119/120 in "
                "the kernel log); reset the GPUs or reboot.",
            )
        ]
    if result.capped:
        return [
            unknown(
                result.describe_failure(),
                "A tool that prints without end is broken or not the real nvidia-smi; check the "
                "driver install.",
            )
        ]
    if result.rc != 0:
        meaning, remedy = SMI_EXIT_CODES.get(
            result.rc or 0, ("an unknown error", "Run `nvidia-smi` by hand and read its message.")
        )
        return [fail(f"nvidia-smi exited with {result.rc}: {meaning}", remedy)]
    ctx.metrics["nvidia_smi_seconds"] = round(result.duration_s, 3)
    return [ok(f"nvidia-smi answered in {result.duration_s:.2f} s")]


@check("ecc", "ECC mode and errors", requires="gpu")
def ecc(ctx: CheckContext) -> list[Finding]:
    warn_at = int(ctx.profile.get("gpu.ecc.corrected_warn", 1000))

    def judge(gpu: Gpu) -> list[Finding]:
        found = _ecc_of(gpu, warn_at)
        unc, corr = gpu.uncorrectable(), gpu.correctable()
        ctx.metrics[f'ecc_uncorrected_volatile{{gpu="{gpu.index}"}}'] = float(unc or 0)
        ctx.metrics[f'ecc_corrected_volatile{{gpu="{gpu.index}"}}'] = float(corr or 0)
        return found

    findings = per_gpu(sources.smi(ctx), judge)
    return findings or [ok("ECC enabled on every GPU; no uncorrectable errors")]


def _ecc_of(gpu: Gpu, warn_at: int) -> list[Finding]:
    out = []
    if gpu.ecc_current != "Enabled":
        out.append(
            fail(
                f"ECC is {gpu.ecc_current or 'not reported'}",
                "Enable ECC (`nvidia-smi -i N -e 1`) and reset the GPU.",
                gpu.label,
            )
        )
        return out
    if gpu.ecc_pending and gpu.ecc_pending != "Enabled":
        out.append(
            fail(
                f"ECC will be {gpu.ecc_pending} after the next reset",
                "Re-enable ECC (`nvidia-smi -i N -e 1`).",
                gpu.label,
            )
        )
    unc = gpu.uncorrectable()
    if unc is None:
        out.append(
            unknown(
                "ECC is enabled but the uncorrectable counters are not reported", subject=gpu.label
            )
        )
    elif unc > 0:
        out.append(
            fail(
                f"{unc} uncorrectable ECC errors since the last reset "
                f"({_detail(gpu.ecc_volatile)})",
                "Drain the host, reset the GPU and re-run the checks; RMA if they return.",
                gpu.label,
            )
        )
    aggregate_sram = sum(
        gpu.ecc_aggregate.get(k) or 0
        for k in ("sram_uncorrectable_parity", "sram_uncorrectable_secded")
    )
    if gpu.sram_threshold_exceeded:
        out.append(fail("SRAM error threshold exceeded", "Open an RMA for the GPU.", gpu.label))
    elif aggregate_sram > 4:
        out.append(
            warn(
                f"{aggregate_sram} lifetime uncorrectable SRAM errors (> 4)",
                "More than 4 is usually a reason to RMA the GPU.",
                gpu.label,
            )
        )
    sram_corr = gpu.ecc_volatile.get("sram_correctable") or 0
    dram_corr = gpu.ecc_volatile.get("dram_correctable") or 0
    if sram_corr > 10_000 or dram_corr > 20_000_000:
        out.append(
            fail(
                f"correctable ECC errors over the limit (SRAM {sram_corr} > 10000 or "
                f"DRAM {dram_corr} > 20000000)",
                "Reset the GPU; RMA if the count climbs again.",
                gpu.label,
            )
        )
    elif sram_corr + dram_corr >= warn_at:
        out.append(
            warn(
                f"{sram_corr + dram_corr} correctable ECC errors since the last reset",
                "Watch the rate; reset the GPU at the next maintenance window.",
                gpu.label,
            )
        )
    return out


def _detail(counts: dict[str, int | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if "uncorrectable" in k and v)


@check("row_remap", "Row remapping and retired pages", requires="gpu")
def row_remap(ctx: CheckContext) -> list[Finding]:
    def judge(gpu: Gpu) -> list[Finding]:
        findings: list[Finding] = []
        ctx.metrics[f'remapped_rows_uncorrectable{{gpu="{gpu.index}"}}'] = float(
            gpu.remap_uncorrectable or 0
        )
        if gpu.remap_failure:
            findings.append(
                fail("row remapping failed", "Open an RMA for the GPU (no spare rows).", gpu.label)
            )
        if gpu.remap_pending:
            findings.append(
                fail(
                    "a row remap is pending",
                    "Reset the GPU (or reboot) so the remap takes effect, then re-run.",
                    gpu.label,
                )
            )
        if gpu.retired_pending:
            findings.append(
                fail("pages are pending retirement", "Reset the GPU, then re-run.", gpu.label)
            )
        if gpu.remap_pending is None and gpu.remap_failure is None:
            findings.append(unknown("the row-remapping state is not reported", subject=gpu.label))
        return findings

    findings = per_gpu(sources.smi(ctx), judge)
    return findings or [ok("no pending or failed row remaps; no pages pending retirement")]


@check("recovery_action", "GPU recovery action", requires="gpu")
def recovery_action(ctx: CheckContext) -> list[Finding]:
    def judge(gpu: Gpu) -> list[Finding]:
        action = gpu.recovery_action
        if not action:
            return [
                unknown(
                    "the driver does not report gpu_recovery_action (needs driver R550 or later)",
                    "Upgrade the driver, or skip this check in the profile for this host type.",
                    gpu.label,
                )
            ]
        if action != "None":
            return [
                fail(
                    f"the driver asks for recovery action {action!r}",
                    f"Do what it asks ({action}), then re-run the checks.",
                    gpu.label,
                )
            ]
        return []

    findings = per_gpu(sources.smi(ctx), judge)
    return findings or [ok("no recovery action requested")]


#: Clock-event reasons and their severity on an idle host (reference section 4).
BAD_CLOCK_EVENTS = {
    "hw_slowdown": "fail",
    "hw_thermal_slowdown": "fail",
    "hw_power_brake_slowdown": "fail",
    "sw_thermal_slowdown": "warn",
}


@check("clock_events", "Clock-event (throttle) reasons and temperature", requires="gpu")
def clock_events(ctx: CheckContext) -> list[Finding]:
    max_temp = ctx.profile.get("gpu.max_temperature_c")

    def judge(gpu: Gpu) -> list[Finding]:
        found = clock_findings(gpu)
        temp = gpu.temperature_c
        if temp is None:
            if max_temp is not None:  # a limit that cannot be compared is not met
                found.append(
                    unknown(
                        "the GPU temperature is not reported (N/A): the "
                        f"{max_temp} C limit cannot be checked",
                        UNREADABLE_REMEDY,
                        gpu.label,
                    )
                )
            return found
        ctx.metrics[f'gpu_temperature_celsius{{gpu="{gpu.index}"}}'] = float(temp)
        if max_temp is not None and temp > max_temp:
            found.append(
                fail(
                    f"{temp} C, above the profile's {max_temp} C",
                    "Check the chassis airflow, fans and inlet temperature.",
                    gpu.label,
                )
            )
        return found

    findings = per_gpu(sources.smi(ctx), judge)
    return findings or [ok("no hardware slowdown, thermal or power-brake clock events")]


def clock_findings(gpu: Gpu) -> list[Finding]:
    """Shared with the load checks, which re-read the reasons under load."""
    out = []
    for reason, level in BAD_CLOCK_EVENTS.items():
        if reason in gpu.clock_events:
            text = f"clock event {reason} is active"
            remedy = (
                "Check cooling (fans, inlet temperature, heatsink contact) and power delivery; "
                "the GPU is running below its clocks."
            )
            out.append(
                fail(text, remedy, gpu.label) if level == "fail" else warn(text, remedy, gpu.label)
            )
    return out


@check("versions", "Driver, VBIOS, infoROM and GSP firmware uniformity", requires="gpu")
def versions(ctx: CheckContext) -> list[Finding]:
    log = sources.smi(ctx)
    severe = fail if ctx.profile.get("versions.severity") == "fail" else warn
    remedy = "Bring the host to the golden versions (configure phase), then re-run."
    findings = []
    golden_driver = ctx.profile.get("versions.driver")
    if golden_driver and log.driver_version != golden_driver:
        findings.append(severe(f"driver {log.driver_version}, golden {golden_driver}", remedy))
    for field, key in (("vbios", "vbios"), ("inforom_image", "inforom"), ("gsp_firmware", "gsp")):
        seen: dict[str, list[int]] = {}
        for gpu in log.gpus:
            seen.setdefault(getattr(gpu, field), []).append(gpu.index)
        if len(seen) > 1:
            detail = "; ".join(f"{v or 'N/A'} on GPUs {idx}" for v, idx in seen.items())
            findings.append(severe(f"{key} differs between GPUs: {detail}", remedy))
        golden = ctx.profile.get(f"versions.{key}")
        if golden:
            for value, indexes in seen.items():
                if value != golden:
                    findings.append(
                        severe(f"{key} {value} on GPUs {indexes}, golden {golden}", remedy)
                    )
    if findings:
        return findings
    first = log.gpus[0] if log.gpus else None
    return [
        ok(
            f"driver {log.driver_version}, CUDA {log.cuda_version}"
            + (f", VBIOS {first.vbios}, infoROM {first.inforom_image}" if first else "")
        )
    ]


@check("fabric_manager", "Fabric Manager and NVSwitch fabric state", requires="nvswitch")
def fabric_manager(ctx: CheckContext) -> list[Finding]:
    findings = []
    expected = ctx.profile.get("nvswitch.count")
    if expected is not None:
        switches = [link for link in sources.pci_links(ctx) if link.kind == "nvswitch"]
        if len(switches) != expected:
            findings.append(
                fail(
                    f"{len(switches)} NVSwitches on the PCI bus, expected {expected}",
                    "Check the HGX baseboard (BMC inventory); reseat or RMA it.",
                )
            )
    result = sources.run(ctx, ("systemctl", "is-active", "nvidia-fabricmanager"), 10.0)
    state = result.stdout.strip()
    if result.missing or result.timed_out:
        findings.append(unknown(result.describe_failure()))
    elif state != "active":
        findings.append(
            fail(
                f"nvidia-fabricmanager is {state or 'not running'}",
                "Install and start nvidia-fabricmanager at the driver's exact version.",
            )
        )

    def judge(gpu: Gpu) -> list[Finding]:
        if (gpu.fabric_state, gpu.fabric_status) != ("Completed", "Success"):
            return [
                fail(
                    f"fabric state {gpu.fabric_state or 'N/A'}, "
                    f"status {gpu.fabric_status or 'N/A'}",
                    "Restart nvidia-fabricmanager; read its log for the failing NVSwitch.",
                    gpu.label,
                )
            ]
        return []

    findings += per_gpu(sources.smi(ctx), judge)
    return findings or [ok("Fabric Manager active; every GPU's fabric registration completed")]


@check("persistence_mode", "Persistence mode on every GPU", requires="gpu")
def persistence_mode(ctx: CheckContext) -> list[Finding]:
    """Off, the driver tears a GPU down when its last client exits and sets it up again for the
    next: seconds of latency per job start, and lost state (clocks, ECC counters in memory).
    The stock nvidia-persistenced unit runs with --no-persistence-mode (issue 20)."""

    def judge(gpu: Gpu) -> list[Finding]:
        mode = gpu.persistence_mode
        if mode == "Enabled":
            return []
        return [
            fail(
                f"persistence mode is {mode or 'not reported'}",
                "Run nvidia-persistenced without --no-persistence-mode (configure phase, role "
                "nvidia_driver); `nvidia-smi -pm 1` turns it on until the next reboot.",
                gpu.label,
            )
        ]

    findings = per_gpu(sources.smi(ctx), judge)
    return findings or [ok("persistence mode enabled on every GPU")]


#: Processes that may hold a GPU on a healthy idle host when the profile names none.
DEFAULT_PROCESS_ALLOW = ("nv-hostengine",)
#: Memory in use (MiB) an idle GPU may show when the profile says nothing: the driver's own
#: use is under `reserved`, so `used` reads 0 MiB on an idle H200 (tests/fixtures/h200-x1).
DEFAULT_MAX_USED_MIB = 1024


def leftover_findings(
    log: SmiLog, allow: tuple[str, ...] = DEFAULT_PROCESS_ALLOW, max_used_mib: int | None = None
) -> list[Finding]:
    """A GPU held by a process that is not on the allow-list, or with more memory in use than
    the profile allows, is not fit: the next job's first allocation runs out of memory. Shared
    by the quick check and the load checks (which refuse to start on such a host)."""
    limit = DEFAULT_MAX_USED_MIB if max_used_mib is None else max_used_mib
    allowed = {name.rsplit("/", 1)[-1] for name in allow}

    def judge(gpu: Gpu) -> list[Finding]:
        out = []
        for proc in gpu.processes:
            if proc.name.rsplit("/", 1)[-1] in allowed:
                continue
            memory = f"{proc.used_mib} MiB" if proc.used_mib is not None else "memory N/A"
            out.append(
                fail(
                    f"process {proc.pid} ({proc.name}) holds the GPU: {memory}",
                    f"A leftover of an earlier job: end it (`kill {proc.pid}`, or drain the "
                    "host and reboot), or add it to gpu.processes.allow in the profile if it "
                    "belongs there.",
                    gpu.label,
                )
            )
        used = gpu.memory_used_mib
        if used is None:
            out.append(unknown("memory in use is not reported (N/A)", UNREADABLE_REMEDY, gpu.label))
        elif used > limit:
            total = gpu.memory_total_mib
            share = f" of {total} MiB" if total else ""
            who = ", ".join(f"{p.pid} ({p.name})" for p in gpu.processes) or "no process listed"
            out.append(
                fail(
                    f"{used} MiB{share} in use (limit {limit} MiB); processes: {who}",
                    "Find what holds the memory (`nvidia-smi --query-compute-apps=pid,"
                    "process_name,used_memory --format=csv`; a container's processes may not be "
                    "listed) and end it, or reset the GPU.",
                    gpu.label,
                )
            )
        return out

    return per_gpu(log, judge)


@check("gpu_processes", "No leftover processes or memory in use on the GPUs", requires="gpu")
def gpu_processes(ctx: CheckContext) -> list[Finding]:
    log = sources.smi(ctx)
    allow = tuple(ctx.profile.get("gpu.processes.allow", DEFAULT_PROCESS_ALLOW))
    limit = ctx.profile.get("gpu.processes.max_used_mib", DEFAULT_MAX_USED_MIB)
    findings = leftover_findings(log, allow, limit)
    for gpu in log.gpus:
        if "processes" not in gpu.unreadable and "memory_used_mib" not in gpu.unreadable:
            ctx.metrics[f'gpu_processes{{gpu="{gpu.index}"}}'] = float(len(gpu.processes))
            ctx.metrics[f'gpu_memory_used_mib{{gpu="{gpu.index}"}}'] = float(
                gpu.memory_used_mib or 0
            )
    return findings or [
        ok(f"no process outside the allow-list; memory in use under {limit} MiB on every GPU")
    ]
