# racksmith.core firmware rollout decisions as filters: thin adapters over
# racksmith.redfish.rollout (tested there). Documentation: firmware_rollout_plan.yml,
# firmware_host_outcome.yml, firmware_needs_activation.yml, firmware_wave_verdict.yml.
from __future__ import annotations

from ansible.errors import AnsibleFilterError

try:
    from racksmith.redfish import baseline, rollout
except ImportError as exc:  # the controller lacks the racksmith package
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def _need_racksmith():
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            "racksmith.core filters need the racksmith Python package on the controller: "
            f"{_IMPORT_ERROR}"
        )


def firmware_rollout_plan(
    hosts,
    hostvars,
    baseline_path,
    selected,
    images=None,
    wave_size=4,
    max_failure_rate=0.0,
    canary=None,
    allow_downgrade=False,
):
    _need_racksmith()
    try:
        loaded = baseline.load(baseline_path)
        results = baseline.results_from_hostvars({str(h): hostvars[h] for h in hosts})
        return rollout.plan(
            results,
            loaded,
            selected=[str(h) for h in selected or []],
            images=dict(images or {}),
            wave_size=int(wave_size),
            max_failure_rate=float(max_failure_rate),
            canary=str(canary) if canary else None,
            allow_downgrade=bool(allow_downgrade),
        )
    except (baseline.BaselineError, rollout.RolloutError, ValueError) as exc:
        raise AnsibleFilterError(f"firmware_rollout_plan: {exc}") from None


def firmware_host_outcome(flash, bios=None, activation=None, verify=None):
    _need_racksmith()
    return rollout.host_outcome(flash, bios, activation, verify)


def firmware_needs_activation(flash):
    _need_racksmith()
    return rollout.needs_activation(flash)


def firmware_wave_verdict(batch, plan, hostvars):
    _need_racksmith()
    try:
        outcomes = rollout.outcomes_from_hostvars(plan, hostvars)
        return rollout.wave_verdict(plan, [str(h) for h in batch], outcomes)
    except rollout.RolloutError as exc:
        raise AnsibleFilterError(f"firmware_wave_verdict: {exc}") from None


class FilterModule:
    def filters(self):
        return {
            "firmware_rollout_plan": firmware_rollout_plan,
            "firmware_host_outcome": firmware_host_outcome,
            "firmware_needs_activation": firmware_needs_activation,
            "firmware_wave_verdict": firmware_wave_verdict,
        }
