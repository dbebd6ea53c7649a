"""Every BMC clock of a rack checked (and corrected where asked) from one process.

Why: the discover phase used to run ``racksmith.core.redfish_clock`` once per server, delegated
to the controller: one Python interpreter started, racksmith and ``requests`` imported, one task
result, per BMC (issue 25: "``redfish_clock`` starts one Python per BMC"). Here one call reads
all of them, ``concurrency`` at a time in threads (each with its own client), and returns each
server's result exactly as the single-host module reports it (``msg``, ``skew_seconds``,
``skewed``, ``before``/``after``, ``diff``; or ``failed``, ``msg``, ``error_kind``), so the
playbook's per-server decision (:func:`racksmith.phases.discover.clock_problem`) and check mode
are unchanged. One server's failure (unreachable BMC, refused ``DateTime``, bad settings) is
that server's result, never the others'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from racksmith import credentials
from racksmith.optionspec import argument_spec
from racksmith.redfish import actions, options, targets
from racksmith.redfish.ansible_support import client_from_params
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import RedfishError
from racksmith.secrets import redact

#: BMCs read at once: each is a few small requests, mostly waiting on the BMC.
DEFAULT_CONCURRENCY = 32
#: Connection keys a server's entry may carry (the inventory's ``redfish_connection`` and the
#: other per-BMC options of the redfish_* modules). A literal password is not one of them:
#: credentials travel by reference (``username_env``/``password_env``/``credentials_file``).
CONNECTION_KEYS = frozenset(o.name for o in options.MODULE) - {"bmc", "password"}
_DEFAULTS = {k: v.get("default") for k, v in argument_spec(options.MODULE).items()}
_DIFF_KEYS = ("bmc_time", "skew_seconds")


class ClockInputError(ValueError):
    """The batch's input is wrong; the message names the server and the key."""


def clock_outcome(
    client: RedfishClient, *, max_skew: float, correct: bool, check_mode: bool
) -> actions.ActionResult:
    """One BMC's clock, as ``redfish_clock`` reports it: the action's result with the skew after
    it, whether that still exceeds ``max_skew``, and the diff check mode predicts."""
    result = actions.clock(client, max_skew=max_skew, correct=correct, check_mode=check_mode)
    skew = result.after["skew_seconds"]
    result.details.update({"skew_seconds": skew, "skewed": abs(skew) > max_skew})
    after = result.after
    if check_mode and result.changed:  # it would set the BMC to the controller's time
        after = {"bmc_time": result.before["controller_time"], "skew_seconds": 0.0}
    result.details["diff"] = {
        "before": {k: result.before[k] for k in _DIFF_KEYS if k in result.before},
        "after": {k: after[k] for k in _DIFF_KEYS if k in after},
    }
    return result


def host_params(
    name: str,
    bmc: Any,
    connection: Mapping[str, Any] | None,
    defaults: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The module parameters for one server: the options' defaults, the batch's own settings
    (``defaults``: the module's connection options, e.g. from ``module_defaults``), then its
    connection (``None`` and ``''`` values left out, as the playbook's module_defaults did),
    then its BMC."""
    if not isinstance(bmc, str) or not bmc.strip():
        raise ClockInputError(f"{name}: no BMC address (redfish_bmc) given")
    if connection is not None and not isinstance(connection, Mapping):
        raise ClockInputError(f"{name}: its connection settings must be a mapping")
    given = {k: v for k, v in (connection or {}).items() if v is not None and v != ""}
    unknown = sorted(set(given) - CONNECTION_KEYS)
    if unknown:
        hint = " (pass credentials by reference)" if "password" in unknown else ""
        raise ClockInputError(
            f"{name}: unknown connection setting(s) {', '.join(unknown)}{hint}; "
            f"known: {', '.join(sorted(CONNECTION_KEYS))}"
        )
    batch = {k: v for k, v in (defaults or {}).items() if v is not None and k != "bmc"}
    return {**_DEFAULTS, **batch, **given, "bmc": bmc}


def _one(
    name: str, params: dict[str, Any], max_skew: float, correct: bool, check_mode: bool
) -> dict[str, Any]:
    """One server's result; every failure is this server's, with its reason."""
    bmc = str(params.get("bmc"))
    try:
        client = client_from_params(params)
    except (ValueError, targets.TargetError, credentials.CredentialsError) as exc:
        return {"failed": True, "changed": False, "msg": redact(str(exc)), "bmc": bmc}
    try:
        with client:
            result = clock_outcome(
                client, max_skew=max_skew, correct=correct, check_mode=check_mode
            )
    except RedfishError as exc:
        return {
            "failed": True,
            "changed": False,
            "msg": exc.reason,
            "error_kind": exc.kind.value,
            "bmc": str(client.target),
        }
    except Exception as exc:  # a bug fails this server, named, not the whole rack
        return {
            "failed": True,
            "changed": False,
            "msg": redact(f"internal error: {type(exc).__name__}: {exc}"),
            "bmc": str(client.target),
        }
    out = {k: v for k, v in result.as_dict().items() if k != "message"}
    return {"failed": False, "msg": result.message, "bmc": str(client.target), **out}


def check_all(
    bmcs: Mapping[str, Any],
    connections: Mapping[str, Any] | None = None,
    *,
    max_skew: float = 5.0,
    correct: bool = False,
    check_mode: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    defaults: Mapping[str, Any] | None = None,
    one: Callable[..., dict[str, Any]] = _one,
) -> dict[str, dict[str, Any]]:
    """Every server's clock result, by inventory name (``bmcs``: name -> BMC address;
    ``connections``: name -> its connection settings). A server whose entry is wrong gets a
    failed result naming why; a connection for a server not in ``bmcs`` is refused outright."""
    if concurrency < 1:
        raise ClockInputError("concurrency must be at least 1")
    if max_skew < 0:
        raise ClockInputError("max_skew cannot be negative")
    connections = connections or {}
    stray = sorted(set(connections) - set(bmcs))
    if stray:
        raise ClockInputError(f"connection settings for servers without a BMC: {', '.join(stray)}")
    results: dict[str, dict[str, Any]] = {}
    jobs: dict[str, dict[str, Any]] = {}
    for name, bmc in bmcs.items():
        try:
            jobs[name] = host_params(name, bmc, connections.get(name), defaults)
        except ClockInputError as exc:
            results[name] = {"failed": True, "changed": False, "msg": str(exc), "bmc": str(bmc)}
    if jobs:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(jobs))) as pool:
            futures = {
                name: pool.submit(one, name, params, max_skew, correct, check_mode)
                for name, params in jobs.items()
            }
            results.update({name: fut.result() for name, fut in futures.items()})
    return {name: results[name] for name in bmcs}


def count(results: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """How the rack's clocks stand: within the skew, corrected (or, in check mode, would be),
    left skewed, failed."""
    out = {"within": 0, "corrected": 0, "skewed": 0, "failed": 0}
    for r in results.values():
        if r.get("failed"):
            out["failed"] += 1
        elif r.get("changed"):
            out["corrected"] += 1
        elif r.get("skewed"):
            out["skewed"] += 1
        else:
            out["within"] += 1
    return out
