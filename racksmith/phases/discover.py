"""The discover phase's decisions: does the hardware a BMC reports match what the site
expects for that model, do its firmware and its BMC's own health view pass, and is the BMC's
clock usable.

Each is made once for the whole play (:func:`verdicts`, :func:`clock_problems`): a task result
per server costs the controller a forked worker (issue 25), so the playbook asks once and
quarantines only the servers named. All of them fail closed. A model the site has no
expectation for is a problem (a new model in a rack is something a person must look at), and a
clock reading that is missing or unparsable is a problem: a BMC whose clock could not be read
or set once went on to enlist because a playbook read ``.failed`` from a task registered with
``failed_when: false``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from racksmith.redfish import baseline, bmc_health

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


def clock_problems(
    batch: Mapping[str, Any], hosts: Iterable[str], max_skew: float
) -> dict[str, str]:
    """Host -> why its BMC clock disqualifies it (:func:`clock_problem`), for each of ``hosts``
    whose clock is not usable; the servers whose clock is fine are left out.

    ``batch`` is what ``racksmith.core.redfish_clock_fleet`` returned, each server's own result
    under ``hosts[name]``. A server missing there (a batch that failed as a whole on bad input,
    or one that skipped it) is judged on the batch's own result: its message, and no reading,
    so it is quarantined, never passed unread.
    """
    per_host = batch.get("hosts")
    results = per_host if isinstance(per_host, Mapping) else {}
    out: dict[str, str] = {}
    for host in hosts:
        result = results.get(host)
        problem = clock_problem(result if isinstance(result, Mapping) else batch, max_skew)
        if problem:
            out[str(host)] = problem
    return out


def verdicts(
    hostvars: Mapping[str, Mapping[str, Any]],
    hosts: Sequence[str],
    *,
    expected: Mapping[str, Mapping[str, Any]] | None = None,
    quarantined: Iterable[str] = (),
    firmware_baseline: Any = None,
    slices: int | str = 1,
    bmc_health_check: bool = False,
    bmc_health_since: Any = None,
    bmc_health_allow: Any = (),
) -> dict[str, dict[str, str]]:
    """The discover phase's judgement of ``hosts`` (the servers whose BMC answered), in one
    call: ``quarantine`` (host -> reason, in the order the judgements are made) and ``warn``
    (host -> what to say of a server that goes on: firmware drift under ``on_drift: warn``,
    firmware compliance UNKNOWN).

    The order matters and is the phase's: hardware triage (:func:`hardware_problems`) judges
    every one of ``hosts``; the firmware/BIOS baseline then judges the servers neither already
    ``quarantined`` (by the inventory: a MAAS tag, a sliced run's carried quarantine) nor just
    quarantined for their hardware, as one fleet (its fleet rule compares them); the BMC health
    check judges what is left after that. The firmware judgement needs a baseline and the
    whole fleet: a slice of a sliced run (``slices`` > 1) sees only its own servers, so it
    skips it (the unsliced process before the slices judged the fleet, and its quarantine
    reaches them). Raises ValueError (``baseline.BaselineError`` among them) for a baseline or
    a BMC health setting that cannot be used: a setting error stops the run, it judges no host.
    """
    out: dict[str, dict[str, str]] = {"quarantine": {}, "warn": {}}
    quarantine = out["quarantine"]
    for host in hosts:
        problems = hardware_problems(hostvars[host], expected)
        if problems:
            quarantine[str(host)] = "; ".join(problems).strip()
    already = {str(h) for h in quarantined}

    def going_on() -> list[str]:
        return [str(h) for h in hosts if str(h) not in quarantine and str(h) not in already]

    if firmware_baseline is not None and int(slices) == 1:
        loaded = baseline.load(firmware_baseline)
        fleet = going_on()
        judged = baseline.phase_verdicts(
            baseline.results_from_hostvars({h: hostvars[h] for h in fleet}), loaded
        )
        quarantine.update({h: why.strip() for h, why in judged["quarantine"].items()})
        out["warn"].update(judged["warn"])
    if bmc_health_check:
        for host in going_on():
            found = bmc_health.host_problems(
                hostvars[host].get("redfish_bmc_health"), bmc_health_since, bmc_health_allow or []
            )
            if found:
                quarantine[host] = "; ".join(found).strip()
    return out
