"""Rolling a firmware/BIOS baseline out: who is updated, in which order, and when to stop.

Why this shape (issue 21; users' own incidents): a firmware upgrade applied to half of a cluster
broke the fabric manager's state. So a rollout

- acts only on the hosts the operator selected by name (a host not selected is never touched,
  even when it drifts) and is a **dry run** unless asked to apply (the playbook's switch);
- starts with **one canary host**, then goes on in **waves** of a set size, host type by host
  type (a type's hosts in consecutive waves, so at most one type is in flight at once);
- **stops** when a wave's failure rate passes the threshold (the canary's wave is one host: its
  failure always stops the rollout);
- **never leaves a host type half-updated without saying so**: when it stops, every host type
  with some hosts updated and others not is named, with both lists.

What a host needs comes from the compliance verdict (:mod:`racksmith.redfish.baseline`): per
baseline rule whose components are not at target, one flash to the rule's target (its image from
the site's ``images`` map: ``{component pattern: {image: FILE} | {image_uri: URL}}``); the BIOS
attributes that drift or wait. Hosts that cannot be planned are left out with the reason:
UNKNOWN (fail closed: nothing unread is flashed), a downgrade unless ``allow_downgrade``, a
component without an image, no host type. Pure: plain data in, plain data out.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from typing import Any

from racksmith.redfish import baseline as bl

OK, FAILED = "ok", "failed"
#: flashed but only staged, no reset allowed (racksmith_firmware_reboot false): not updated, so
#: the stop rule counts it with the failed hosts, under its own name
STAGED = "staged"


class RolloutError(ValueError):
    """The rollout's settings are wrong (the message names the setting)."""


def _check_settings(wave_size: int, max_failure_rate: float) -> None:
    if isinstance(wave_size, bool) or not isinstance(wave_size, int) or wave_size < 1:
        raise RolloutError(f"wave_size must be a whole number >= 1, not {wave_size!r}")
    if not (isinstance(max_failure_rate, int | float) and 0 <= max_failure_rate < 1):
        raise RolloutError(
            f"max_failure_rate must be a fraction in [0, 1) (0.2 = stop above 20% failed), "
            f"not {max_failure_rate!r}"
        )


def _image(images: Mapping[str, Any], pattern: str) -> dict[str, str] | None:
    entry = images.get(pattern)
    if not isinstance(entry, Mapping):
        return None
    out = {k: str(entry[k]) for k in ("image", "image_uri") if entry.get(k)}
    return out or None


def host_work(
    verdict: bl.HostVerdict,
    host_type: bl.HostType | None,
    images: Mapping[str, Any],
    *,
    allow_downgrade: bool = False,
) -> tuple[dict[str, Any] | None, str | None]:
    """(work, None) for a host that can be updated, (None, reason) for one left out; work is
    ``{"firmware": [update steps], "bios": {name: value}}`` (both may be empty: compliant)."""
    if host_type is None:
        return None, "no host type of the baseline matches"
    if verdict.status == bl.UNKNOWN:
        why = "; ".join(verdict.reasons) or "compliance UNKNOWN"
        return None, f"compliance UNKNOWN, nothing is flashed on a host that cannot be read ({why})"
    steps: list[dict[str, Any]] = []
    for rule in host_type.firmware:
        findings = [
            f
            for f in verdict.findings
            if f.what == "firmware"
            and f.action in ("upgrade", "downgrade")
            and f.status != bl.PENDING
            and fnmatch.fnmatchcase(f.name, rule.pattern)
        ]
        if not findings:
            continue
        if any(f.action == "downgrade" for f in findings) and not allow_downgrade:
            names = ", ".join(f.name for f in findings if f.action == "downgrade")
            return None, f"{names} would be a downgrade to {rule.target} (allow_downgrade is off)"
        image = _image(images, rule.pattern)
        if image is None:
            return None, f"no image for {rule.pattern} {rule.target} in the rollout's images"
        steps.append({"component": rule.pattern, "version": rule.target, **image})
    bios = {
        f.name: f.wanted
        for f in verdict.findings
        if f.what == "bios" and f.status in (bl.DRIFT, bl.PENDING) and f.action == "set"
    }
    return {"firmware": steps, "bios": bios}, None


def plan(
    results: Sequence[Mapping[str, Any]],
    baseline: bl.Baseline,
    *,
    selected: Sequence[str],
    images: Mapping[str, Any],
    wave_size: int = 4,
    max_failure_rate: float = 0.0,
    canary: str | None = None,
    allow_downgrade: bool = False,
) -> dict[str, Any]:
    """The rollout: ``order`` (canary first, then the selected hosts in the order given, host
    type by host type in the order their first host was given), ``batches`` (wave sizes, for the
    play's ``serial``), ``waves`` (lists of hosts), ``work`` per host, ``skipped`` (host ->
    reason), ``compliant`` (nothing to do), ``types`` (type -> hosts in the rollout).

    ``results`` are discovery results (:func:`baseline.results_from_hostvars`, so each carries
    ``inventory_host``); the fleet is judged whole (the fleet rule), only ``selected`` hosts are
    planned."""
    _check_settings(wave_size, max_failure_rate)
    if not selected:
        raise RolloutError("no hosts selected: name the hosts to update (nothing is implied)")
    names = [str(r.get("inventory_host") or r.get("service_tag")) for r in results]
    unknown = sorted(set(selected) - set(names))
    if unknown:
        raise RolloutError(f"selected hosts not in the inventory: {', '.join(unknown)}")
    if canary is not None and canary not in selected:
        raise RolloutError(f"canary {canary!r} is not among the selected hosts")
    verdicts = bl.evaluate(results, baseline)
    work: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    compliant: list[str] = []
    by_type: dict[str, list[str]] = {}
    found = {
        name: (result, verdict)
        for name, result, verdict in zip(names, results, verdicts, strict=True)
    }
    for name in dict.fromkeys(selected):  # the operator's order, each host once
        result, verdict = found[name]
        host_type = baseline.type_for(result)
        todo, why = host_work(verdict, host_type, images, allow_downgrade=allow_downgrade)
        if todo is None:
            skipped[name] = why or "left out"
            continue
        if not todo["firmware"] and not todo["bios"]:
            compliant.append(name)
            continue
        work[name] = {**todo, "host_type": verdict.host_type, "status": verdict.status}
        by_type.setdefault(str(verdict.host_type), []).append(name)
    order: list[str] = []
    if canary is not None and canary in work:
        order.append(canary)
    elif canary is not None:
        why = skipped.get(canary) or ("compliant" if canary in compliant else "not planned")
        raise RolloutError(f"canary {canary!r} has nothing to roll out: {why}")
    for hosts in by_type.values():
        order.extend(h for h in hosts if h not in order)
    waves: list[list[str]] = []
    if order:
        waves.append(order[:1])  # the canary, alone
        rest = order[1:]
        # waves never straddle two host types: a type finishes before the next starts
        current: list[str] = []
        for host in rest:
            if current and (
                len(current) == wave_size
                or work[current[-1]]["host_type"] != work[host]["host_type"]
            ):
                waves.append(current)
                current = []
            current.append(host)
        if current:
            waves.append(current)
    return {
        "order": order,
        "canary": order[0] if order else None,
        "waves": waves,
        "batches": [len(w) for w in waves],
        "work": work,
        "skipped": skipped,
        "compliant": sorted(compliant),
        "types": by_type,
        "wave_size": wave_size,
        "max_failure_rate": max_failure_rate,
    }


def wave_of(rollout: Mapping[str, Any], host: str) -> int:
    for index, wave in enumerate(rollout["waves"]):
        if host in wave:
            return index
    raise RolloutError(f"{host} is in no wave of the rollout")


def half_updated(rollout: Mapping[str, Any], outcomes: Mapping[str, str]) -> dict[str, Any]:
    """Host types left with some hosts updated and others not: type -> {updated, not_updated}."""
    out: dict[str, Any] = {}
    for host_type, hosts in rollout["types"].items():
        done = [h for h in hosts if outcomes.get(h) == OK]
        rest = [h for h in hosts if outcomes.get(h) != OK]
        if done and rest:
            out[host_type] = {"updated": done, "not_updated": rest}
    return out


def wave_verdict(
    rollout: Mapping[str, Any], wave_hosts: Sequence[str], outcomes: Mapping[str, str]
) -> dict[str, Any]:
    """After a wave: its failure rate and whether the rollout stops, with the reason; when it
    stops, the host types left half-updated are named (``outcomes``: host -> ok | failed, for
    every host that ran so far; a host of the wave without an outcome counts as failed)."""
    hosts = list(wave_hosts)
    if not hosts:
        raise RolloutError("a wave without hosts")
    index = wave_of(rollout, hosts[0])
    failed = sorted(h for h in hosts if outcomes.get(h) != OK)
    rate = len(failed) / len(hosts)
    limit = float(rollout["max_failure_rate"])
    canary = index == 0
    stop = rate > limit or (canary and bool(failed))
    last = index == len(rollout["waves"]) - 1
    name = "canary" if canary else f"wave {index}"
    verdict: dict[str, Any] = {
        "wave": index,
        "name": name,
        "hosts": hosts,
        "failed": failed,
        "failure_rate": round(rate, 3),
        "stop": stop,
        "last": last,
    }
    if stop:
        halves = half_updated(rollout, outcomes)
        verdict["half_updated"] = halves
        left = [h for w in rollout["waves"][index + 1 :] for h in w]
        said = "; ".join(
            f"host type {t} is HALF-UPDATED: updated {', '.join(v['updated'])}; "
            f"not updated {', '.join(v['not_updated'])}"
            for t, v in halves.items()
        )
        verdict["reason"] = (
            f"rollout stopped after the {name}: {len(failed)}/{len(hosts)} failed "
            f"({rate:.0%} > {limit:.0%} allowed; {', '.join(failed)})"
            + (f"; not started: {', '.join(left)}" if left else "")
            + (f"; {said}" if said else "")
        )
    else:
        verdict["reason"] = (
            f"{name}: {len(failed)}/{len(hosts)} failed ({rate:.0%}, up to {limit:.0%} allowed); "
            + ("rollout complete" if last else "going on")
        )
    return verdict


def batches_for_serial(rollout: Mapping[str, Any]) -> list[int]:
    """The play's ``serial``: the canary, then each wave (never empty: Ansible needs one)."""
    return list(rollout["batches"]) or [1]


def failure_percentage(rollout: Mapping[str, Any]) -> int:
    """Ansible's ``max_fail_percentage`` as a second guard beside :func:`wave_verdict`."""
    return math.floor(float(rollout["max_failure_rate"]) * 100)


def _said(result: Mapping[str, Any] | None) -> str:
    if not isinstance(result, Mapping):
        return ""
    return str(result.get("msg") or "")


def host_outcome(
    flash: Mapping[str, Any] | None,
    bios: Mapping[str, Any] | None,
    activation: Mapping[str, Any] | None = None,
    verify: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One host's outcome from its module results (``None`` or ``skipped``: not run): ``ok``
    only when every step that ran succeeded; a flash whose image is only staged after the
    activation reset, or not verified at all, is ``failed`` with the reason; one left staged
    because no reset was allowed is ``staged`` ("staged, needs a reset"), never ``ok``."""
    steps = (("firmware", flash), ("bios", bios), ("activation", activation), ("verify", verify))
    for what, result in steps:
        if not isinstance(result, Mapping) or result.get("skipped"):
            continue
        if result.get("failed"):
            return {"status": FAILED, "reason": f"{what}: {_said(result) or 'failed'}"}
    if isinstance(verify, Mapping) and not verify.get("skipped"):
        late = [
            u["component"]
            for u in verify.get("updates") or ()
            if isinstance(u, Mapping) and u.get("verified") != "active"
        ]
        if late:
            return {
                "status": FAILED,
                "reason": f"verify: not running the new version after the reset: {', '.join(late)}",
            }
    ran_verify = isinstance(verify, Mapping) and not verify.get("skipped")
    if not ran_verify and needs_activation(flash):
        return {"status": STAGED, "reason": f"firmware: {_said(flash)}"}
    said = "; ".join(
        f"{what}: {_said(result)}"
        for what, result in steps
        if isinstance(result, Mapping) and not result.get("skipped") and _said(result)
    )
    return {"status": OK, "reason": said or "nothing to do"}


def needs_activation(flash: Mapping[str, Any] | None) -> bool:
    """Whether a flash left an image staged (it runs only after a reset)."""
    if not isinstance(flash, Mapping) or flash.get("skipped") or flash.get("failed"):
        return False
    return any(
        isinstance(u, Mapping)
        and u.get("status") in ("ok", "staged")
        and u.get("verified") == "staged"
        for u in flash.get("updates") or ()
    )


def outcomes_from_hostvars(
    rollout: Mapping[str, Any], hostvars: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """host -> ok or failed, for the rollout hosts that ran (``racksmith_firmware_outcome``)."""
    out: dict[str, str] = {}
    for host in rollout["order"]:
        variables = hostvars.get(host) or {}
        outcome = variables.get("racksmith_firmware_outcome") if host in hostvars else None
        if isinstance(outcome, Mapping) and outcome.get("status") in (OK, FAILED, STAGED):
            out[host] = str(outcome["status"])
    return out
