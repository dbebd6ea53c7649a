"""Apply BIOS attributes through the ``@Redfish.Settings`` object, then verify every one.

Why each step (issue 21, item 5):

- **Diff against current *and* pending values.** A BIOS settings object can already hold a
  value waiting for the next reboot. Diffing only against current values misses a stale pending
  value that would undo a right setting at the next reboot, and re-sending a value that is
  already pending makes iDRAC refuse the PATCH (a second BIOS job: ``SYS011``). So an attribute
  is *ok* (current right, nothing pending), *pending* (the wanted value waits: nothing to send),
  or *to set* (wrong, or right now but a different value is pending).
- **PATCH the SettingsObject** (Dell ``Bios/Settings``, Supermicro and DGX ``Bios/SD``), never
  the ``Bios`` resource, with ``If-Match`` carrying the object's ETag where it has one (one
  re-read and retry on 412; AMI BMCs answer 428 without it) and ``@Redfish.SettingsApplyTime``
  ``OnReset`` where the BMC lists it in ``SupportedApplyTimes``: nothing changes until a reset
  we choose. Values the BMC's own attribute registry rejects are refused before anything is
  sent.
- **Reboot only when asked** (``reboot``), through :func:`actions.power`, so the reset takes its
  slot in the fleet's power pacing; a host that is off is powered on instead.
- **Verify every attribute.** Without a reboot: every value sent must now read back as pending
  (or current). After a reboot: every wanted value must be current within ``wait``; those that
  are not are named with what they read, and the action fails. A status code alone is never
  trusted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from racksmith import pacing
from racksmith.redfish import actions, baseline, discover, parse, vendors
from racksmith.redfish.actions import ActionResult
from racksmith.redfish.client import RedfishClient, Response
from racksmith.redfish.errors import ErrorKind, RedfishError

APPLY_TIME = "OnReset"
#: iDRAC's answer to a second BIOS configuration while one job is pending
JOB_PENDING_IDS = ("SYS011", "JobAlreadyExists", "SYS403")


@dataclass(frozen=True)
class BiosPlan:
    """What applying ``wanted`` means for one host: pure, from the BIOS facts discovery reads
    (:class:`parse.BiosSettings` ``public()``)."""

    to_set: dict[str, Any]  # name -> wanted value to PATCH
    pending: dict[str, Any]  # name -> wanted value already pending (needs only a reset)
    ok: tuple[str, ...]  # right now, nothing pending
    stale: dict[str, Any]  # name -> a pending value that differs from the wanted one
    unknown: tuple[str, ...]  # names the BIOS does not report
    current: dict[str, Any]

    @property
    def needs_reset(self) -> bool:
        return bool(self.to_set or self.pending)

    def public(self) -> dict[str, Any]:
        return {
            "to_set": dict(self.to_set),
            "pending": dict(self.pending),
            "ok": list(self.ok),
            "stale_pending": dict(self.stale),
            "unknown": list(self.unknown),
        }


def _same(a: Any, b: Any) -> bool:
    return baseline._same(a, b)  # one notion of "equal value" with the compliance verdict


def plan(wanted: Mapping[str, Any], bios: Mapping[str, Any]) -> BiosPlan:
    """Diff ``wanted`` against the BIOS's current and pending values."""
    current = bios.get("current") or {}
    waiting = bios.get("pending") or {}
    to_set: dict[str, Any] = {}
    pending: dict[str, Any] = {}
    stale: dict[str, Any] = {}
    ok: list[str] = []
    unknown: list[str] = []
    for name, value in wanted.items():
        if name not in current:
            unknown.append(name)
            continue
        if name in waiting and not _same(waiting[name], value):
            stale[name] = waiting[name]
            to_set[name] = value  # our PATCH replaces the stale pending value
        elif name in waiting:
            pending[name] = value
        elif _same(current[name], value):
            ok.append(name)
        else:
            to_set[name] = value
    return BiosPlan(to_set, pending, tuple(ok), stale, tuple(unknown), dict(current))


def _fail(client: RedfishClient, kind: ErrorKind, reason: str) -> RedfishError:
    return RedfishError(kind, reason, bmc=str(client.target))


def read_bios(client: RedfishClient, system_uri: str) -> parse.BiosSettings:
    """The host's BIOS: current, pending and registry, read as discovery reads them."""
    notes: list[str] = []
    settings = discover._bios(client, client.get(system_uri), notes)
    if settings is None:
        raise _fail(client, ErrorKind.UNSUPPORTED, f"no readable BIOS settings: {'; '.join(notes)}")
    if not settings.pending_known:
        raise _fail(
            client,
            ErrorKind.INCOMPLETE,
            f"the pending BIOS values cannot be read ({'; '.join(settings.notes)}); "
            "refusing to write over values nobody can see",
        )
    return settings


def _etag(response: Response, doc: Mapping[str, Any]) -> str | None:
    value = response.headers.get("ETag") or doc.get("@odata.etag")
    return value if isinstance(value, str) and value else None


def _patch(client: RedfishClient, uri: str, body: dict[str, Any], warnings: list[str]) -> Response:
    """PATCH the settings object with ``If-Match`` (its ETag); re-read once after a 412 or 428."""

    def attempt() -> Response:
        read = client.get_response(uri)
        doc = read.body if read.status == 200 and isinstance(read.body, dict) else {}
        etag = _etag(read, doc)
        headers = {"If-Match": etag} if etag else None
        return client.patch(uri, body, headers=headers)

    response = attempt()
    if response.status in (412, 428):
        warnings.append(f"{uri} answered {response.status}; read its ETag again and retried once")
        response = attempt()
    return response


def _job(response: Response) -> str | None:
    location = response.headers.get("Location")
    return location if isinstance(location, str) and location else None


def _power_state(client: RedfishClient, system_uri: str) -> str:
    state = client.get(system_uri).get("PowerState")
    return state if isinstance(state, str) else "Unknown"


def apply(
    client: RedfishClient,
    wanted: Mapping[str, Any],
    *,
    check_mode: bool = True,
    reboot: bool = False,
    wait: float = 600.0,
    poll: float = 5.0,
    vendor: str = vendors.AUTO,
    system_id: str | None = None,
    pace: pacing.Pace | None = None,
) -> ActionResult:
    """Make the host's BIOS carry ``wanted``; see the module docstring for the steps. Check
    mode (the default) reads and says what it would do."""
    if not wanted:
        raise ValueError("no BIOS attributes to apply")
    info, _profile = actions.locate(client, vendor=vendor, system_id=system_id)
    bios = read_bios(client, info.uri)
    facts = bios.public()
    unread = [n for n in bios.notes if "registry" in n and "unreadable" in n]
    if bios.registry is None and unread:
        raise _fail(
            client,
            ErrorKind.INCOMPLETE,
            f"{'; '.join(unread)}: refusing to write values the BMC's own registry cannot check",
        )
    if bios.registry is not None:
        problems = baseline.registry_problems(wanted, bios.registry)
        if problems:
            listed = "; ".join(f"{k}: {v}" for k, v in sorted(problems.items()))
            raise _fail(
                client, ErrorKind.UNSUPPORTED, f"refused by the attribute registry: {listed}"
            )
    steps = plan(wanted, facts)
    if steps.unknown:
        raise _fail(
            client,
            ErrorKind.INCOMPLETE,
            f"the BIOS reports no attribute {', '.join(steps.unknown)}",
        )
    before = {name: steps.current.get(name) for name in wanted}
    details: dict[str, Any] = {"plan": steps.public(), "settings_uri": bios.settings_uri}
    if not steps.needs_reset:
        return ActionResult(False, before, before, "every attribute already set", (), details)
    settings_uri = bios.settings_uri
    if steps.to_set and not settings_uri:
        raise _fail(
            client,
            ErrorKind.UNSUPPORTED,
            f"{bios.uri} has no @Redfish.Settings object; this BMC takes no pending BIOS values",
        )
    on_reset = APPLY_TIME in bios.apply_times
    said = []
    if steps.to_set:
        said.append(
            f"PATCH {settings_uri} with {', '.join(f'{k}={v}' for k, v in steps.to_set.items())}"
            + (f" (apply {APPLY_TIME})" if on_reset else "")
        )
    if steps.pending:
        said.append(f"already pending: {', '.join(steps.pending)}")
    said.append("reboot, then verify" if reboot else "no reboot: values stay pending")
    if check_mode:
        return ActionResult(True, before, before, "would " + "; ".join(said), (), details)

    warnings: list[str] = []
    if steps.to_set:
        body: dict[str, Any] = {"Attributes": dict(steps.to_set)}
        if on_reset:
            body["@Redfish.SettingsApplyTime"] = {"ApplyTime": APPLY_TIME}
        assert settings_uri is not None
        response = _patch(client, settings_uri, body, warnings)
        if response.status not in (200, 202, 204):
            ids = response.message_ids()
            if any(marker in i for i in ids for marker in JOB_PENDING_IDS):
                raise _fail(
                    client,
                    ErrorKind.HTTP,
                    f"the BMC already has a BIOS configuration job pending ({', '.join(ids)}: "
                    f"{response.message()}); nothing sent again; let that job finish (reboot) "
                    "or clear it first",
                )
            raise _fail(
                client,
                ErrorKind.HTTP,
                f"PATCH {settings_uri}: HTTP {response.status} {response.message()}",
            )
        if _job(response):
            details["job"] = _job(response)
        # every value sent must now read back as pending (or already current)
        after_patch = plan(wanted, read_bios(client, info.uri).public())
        lost = sorted(set(after_patch.to_set))
        if lost:
            raise _fail(
                client,
                ErrorKind.INCOMPLETE,
                f"PATCH accepted but not pending: {', '.join(lost)} (read back "
                + ", ".join(f"{k}={after_patch.current.get(k)}" for k in lost)
                + ")",
            )
    if not reboot:
        names = sorted({*steps.to_set, *steps.pending})
        details["verified"] = "pending"
        return ActionResult(
            True,
            before,
            before,
            f"pending until the next reset: {', '.join(names)}",
            tuple(warnings),
            details,
        )
    state = _power_state(client, info.uri)
    goal = "restart" if state in ("On", "PoweringOn") else "on"
    deadline = time.monotonic() + wait
    actions.power(client, goal, wait=wait, poll=poll, vendor=vendor, system_id=system_id, pace=pace)
    details["rebooted"] = goal
    while True:
        final = read_bios(client, info.uri)
        check = plan(wanted, final.public())
        missing = sorted({*check.to_set, *check.pending})
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))
    after = {name: final.current.get(name) for name in wanted}
    if missing:
        details["not_applied"] = {
            k: {"current": after.get(k), "wanted": wanted[k]} for k in missing
        }
        raise _fail(
            client,
            ErrorKind.INCOMPLETE,
            "not applied after the reboot: "
            + ", ".join(f"{k} reads {after.get(k)!r}, wanted {wanted[k]!r}" for k in missing),
        )
    details["verified"] = "current"
    return ActionResult(
        True,
        before,
        after,
        f"applied and verified after {goal}: {', '.join(sorted({*steps.to_set, *steps.pending}))}",
        tuple(warnings),
        details,
    )
