"""What each NVIDIA Xid (and NVSwitch SXid) means for a host's fitness: the reference's
Xid table (docs/health.md, "Xid handling") as data, so the severity of every code is stated
once and tested against the table.

Codes not in the table: those imbue's cluster-health treats as errors fail; any other code
warns, naming the code so an operator can look it up in NVIDIA's Xid catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

from .outcome import Severity


@dataclass(frozen=True)
class XidRule:
    meaning: str
    severity: Severity
    remediation: str


_RESTART_APP = "Usually an application fault; if it repeats on a healthy workload, reset the GPU."
_DRAIN = "Drain the host, reset the GPU (or reboot); if it repeats, open an RMA for the GPU."
_RESET = "Reset the GPU (or reboot the host) and re-run the checks; RMA if it repeats."

XID_TABLE: dict[int, XidRule] = {
    13: XidRule("graphics engine exception", Severity.WARN, _RESTART_APP),
    31: XidRule("GPU memory page fault", Severity.WARN, _RESTART_APP),
    43: XidRule("GPU stopped processing", Severity.WARN, _RESTART_APP),
    45: XidRule("preemptive cleanup", Severity.WARN, "Check the Xid that preceded it."),
    48: XidRule("double-bit ECC error", Severity.FAIL, _DRAIN),
    61: XidRule("micro-controller breakpoint", Severity.FAIL, _RESET),
    62: XidRule("micro-controller halt", Severity.FAIL, _RESET),
    63: XidRule(
        "row remapping pending",
        Severity.WARN,
        "Reset the GPU so the pending row remap takes effect, before acceptance.",
    ),
    64: XidRule("row remapping failure", Severity.FAIL, "Reset the GPU; RMA if it repeats."),
    74: XidRule(
        "NVLink error",
        Severity.FAIL,
        "Reset the GPUs; reseat or replace the NVLink/NVSwitch baseboard if it repeats.",
    ),
    79: XidRule("GPU has fallen off the bus", Severity.FAIL, _DRAIN),
    92: XidRule("high single-bit ECC error rate", Severity.WARN, "Watch the ECC counters."),
    94: XidRule("contained ECC error", Severity.FAIL, "Reset the GPU and re-run the checks."),
    95: XidRule("uncontained ECC error", Severity.FAIL, _RESET),
    119: XidRule("GSP RPC timeout", Severity.FAIL, _RESET),
    120: XidRule("GSP error", Severity.FAIL, _RESET),
    154: XidRule(
        "GPU recovery action changed",
        Severity.WARN,
        "See the gpu_recovery_action check, which fails unless the action is None.",
    ),
}

#: Codes imbue's cluster-health treats as errors (reference section 3), outside the table.
_IMBUE_ERRORS = frozenset(
    {48, 56, 57, 58, 62, 63, 64, *range(68, 78), *range(79, 87), 88, 89, 92, *range(94, 106)}
    | {*range(110, 121), *range(122, 126)}
)


def classify(code: int) -> XidRule:
    if code in XID_TABLE:
        return XID_TABLE[code]
    if code in _IMBUE_ERRORS:
        return XidRule(f"Xid {code} (an error class in the Xid catalog)", Severity.FAIL, _RESET)
    return XidRule(
        f"Xid {code} (not in racksmith's table)",
        Severity.WARN,
        "Look the code up in NVIDIA's Xid catalog and add it to racksmith's table.",
    )


#: SXids the Fabric Manager guide (appendix D.4) lists as harmless.
HARMLESS_SXIDS = frozenset(
    {11012, 11021, 11022, 11023, 12021, 12023, 15008, 15011}
    | {19049, 19055, 19057, 19059, 19062, 19065, 19068, 19071, 22013, 24001, 24002, 24003}
)
