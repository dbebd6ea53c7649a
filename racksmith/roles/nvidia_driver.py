"""Decisions of the ``nvidia_driver`` role that are more than a type check: whether the
source and branch can serve the site's choice (the refusal of :func:`racksmith.gpupkgs.plan`,
as one of preflight's problems), and what the driver's after-install check finds wrong in one
probe's output (``nvidia-smi`` and fabric manager's state). Their filters
(``plugins/filter/nvidia_driver.py``) are thin adapters over these functions.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from racksmith import gpupkgs

#: The after-install probe's marker before fabric manager's state (``systemctl show``).
FM_MARK = "### racksmith-nvidia-driver fabricmanager"


def install_refusals(source: str, branch: str, **options: object) -> list[str]:
    """The source and branch's refusal of the site's choice, as a problem to list (empty when
    :func:`racksmith.gpupkgs.plan` accepts it): an exact version on Canonical's archive, a
    running kernel of another flavour, a branch the source does not serve."""
    try:
        gpupkgs.plan(source=str(source), branch=str(branch), **options)
    except (gpupkgs.PlanError, TypeError, ValueError) as exc:
        return [str(exc)]
    return []


def check_argv(*, smi: bool, fabricmanager: bool) -> list[str]:
    """One command for the after-install check: every GPU's bus id, driver version and
    persistence mode (``nvidia-smi``, which must answer), then fabric manager's ActiveState."""
    parts = ["set -e"]
    if smi:
        parts.append(
            "nvidia-smi --query-gpu=pci.bus_id,driver_version,persistence_mode"
            " --format=csv,noheader"
        )
    if fabricmanager:
        parts.append(f"echo '{FM_MARK}'")
        parts.append("systemctl show --property=ActiveState --value nvidia-fabricmanager")
    return ["/bin/sh", "-c", "; ".join(parts)]


@dataclass(frozen=True)
class Gpu:
    bus_id: str
    driver: str
    persistence: str


def parse_check(text: str) -> tuple[list[Gpu], str | None]:
    """Split :func:`check_argv`'s output: the GPUs nvidia-smi listed, and fabric manager's
    state (None when it was not asked)."""
    if not isinstance(text, str):
        raise ValueError(f"check output must be text, got {type(text).__name__}")
    smi, _, fm = text.partition(FM_MARK)
    gpus = []
    for row in csv.reader(line for line in smi.splitlines() if line.strip()):
        if len(row) != 3:
            raise ValueError(
                f"nvidia-smi line {','.join(row)!r}: expected bus id, driver, persistence"
            )
        gpus.append(Gpu(*(field.strip() for field in row)))
    state = fm.strip() if FM_MARK in text else None
    return gpus, state


def check_problems(
    text: str,
    *,
    gpus: int,
    version: str = "",
    branch: str,
    persistence: bool,
    dropin: str,
    fabricmanager: bool,
) -> list[str]:
    """What the after-install check finds wrong, each in the words the role always used:
    every GPU answers on the pinned version (or branch), persistence mode is on for every GPU
    (when the role runs the daemon with it), fabric manager is active (where it applies)."""
    found, state = parse_check(text)
    problems = []
    if gpus > 0:
        drivers = [gpu.driver for gpu in found]
        wanted = (
            (lambda v: v == version)
            if version
            else (lambda v: re.match(re.escape(branch) + r"\.", v))
        )
        if len(drivers) != gpus or len(set(drivers)) != 1 or not wanted(drivers[0]):
            problems.append(
                f"nvidia-smi reports {drivers}; expected {gpus} GPUs on "
                f"{version or 'branch ' + branch}"
            )
        if persistence:
            off = [
                f"{gpu.bus_id}, {gpu.persistence}" for gpu in found if gpu.persistence != "Enabled"
            ]
            if off:
                problems.append(
                    f"persistence mode is off on {off} (nvidia-persistenced must run with"
                    f" --persistence-mode: {dropin})"
                )
    if fabricmanager:
        if state is None:
            raise ValueError("check output lacks fabric manager's state")
        if state != "active":
            problems.append(f"nvidia-fabricmanager is {state or 'unknown'}")
    return problems
