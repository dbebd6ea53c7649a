"""Firmware against the host type's baseline: one comparison for every source.

The profile's ``firmware`` section is the baseline of a host type: GPU VBIOS and infoROM (read
by ``nvidia-smi`` on the host), HCA firmware (``/sys/class/infiniband/*/fw_ver``), the OFED or
DOCA-OFED release, and ``baseboard``: the HGX baseboard's components as the BMC's Redfish
firmware inventory names them (component -> version). The quick check compares what the host
can read; the controller compares the Redfish inventory with the same ``compare`` (issue 21).
"""

from __future__ import annotations

from collections.abc import Mapping

from .outcome import Finding, fail, unknown, warn


def compare(
    found: Mapping[str, str | None],
    baseline: Mapping[str, str],
    *,
    what: str,
    subject: str = "",
    severity: str = "fail",
) -> list[Finding]:
    """One finding per baseline item that differs (FAIL, or WARN with ``severity="warn"``) or
    that could not be read (UNKNOWN: None or empty in ``found``). Items ``found`` has beyond the
    baseline are not judged. ``what`` names the source, e.g. "Redfish firmware inventory"."""
    judge = fail if severity == "fail" else warn
    out = []
    for item, expected in sorted(baseline.items()):
        value = found.get(item)
        if not value:
            out.append(
                unknown(
                    f"{item}: not read from the {what} (baseline {expected})",
                    f"Find out why the {what} does not report {item}; the host is not fit "
                    "until its firmware is known.",
                    subject,
                )
            )
        elif value != expected:
            out.append(
                judge(
                    f"{item} {value}, baseline {expected}",
                    f"Flash {item} to {expected} (the host type's baseline in the profile), "
                    "or update the baseline if the fleet moved on.",
                    subject,
                )
            )
    return out
