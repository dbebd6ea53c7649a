"""BMC actions that change things: power, one-time PXE boot, the BMC clock.

Every action reads the current state first (so a repeat is a no-op and check mode can say what
would happen), acts, then reads back: a status code alone is not trusted, because iDRACs both
reject requests they apply (400 "depends on other attribute(s)" on a boot PATCH that took
effect) and accept requests they do not apply (PXE read back as ``UefiTarget``). Known quirks
are tolerated explicitly and reported as warnings:

- ``ResetType: On`` on a server that is on answers **409 IDRAC.x.PSU501**: that is "already
  on", not a failure;
- the boot override PATCH may answer 400 and still be applied; the read-back decides;
- reset types are checked against ``ResetType@Redfish.AllowableValues`` before posting, or
  against the action's ``@Redfish.ActionInfo`` where the BMC lists them only there (Supermicro,
  the AMI BMC of a DGX): one more GET, only when an action is about to be posted.

Vendor differences come from the host's profile (:mod:`racksmith.redfish.vendors`, chosen as
discovery chooses it, or named with ``vendor``): the boot-once payload (``BootSourceOverrideMode``
sent with the target on Supermicro and DGX) and, on a DGX, where the override is written: the
system's ``@Redfish.Settings`` object (``Systems/DGX/SD``), with the ETag read from it in
``If-Match``. That object holds the *pending* override the firmware applies at the next boot,
so the state before and the read-back come from it too, not from the system.

A BMC with several host systems (a multi-node chassis) is acted on only when ``system`` names
one of them: a guess could power off the wrong server. A DGX's ``HGX_Baseboard_0`` is not a
host (see :func:`vendors.partition_systems`), so a DGX needs no ``system``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from racksmith import pacing
from racksmith.redfish import parse, vendors
from racksmith.redfish.client import RedfishClient, Response
from racksmith.redfish.errors import ErrorKind, RedfishError

SERVICE_ROOT = "/redfish/v1"
SYSTEMS = "/redfish/v1/Systems"
MANAGERS = "/redfish/v1/Managers"
ALREADY_ON = "PSU501"

POWER_STATES = ("on", "off", "graceful-off", "cycle", "restart")


@dataclass(frozen=True)
class ActionResult:
    changed: bool
    before: Any
    after: Any
    message: str
    warnings: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "before": self.before,
            "after": self.after,
            "message": self.message,
            "warnings": list(self.warnings),
            **self.details,
        }


def _fail(client: RedfishClient, kind: ErrorKind, reason: str) -> RedfishError:
    return RedfishError(kind, reason, bmc=str(client.target))


def _pick(client: RedfishClient, systems: list[parse.Doc], wanted: str | None) -> parse.Doc:
    """The host system to act on: the one ``wanted`` names (``@odata.id`` or ``Id``), the only
    system, or the only host among several systems (a DGX's baseboard is not a host)."""
    if wanted:
        for doc in systems:
            if wanted in (doc.get("@odata.id"), doc.get("Id")):
                return doc
        ids = ", ".join(str(d.get("@odata.id")) for d in systems)
        raise _fail(client, ErrorKind.INCOMPLETE, f"no system {wanted!r} (systems: {ids})")
    if len(systems) == 1:
        return systems[0]
    groups = vendors.partition_systems(systems)
    if len(groups) == 1:
        return groups[0].host
    if not groups:
        ids = ", ".join(str(d.get("@odata.id")) for d in systems)
        raise _fail(client, ErrorKind.INCOMPLETE, f"no host among the systems ({ids})")
    ids = ", ".join(str(g.host.get("@odata.id")) for g in groups)
    raise _fail(
        client,
        ErrorKind.UNSUPPORTED,
        f"{len(groups)} hosts share this BMC ({ids}); name one with system "
        "(the inventory's redfish_system_uri)",
    )


def locate(
    client: RedfishClient, *, vendor: str = vendors.AUTO, system_id: str | None = None
) -> tuple[parse.SystemInfo, vendors.VendorProfile]:
    """The ComputerSystem to act on and the vendor profile that says how (``vendor`` overrides
    the choice; the service root is read only when the Manufacturer does not decide)."""
    systems = client.get_collection(SYSTEMS)
    if not systems:
        raise _fail(client, ErrorKind.INCOMPLETE, "Systems collection is empty")
    doc = _pick(client, systems, system_id)
    root = None
    if vendor == vendors.AUTO and not vendors.manufacturer_decides(doc):
        root = client.get(SERVICE_ROOT)
    profile = vendors.choose(doc, root, vendor)
    return parse.parse_system(doc, profile.service_tag_fields), profile


def system(
    client: RedfishClient, *, vendor: str = vendors.AUTO, system_id: str | None = None
) -> parse.SystemInfo:
    """The ComputerSystem behind this BMC (see :func:`locate`)."""
    return locate(client, vendor=vendor, system_id=system_id)[0]


def _wait_for(client: RedfishClient, uri: str, goal: str, wait: float, poll: float) -> str:
    """Poll the system's ``PowerState`` until it is ``goal`` or ``wait`` runs out; only that
    property is read, so a BMC whose identity fields are sparse can still be waited on."""
    end = time.monotonic() + wait
    while True:
        state = client.get(uri).get("PowerState")
        current = state if isinstance(state, str) and state else "Unknown"
        if current == goal or time.monotonic() >= end:
            return current
        time.sleep(min(poll, max(0.0, end - time.monotonic())))


# -- power ---------------------------------------------------------------------------------------


def allowed_reset_types(client: RedfishClient, info: parse.SystemInfo) -> tuple[str, ...]:
    """The reset types the BMC allows: inline, else from the action's ``@Redfish.ActionInfo``;
    empty when it advertises neither. An ActionInfo that cannot be read or names no
    ``ResetType`` is an error (fail closed), not "anything goes"."""
    if info.reset_types or not info.reset_info_uri:
        return info.reset_types
    values = parse.action_parameter_values(client.get(info.reset_info_uri), "ResetType")
    if not values:
        raise _fail(
            client,
            ErrorKind.INCOMPLETE,
            f"{info.reset_info_uri} lists no allowable ResetType values",
        )
    return values


def _reset_type(allowed: tuple[str, ...], state: str, client: RedfishClient) -> str:
    preferences = {
        "on": ("On",),
        "off": ("ForceOff",),
        "graceful-off": ("GracefulShutdown",),
        "cycle": ("PowerCycle", "ForceRestart"),
        "restart": ("GracefulRestart", "ForceRestart"),
    }[state]
    if not allowed:  # nothing advertised: use the standard name
        return preferences[0]
    for reset_type in preferences:
        if reset_type in allowed:
            return reset_type
    raise _fail(
        client,
        ErrorKind.UNSUPPORTED,
        f"power {state}: BMC allows only {', '.join(allowed)} (wanted {' or '.join(preferences)})",
    )


def power(
    client: RedfishClient,
    state: str,
    *,
    check_mode: bool = False,
    wait: float = 120.0,
    poll: float = 2.0,
    vendor: str = vendors.AUTO,
    system_id: str | None = None,
    pace: pacing.Pace | None = None,
) -> ActionResult:
    """Bring the server to ``state`` and read the result back within ``wait`` seconds.

    Every reset this sends first takes its slot in the fleet's power pacing
    (:mod:`racksmith.pacing`; ``pace`` overrides the environment's setting): a rack restart is
    spread out, never one burst at the fabric manager and the BMC network."""
    if state not in POWER_STATES:
        raise ValueError(f"power state must be one of {', '.join(POWER_STATES)}")
    info = system(client, vendor=vendor, system_id=system_id)
    before = info.power_state or "Unknown"
    is_on = before in ("On", "PoweringOn")
    if (state == "on" and is_on) or (
        state in ("off", "graceful-off") and before in ("Off", "PoweringOff")
    ):
        return ActionResult(False, before, before, f"already {before}")
    if state == "cycle" and not is_on:
        state_to_post = "on"  # cycling a server that is off means switching it on
    else:
        state_to_post = state
    reset_type = _reset_type(allowed_reset_types(client, info), state_to_post, client)
    if check_mode:
        return ActionResult(
            True,
            before,
            before,
            f"would post ResetType {reset_type}",
            details={"reset_type": reset_type},
        )
    if not info.reset_target:
        raise _fail(
            client, ErrorKind.UNSUPPORTED, "system advertises no #ComputerSystem.Reset action"
        )
    waited = paced(client, f"ResetType {reset_type}", pace)
    response = client.post(info.reset_target, {"ResetType": reset_type})
    warnings: list[str] = []
    if response.status == 409 and any(ALREADY_ON in i for i in response.message_ids()):
        warnings.append("BMC answered 409 PSU501 (server already on)")
    elif response.status not in (200, 202, 204):
        raise _fail(
            client,
            ErrorKind.HTTP,
            f"ResetType {reset_type}: HTTP {response.status} {response.message()}",
        )
    goal = "Off" if state in ("off", "graceful-off") else "On"
    after = _wait_for(client, info.uri, goal, wait, poll)
    if after != goal:
        raise _fail(
            client,
            ErrorKind.TIMEOUT,
            f"ResetType {reset_type} posted, but PowerState is {after} after {wait:g}s",
        )
    changed = not warnings  # a PSU501 means the server was on all along
    return ActionResult(
        changed,
        before,
        after,
        f"ResetType {reset_type}: {before} -> {after}",
        tuple(warnings),
        {"reset_type": reset_type, "paced_seconds": round(waited, 1)},
    )


def paced(client: RedfishClient, what: str, pace: pacing.Pace | None = None) -> float:
    """Wait for this power action's slot in the fleet's pacing; a wait longer than what is left
    of the per-BMC deadline is refused (``timeout``) before anything is sent."""
    try:
        chosen = pace or pacing.from_environment()
        remaining = client.deadline.remaining()
        budget = remaining if remaining != float("inf") else None
        return pacing.wait_turn(chosen, f"{what} on {client.target}", budget=budget)
    except pacing.PacingTimeout as exc:
        raise _fail(client, ErrorKind.TIMEOUT, str(exc)) from None
    except pacing.PacingError as exc:  # a wrong setting: said before any power action
        raise _fail(client, ErrorKind.UNSUPPORTED, str(exc)) from None


# -- one-time boot


def _override(boot: parse.BootOverride) -> dict[str, str | None]:
    return {"enabled": boot.enabled, "target": boot.target, "mode": boot.mode}


def _etag(doc: parse.Doc) -> str | None:
    value = doc.get("@odata.etag")
    return value if isinstance(value, str) and value else None


def boot_once(
    client: RedfishClient,
    target: str = "Pxe",
    *,
    mode: str | None = None,
    check_mode: bool = False,
    vendor: str = vendors.AUTO,
    system_id: str | None = None,
) -> ActionResult:
    """Set a one-time boot override (next boot only) the way the vendor wants it, read it back."""
    info, profile = locate(client, vendor=vendor, system_id=system_id)
    quirks = profile.boot
    # Where the override is written and read: the system, or its settings object (DGX ``SD``),
    # which holds the pending override and (only there) the allowable values.
    uri = info.uri
    current = None
    if quirks.settings_path:
        uri = info.settings_uri or quirks.patch_path(info.uri)
        current = client.get(uri)
    boot = parse.parse_boot(current) if current is not None else info.boot
    before = _override(boot)
    if boot.enabled == "Once" and boot.target == target and (mode is None or boot.mode == mode):
        return ActionResult(False, before, before, f"next boot already set once to {target}")
    allowed = boot.allowed_targets or info.boot.allowed_targets
    if allowed and target not in allowed:
        raise _fail(
            client,
            ErrorKind.UNSUPPORTED,
            f"boot target {target!r} not offered (BMC allows {', '.join(allowed)})",
        )
    payload = quirks.payload(target)
    if mode:
        payload["Boot"]["BootSourceOverrideMode"] = mode
    where = f" at {uri}" if uri != info.uri else ""
    if check_mode:
        return ActionResult(
            True,
            before,
            before,
            f"would set next boot once to {target}{where}",
            details={"payload": payload},
        )
    warnings: list[str] = []
    response = _patch_boot(client, uri, payload, quirks, current, warnings)
    if response.status == 400:
        # Known iDRAC behaviour: 400 although applied; the read-back below decides.
        warnings.append(f"BMC answered 400 ({response.message()}); checked by reading back")
    elif response.status not in (200, 202, 204):
        raise _fail(
            client,
            ErrorKind.HTTP,
            f"boot override PATCH {uri}: HTTP {response.status} {response.message()}",
        )
    after_boot = parse.parse_boot(client.get(uri))
    after = _override(after_boot)
    applied = after_boot.enabled == "Once" and (
        after_boot.target == target or (target == "Pxe" and after_boot.target == "UefiTarget")
    )
    if not applied:
        raise _fail(
            client,
            ErrorKind.HTTP,
            f"boot override not applied: {uri} reads back {after_boot.enabled}/{after_boot.target}",
        )
    if after_boot.target != target:
        warnings.append(f"{target} reads back as {after_boot.target} (known iDRAC UEFI behaviour)")
    pending = " (pending in the settings object until the next boot)" if where else ""
    return ActionResult(
        True, before, after, f"next boot once to {after_boot.target}{pending}", tuple(warnings)
    )


def _patch_boot(
    client: RedfishClient,
    uri: str,
    payload: dict[str, Any],
    quirks: vendors.BootQuirks,
    current: parse.Doc | None,
    warnings: list[str],
) -> Response:
    """PATCH the override; with ``If-Match`` where the vendor requires it. A 412 means the
    document changed between our read and our write: read the new ETag and try once more."""
    if not quirks.if_match:
        return client.patch(uri, payload)

    def attempt(doc: parse.Doc) -> Response:
        etag = _etag(doc)
        if etag is None:
            warnings.append(f"{uri} carries no ETag; sent If-Match: *")
        return client.patch(uri, payload, headers={"If-Match": etag or "*"})

    response = attempt(current if current is not None else client.get(uri))
    if response.status == 412:
        response = attempt(client.get(uri))
    return response


# -- clock


@dataclass(frozen=True)
class ClockReading:
    manager_uri: str
    bmc_time: str
    controller_time: str
    skew_seconds: float  # BMC minus controller; DateTime has 1 s resolution

    def as_dict(self) -> dict[str, Any]:
        return {
            "bmc_time": self.bmc_time,
            "controller_time": self.controller_time,
            "skew_seconds": round(self.skew_seconds, 1),
        }


def _manager_uri(client: RedfishClient) -> str:
    managers = client.get_collection(MANAGERS)
    if not managers:
        raise _fail(client, ErrorKind.INCOMPLETE, "Managers collection is empty")
    return str(managers[0]["@odata.id"])


def read_clock(client: RedfishClient, manager_uri: str | None = None) -> ClockReading:
    uri = manager_uri or _manager_uri(client)
    sent = time.time()
    manager = parse.parse_manager(client.get(uri))
    received = time.time()
    if not manager.datetime:
        raise _fail(client, ErrorKind.INCOMPLETE, f"{uri} reports no DateTime")
    bmc = parse.parse_datetime(manager.datetime)
    local = (sent + received) / 2
    return ClockReading(
        manager_uri=uri,
        bmc_time=bmc.isoformat(),
        controller_time=datetime.fromtimestamp(local, tz=timezone.utc).isoformat(
            timespec="seconds"
        ),
        skew_seconds=bmc.timestamp() - local,
    )


def clock(
    client: RedfishClient, *, max_skew: float = 5.0, correct: bool = False, check_mode: bool = False
) -> ActionResult:
    """Report the BMC's clock skew; with ``correct``, set its clock when the skew is too large."""
    reading = read_clock(client)
    before = reading.as_dict()
    if abs(reading.skew_seconds) <= max_skew:
        return ActionResult(
            False, before, before, f"skew {reading.skew_seconds:+.0f}s within {max_skew:g}s"
        )
    if not correct:
        return ActionResult(
            False,
            before,
            before,
            f"skew {reading.skew_seconds:+.0f}s exceeds {max_skew:g}s (not corrected)",
            details={"skewed": True},
        )
    if check_mode:
        return ActionResult(
            True, before, before, f"would set the BMC clock (skew {reading.skew_seconds:+.0f}s)"
        )
    offset = datetime.fromisoformat(reading.bmc_time).utcoffset() or timedelta(0)
    now = datetime.now(timezone(offset)).isoformat(timespec="seconds")
    response = client.patch(reading.manager_uri, {"DateTime": now})
    if response.status in (400, 405, 501):
        raise _fail(
            client,
            ErrorKind.UNSUPPORTED,
            f"BMC refused to set DateTime (HTTP {response.status} {response.message()}); "
            "configure NTP on the BMC instead",
        )
    if response.status not in (200, 202, 204):
        raise _fail(
            client, ErrorKind.HTTP, f"DateTime PATCH: HTTP {response.status} {response.message()}"
        )
    after = read_clock(client, reading.manager_uri)
    if abs(after.skew_seconds) > max_skew:
        raise _fail(
            client, ErrorKind.HTTP, f"DateTime set, but skew still {after.skew_seconds:+.0f}s"
        )
    return ActionResult(
        True,
        before,
        after.as_dict(),
        f"clock corrected: skew {reading.skew_seconds:+.0f}s -> {after.skew_seconds:+.0f}s",
    )
