"""Role gdr's decisions: what is wrong with its inputs, and its host probe read back.

The role asserts once over :func:`problems` (every message as the separate asserts before
issue 25 said it), and reads the host in one command per point in time, which prints marker
lines (``@key value``) and, after ``@policy``, ``apt-cache policy`` output. Parsing fails
closed: output without its markers is an error naming what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from racksmith.gpupkgs import PlanError, default_modules, gdr_packages

_PARAM = re.compile(r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:-]+)?")


class ProbeError(ValueError):
    """The probe's output is not what the role's probe command prints."""


def problems(
    *,
    os_family: str,
    distribution: str,
    kernel_params: Sequence[str],
    method: str,
    modules: str = "",
    branch: str = "580",
) -> list[str]:
    """Everything wrong with the host's platform and the role's inputs, one line each."""
    found = []
    if os_family != "Debian":
        found.append(
            "role gdr supports Ubuntu 22.04 and Debian 12; this host is "
            f"{distribution or 'unknown'}"
        )
    params = [str(p) for p in kernel_params or []]
    if any(not _PARAM.fullmatch(p) for p in params):
        found.append(f"gdr_kernel_params must be name or name=value words: {params}")
    try:  # the method is one NVIDIA supports (racksmith.gpupkgs.check_gdr)
        gdr_packages(str(method), str(modules or default_modules(str(branch))))
    except (PlanError, ValueError) as exc:
        found.append(f"gpu_gdr_packages: {exc}")
    return found


def parse_probe(stdout: str, required: Sequence[str] = ()) -> dict:
    """Marker lines as a dict (``@unit:NAME yes`` -> ``{'unit:NAME': 'yes'}``), the text after
    ``@policy`` under ``policy``. ``required`` markers must be present."""
    head, sep, policy = str(stdout).partition("@policy\n")
    if not sep and str(stdout).rstrip("\n").endswith("@policy"):
        head, sep, policy = str(stdout).rstrip("\n")[: -len("@policy")], "@policy", ""
    if not sep:
        raise ProbeError("probe output lacks its @policy line (the probe did not finish)")
    found: dict[str, str] = {}
    for number, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        if not line.startswith("@"):
            raise ProbeError(f"probe line {number} is not a probe line: {line!r}")
        key, _, value = line[1:].partition(" ")
        found[key] = value
    missing = [key for key in required if key not in found]
    if missing:
        raise ProbeError(f"probe output lacks @{', @'.join(missing)}")
    return {**found, "policy": policy}
