"""The discover phase's decisions: does the hardware a BMC reports match what the site
expects for that model, and is the BMC's clock usable.

Both fail closed. A model the site has no expectation for is a problem (a new model in a rack
is something a person must look at), and a clock reading that is missing or unparsable is a
problem: a BMC whose clock could not be read or set once went on to enlist because a
playbook read ``.failed`` from a task registered with ``failed_when: false``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Built-in expectations; a site overrides them with ``racksmith_expected_hardware``.
DEFAULT_EXPECTED_HARDWARE: dict[str, dict[str, Any]] = {
    "PowerEdge XE9680": {"gpus": 8, "gpu_model": "NVIDIA H200"},
    "PowerEdge R750": {"gpus": 1, "gpu_model": "NVIDIA H100 PCIe"},
    "SYS-821GE-TNHR": {"gpus": 8, "gpu_model": "NVIDIA H100 80GB HBM3"},  # Supermicro HGX
    "DGXH100": {"gpus": 8, "gpu_model": "NVIDIA H100 80GB HBM3"},
    "ThinkSystem SR670 V2": {"gpus": 8, "gpu_model": "NVIDIA L40"},
    "ProLiant DL385 Gen10 Plus v2": {"gpus": 0},
}


def hardware_problems(
    facts: Mapping[str, Any], expected: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """Every way the BMC's view of a server differs from the expectation for its model.

    ``facts`` holds the Redfish inventory's host variables (``redfish_model``,
    ``redfish_gpus``: a list of ``{id, model}``, ``redfish_health``). An empty list means the
    server may go on; each string is one reason to quarantine it.
    """
    table = DEFAULT_EXPECTED_HARDWARE if expected is None else expected
    model = str(facts.get("redfish_model") or "")
    gpus = facts.get("redfish_gpus")
    problems: list[str] = []
    if not isinstance(gpus, Sequence) or isinstance(gpus, str | bytes):
        return [f"the BMC's GPU list is unusable ({type(gpus).__name__}): cannot triage"]
    want = table.get(model)
    if not isinstance(want, Mapping):
        problems.append(
            f"no hardware expectation for model {model or '(none reported)'}"
            " (set racksmith_expected_hardware)"
        )
        want = {}
    ids = ", ".join(str(g.get("id", "?")) for g in gpus if isinstance(g, Mapping)) or "none"
    if "gpus" in want:
        try:
            wanted = int(want["gpus"])
        except (TypeError, ValueError):
            problems.append(f"expectation for {model} has a non-integer gpus: {want['gpus']!r}")
        else:
            if wanted != len(gpus):
                problems.append(f"expected {wanted} GPUs, BMC reports {len(gpus)} ({ids})")
    if want.get("gpu_model"):
        foreign = sorted(
            {
                str(g.get("model"))
                for g in gpus
                if isinstance(g, Mapping) and g.get("model") != want["gpu_model"]
            }
        )
        if foreign:
            problems.append(
                f"unexpected GPU model(s) {', '.join(foreign)}, expected {want['gpu_model']}"
            )
    if facts.get("redfish_health") == "Critical":
        problems.append("BMC health rollup is Critical")
    return problems


def clock_problem(result: Mapping[str, Any], max_skew: float) -> str:
    """Why the BMC's clock disqualifies the server, or ``''`` when it is usable.

    ``result`` is what ``racksmith.core.redfish_clock`` returned (registered with
    ``failed_when: false`` so the run goes on): usable only when it carries a numeric skew
    within ``max_skew``. A failed call, a missing or non-numeric reading, or a skew left
    uncorrected is a problem with the module's own message.
    """
    msg = str(result.get("msg") or "").strip()
    skew = result.get("skew_seconds")
    if result.get("failed") or not isinstance(skew, int | float) or isinstance(skew, bool):
        return f"BMC clock could not be checked or set: {msg or 'no reading returned'}"
    if result.get("skewed") or abs(float(skew)) > float(max_skew):
        return f"BMC clock off by {float(skew):+.0f} s and not corrected ({msg or 'no message'})"
    return ""
