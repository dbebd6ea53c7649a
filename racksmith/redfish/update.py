"""Flash firmware through the BMC's ``UpdateService``, follow the task, verify the version.

Rules (issue 21, item 5), and why:

- **How the image gets there**: a multipart push to ``MultipartHttpPushUri`` where the BMC
  offers it and a local image file is given (the image never has to be served anywhere), else
  ``SimpleUpdate`` with ``ImageURI`` naming the site's own image server. Which one is used is
  said before anything is sent; a BMC offering neither is refused.
- **Follow the task monitor** (the ``Location`` of the 202): a 202 means running (its
  ``Retry-After`` sets the next poll), a 200 carries ``TaskState`` and ``Messages``
  (``Completed`` with a ``TaskStatus`` other than ``Critical`` is success; ``Exception``,
  ``Killed``, ``Cancelled`` are failures with the BMC's messages). A BMC that **resets
  mid-update** (connections refused or reset, then every session gone) is waited for and logged
  into again; a **task that disappears** (404) is not taken for success or failure: the
  firmware inventory decides.
- **Deadlines**: each component has its own (``timeout``: push, task and verification), and the
  whole host its global one (the client's per-BMC deadline); the first to run out ends the
  wait with a reason that names it.
- **Verify the new version is reported** by the firmware inventory: as the running image
  (``verified: active``) or, for components that activate at the next reboot or AC cycle, as a
  staged image (``verified: staged``, with the activation still owed). Anything else is a
  failure, even after a "Completed" task.
- **Never retry a flash by itself**: a failed or unverifiable flash is reported and the rest of
  the host's updates are not attempted; deciding to flash again is an operator's call.
- **A staged image is not an update yet** (iDRAC BIOS and CPLD packages, Lenovo ``-Pending``,
  Supermicro ``Staging_``: they run only after the next reset). With ``reset`` allowed the
  server is reset once (power-on when it is off; the reset takes its slot in the fleet's power
  pacing), and every staged component must then report its new version as the *running* image
  within ``reset_wait``, else the update failed. Without ``reset`` nothing is reset: the step's
  status is ``staged`` (not ``ok``) and the result says "staged, needs a reset", never success.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from racksmith import pacing
from racksmith.redfish import actions, parse
from racksmith.redfish import firmware as fw
from racksmith.redfish.actions import ActionResult
from racksmith.redfish.client import RedfishClient, Response
from racksmith.redfish.errors import ErrorKind, RedfishError

log = logging.getLogger(__name__)

UPDATE_SERVICE = "/redfish/v1/UpdateService"
FIRMWARE_INVENTORY = f"{UPDATE_SERVICE}/FirmwareInventory"
TERMINAL_FAILED = ("Exception", "Killed", "Cancelled")
DEFAULT_TIMEOUT = 1800.0  # per component: NVIDIA HGX bundles take 20+ minutes
MAX_POLL = 60.0


@dataclass(frozen=True)
class UpdateStep:
    """One flash: which component (an identity glob as in baselines), the version it must
    report after, and the image (a local file for a push, or a URL on the site's server)."""

    component: str
    version: str
    image: str | None = None  # local file: multipart push
    image_uri: str | None = None  # site URL: SimpleUpdate
    timeout: float = DEFAULT_TIMEOUT
    targets: tuple[str, ...] = ()  # UpdateService Targets (URIs), when the BMC needs them

    def __post_init__(self) -> None:
        if not self.image and not self.image_uri:
            raise ValueError(f"update of {self.component}: give image (a file) or image_uri")
        if not (self.timeout > 0):
            raise ValueError(f"update of {self.component}: timeout must be positive")

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> UpdateStep:
        unknown = set(entry) - {"component", "version", "image", "image_uri", "timeout", "targets"}
        if unknown:
            raise ValueError(f"update entry {entry.get('component')!r}: unknown {sorted(unknown)}")
        for key in ("component", "version"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise ValueError(f"update entry {entry!r}: {key} is required")
        return cls(
            component=entry["component"],
            version=entry["version"],
            image=entry.get("image") or None,
            image_uri=entry.get("image_uri") or None,
            timeout=float(entry.get("timeout") or DEFAULT_TIMEOUT),
            targets=tuple(entry.get("targets") or ()),
        )


@dataclass(frozen=True)
class Service:
    """What the BMC's ``UpdateService`` offers."""

    multipart_uri: str | None
    simple_update: str | None
    protocols: tuple[str, ...]

    @classmethod
    def parse(cls, doc: parse.Doc) -> Service:
        actions = doc.get("Actions") if isinstance(doc.get("Actions"), dict) else {}
        simple = actions.get("#UpdateService.SimpleUpdate") if actions else None
        target = simple.get("target") if isinstance(simple, dict) else None
        protocols = simple.get("TransferProtocol@Redfish.AllowableValues") if simple else None
        multipart = doc.get("MultipartHttpPushUri")
        return cls(
            multipart_uri=multipart if isinstance(multipart, str) and multipart else None,
            simple_update=target if isinstance(target, str) and target else None,
            protocols=tuple(str(p) for p in protocols) if isinstance(protocols, list) else (),
        )

    def method_for(self, step: UpdateStep) -> str:
        """``multipart`` or ``simple``; a BMC that offers neither for this step is an error."""
        if step.image and self.multipart_uri:
            return "multipart"
        if step.image_uri and self.simple_update:
            return "simple"
        offered = [
            n
            for n, ok in (
                ("multipart push", self.multipart_uri),
                ("SimpleUpdate", self.simple_update),
            )
            if ok
        ]
        given = "a local image" if step.image else "an image URL"
        raise ValueError(
            f"update of {step.component}: given {given}, but the BMC offers "
            f"{' and '.join(offered) or 'no update method'}"
            + ("; give image_uri (a site URL)" if self.simple_update and step.image else "")
            + ("; give image (a local file)" if self.multipart_uri and step.image_uri else "")
        )


@dataclass
class StepOutcome:
    component: str
    wanted: str
    before: str | None
    status: str  # ok, staged (needs a reset), already, would, failed, not-attempted
    method: str | None = None
    verified: str | None = None  # active, staged
    after: str | None = None
    task: str | None = None
    image_sha256: str | None = None  # of a pushed image: which bytes went to the BMC
    messages: list[str] = field(default_factory=list)
    reason: str | None = None

    def public(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _fail(client: RedfishClient, kind: ErrorKind, reason: str) -> RedfishError:
    return RedfishError(kind, reason, bmc=str(client.target))


def read_inventory(client: RedfishClient) -> list[fw.FirmwareItem]:
    return parse.firmware_inventory(client.get_collection(FIRMWARE_INVENTORY))


def _matching(items: Sequence[fw.FirmwareItem], pattern: str, role: str) -> list[fw.FirmwareItem]:
    return [i for i in items if i.role == role and fnmatch.fnmatchcase(i.component, pattern)]


def versions(items: Sequence[fw.FirmwareItem], pattern: str) -> tuple[list[str], list[str]]:
    """(running versions, staged versions) of the components matching ``pattern``."""
    active = list(fw.active(_matching(items, pattern, "active")).values())
    staged = _matching(items, pattern, "staged")
    return [str(i.version) for i in active], [str(i.version) for i in staged if i.version]


def _verify(items: Sequence[fw.FirmwareItem], step: UpdateStep) -> tuple[str | None, str | None]:
    """('active'|'staged'|None, what the inventory reports) for ``step``'s version."""
    running, staged = versions(items, step.component)
    if running and all(fw.compare(v, step.version) == 0 for v in running):
        return "active", step.version
    if staged and any(fw.compare(v, step.version) == 0 for v in staged):
        return "staged", step.version
    return None, ", ".join(running) or None


def _messages(doc: Any) -> list[str]:
    out = []
    if isinstance(doc, dict):
        for message in doc.get("Messages") or []:
            if isinstance(message, dict) and message.get("Message"):
                mid = message.get("MessageId")
                out.append(f"{mid}: {message['Message']}" if mid else str(message["Message"]))
    return out


def _retry_after(response: Response, default: float) -> float:
    value = str(response.headers.get("Retry-After") or "").strip()
    return min(float(value), MAX_POLL) if value.isdigit() else default


class _Clock:
    """The smaller of the component's own deadline and the host's global one, named."""

    def __init__(self, client: RedfishClient, step: UpdateStep, now: Callable[[], float]) -> None:
        self.client, self.step, self.now = client, step, now
        self.end = now() + step.timeout

    def left(self) -> tuple[float, str]:
        own = self.end - self.now()
        host = self.client.deadline.remaining() - 5.0  # keep a little for verifying and logout
        if host < own:
            return host, f"the host's update deadline of {self.client.deadline.seconds:g}s"
        return own, f"the component deadline of {self.step.timeout:g}s"


def _send(client: RedfishClient, service: Service, step: UpdateStep, method: str) -> Response:
    if method == "multipart":
        assert step.image and service.multipart_uri
        data = Path(step.image).read_bytes()
        parameters = {"Targets": list(step.targets), "@Redfish.OperationApplyTime": "Immediate"}
        files = {
            "UpdateParameters": (None, json.dumps(parameters), "application/json"),
            "UpdateFile": (Path(step.image).name, data, "application/octet-stream"),
        }
        return client.post_multipart(service.multipart_uri, files)
    assert step.image_uri and service.simple_update
    body: dict[str, Any] = {"ImageURI": step.image_uri}
    if step.targets:
        body["Targets"] = list(step.targets)
    scheme = step.image_uri.split(":", 1)[0].upper()
    if scheme in service.protocols:
        body["TransferProtocol"] = scheme
    return client.post(service.simple_update, body)


def _task_uri(response: Response) -> str | None:
    location = response.headers.get("Location")
    if isinstance(location, str) and location:
        return location
    if isinstance(response.body, dict) and isinstance(response.body.get("@odata.id"), str):
        return str(response.body["@odata.id"])
    return None


def _relogin(client: RedfishClient) -> None:
    """After a BMC reset every session is gone: drop ours (its DELETE may fail) and log in."""
    client.logout()
    client.login()


def follow(
    client: RedfishClient,
    task_uri: str,
    step: UpdateStep,
    outcome: StepOutcome,
    *,
    poll: float = 5.0,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Poll the task until it ends: ``completed``, ``failed`` or ``vanished``; raises
    ``timeout`` when a deadline runs out. A BMC reset on the way is waited out."""
    clock = _Clock(client, step, now)
    relogins = 0
    delay = poll
    while True:
        left, limit = clock.left()
        if left <= 0:
            raise _fail(
                client,
                ErrorKind.TIMEOUT,
                f"update of {step.component}: task {task_uri} still running when {limit} ran "
                f"out; not retried (the BMC may still be flashing: check before acting)",
            )
        sleep(min(delay, max(0.0, left)))
        try:
            response = client.get_response(task_uri)
        except RedfishError as exc:
            if exc.kind in (ErrorKind.RESET, ErrorKind.UNREACHABLE, ErrorKind.BUSY):
                outcome.messages.append(
                    f"BMC unreachable while flashing ({exc.kind.value}); waiting"
                )
                delay = poll
                continue
            if exc.kind is ErrorKind.TIMEOUT and not client.deadline.expired():
                continue  # one slow answer while the BMC restarts; the deadlines still hold
            if exc.kind is ErrorKind.AUTH and relogins < 3:
                # a reset BMC forgets every session (also when it reset between two polls)
                relogins += 1
                try:
                    _relogin(client)
                except RedfishError as again:
                    if again.kind not in (ErrorKind.RESET, ErrorKind.UNREACHABLE, ErrorKind.BUSY):
                        raise
                    relogins -= 1  # still restarting: try again at the next poll
                    continue
                outcome.messages.append(
                    "session lost (BMC reset during the update); logged in again"
                )
                continue
            raise
        if response.status == 404:
            outcome.messages.append(f"task {task_uri} disappeared (404); the inventory decides")
            return "vanished"
        if response.status == 202:
            delay = _retry_after(response, poll)
            continue
        if response.status != 200 or not isinstance(response.body, dict):
            raise _fail(
                client,
                ErrorKind.HTTP,
                f"task {task_uri}: HTTP {response.status} {response.message()}",
            )
        state = response.body.get("TaskState")
        if state == "Completed":
            outcome.messages.extend(_messages(response.body))
            if response.body.get("TaskStatus") == "Critical":
                return "failed"
            return "completed"
        if state in TERMINAL_FAILED:
            outcome.messages.extend(_messages(response.body))
            return "failed"
        delay = poll


def _one(
    client: RedfishClient,
    service: Service,
    step: UpdateStep,
    outcome: StepOutcome,
    *,
    poll: float,
    verify_wait: float,
) -> None:
    method = outcome.method or ""
    response = _send(client, service, step, method)
    if response.status not in (200, 202, 204):
        outcome.status = "failed"
        outcome.reason = f"{method}: HTTP {response.status} {response.message()}; not retried"
        return
    task = _task_uri(response)
    outcome.task = task
    ending = "completed"
    if task and response.status == 202:
        ending = follow(client, task, step, outcome, poll=poll)
    if ending == "failed":
        outcome.status = "failed"
        outcome.reason = "the BMC's task failed: " + ("; ".join(outcome.messages) or "no message")
        return
    # the inventory decides, for a completed task too (a BMC may take a while to report it)
    end = time.monotonic() + verify_wait
    while True:
        try:
            verified, reported = _verify(read_inventory(client), step)
        except RedfishError as exc:
            if exc.kind is ErrorKind.AUTH:
                _relogin(client)
                continue
            if exc.kind not in (ErrorKind.RESET, ErrorKind.UNREACHABLE) or time.monotonic() > end:
                raise
            verified, reported = None, None
        if verified or time.monotonic() >= end:
            break
        time.sleep(poll)
    outcome.verified, outcome.after = verified, reported
    if verified:
        outcome.status = "ok"
        return
    outcome.status = "failed"
    outcome.reason = (
        f"the task {ending}, but the inventory reports {step.component} at {reported} "
        f"(wanted {step.version}, neither running nor staged); not retried"
    )


def _activate(
    client: RedfishClient,
    staged: Sequence[tuple[UpdateStep, StepOutcome]],
    *,
    wait: float,
    poll: float,
    pace: pacing.Pace | None,
) -> StepOutcome | None:
    """Reset the server once so its staged images run, then wait until the inventory reports
    each as the running image; the first step still not running by then (None: all run)."""
    state = actions.system(client).power_state or "Unknown"
    goal = "restart" if state in ("On", "PoweringOn") else "on"
    end = time.monotonic() + wait
    actions.power(client, goal, wait=wait, poll=poll, pace=pace)
    while True:
        try:
            items = read_inventory(client)
        except RedfishError as exc:
            if exc.kind is ErrorKind.AUTH:
                _relogin(client)
                continue
            if exc.kind not in (ErrorKind.RESET, ErrorKind.UNREACHABLE, ErrorKind.BUSY):
                raise
            items = []
        late = None
        for step, outcome in staged:
            verified, reported = _verify(items, step)
            if verified == "active":
                outcome.verified, outcome.after = "active", reported
                if not any(m.startswith("activated by ") for m in outcome.messages):
                    outcome.messages.append(f"activated by {goal}")
            elif late is None:
                late = outcome
                outcome.after = ", ".join(versions(items, step.component)[0]) or None
        if late is None:
            return None
        if time.monotonic() >= end:
            late.status = "failed"
            late.reason = (
                f"staged, then the server was reset ({goal}), but after {wait:g}s the inventory "
                f"reports {late.component} running {late.after} (wanted {late.wanted}); not retried"
            )
            return late
        time.sleep(min(poll, max(0.0, end - time.monotonic())))


def update(
    client: RedfishClient,
    steps: Sequence[UpdateStep],
    *,
    check_mode: bool = True,
    poll: float = 5.0,
    verify_wait: float = 60.0,
    reset: bool = False,
    reset_wait: float = 600.0,
    pace: pacing.Pace | None = None,
) -> ActionResult:
    """Flash ``steps`` in order on one BMC. Check mode (the default) reads and says what it
    would send. The first failure ends the host: later steps are ``not-attempted``. Images
    left staged are activated by one reset only when ``reset`` allows it (module docstring)."""
    if not steps:
        raise ValueError("no firmware updates given")
    service = Service.parse(client.get(UPDATE_SERVICE))
    items = read_inventory(client)
    outcomes: list[StepOutcome] = []
    for step in steps:
        running, staged = versions(items, step.component)
        if not running:
            raise _fail(
                client,
                ErrorKind.INCOMPLETE,
                f"the firmware inventory reports no component {step.component!r}",
            )
        outcome = StepOutcome(step.component, step.version, ", ".join(running), "would")
        if all(fw.compare(v, step.version) == 0 for v in running):
            outcome.status, outcome.verified = "already", "active"
        elif any(fw.compare(v, step.version) == 0 for v in staged):
            outcome.status, outcome.verified = "already", "staged"
        else:
            try:
                outcome.method = service.method_for(step)
            except ValueError as exc:
                raise _fail(client, ErrorKind.UNSUPPORTED, str(exc)) from None
            if step.image and outcome.method == "multipart":
                outcome.image_sha256 = hashlib.sha256(Path(step.image).read_bytes()).hexdigest()
        outcomes.append(outcome)
    before = {o.component: o.before for o in outcomes}
    todo = [o for o in outcomes if o.status == "would"]
    if not todo:
        return ActionResult(
            False,
            before,
            before,
            "every component already at its version (running or staged)",
            details={"updates": [o.public() for o in outcomes]},
        )
    if check_mode:
        said = "; ".join(
            f"{o.component} {o.before} -> {o.wanted} by "
            + ("multipart push" if o.method == "multipart" else "SimpleUpdate")
            for o in todo
        )
        then = "; a staged image is activated by one reset (reset allowed)" if reset else ""
        return ActionResult(
            True,
            before,
            before,
            f"would flash {said}{then}",
            details={"updates": [o.public() for o in outcomes]},
        )
    failed: StepOutcome | None = None
    for step, outcome in zip(steps, outcomes, strict=True):
        if outcome.status != "would":
            continue
        if failed is not None:
            outcome.status = "not-attempted"
            outcome.reason = f"an earlier flash failed ({failed.component})"
            continue
        try:
            _one(client, service, step, outcome, poll=poll, verify_wait=verify_wait)
        except RedfishError as exc:
            outcome.status, outcome.reason = "failed", exc.reason
        if outcome.status == "failed":
            failed = outcome
    staged = [
        (step, o)
        for step, o in zip(steps, outcomes, strict=True)
        if o.status == "ok" and o.verified == "staged"
    ]
    note = ""
    if failed is None and staged and reset:
        try:
            failed = _activate(client, staged, wait=reset_wait, poll=poll, pace=pace)
        except RedfishError as exc:
            failed = staged[0][1]
            failed.status, failed.reason = "failed", f"reset to activate: {exc.reason}"
        note = f"; activated by a reset: {', '.join(o.component for _, o in staged)}"
    elif failed is None and staged:
        for _, o in staged:
            o.status = "staged"
        note = "; staged, needs a reset: " + ", ".join(
            f"{o.component} ({o.wanted} staged, {o.before} runs until the next reset)"
            for _, o in staged
        )
    after = {o.component: o.after or o.before for o in outcomes}
    details: dict[str, Any] = {"updates": [o.public() for o in outcomes]}
    if failed is not None:
        raise UpdateFailed(client, failed, details)
    if any(o.status == "staged" for o in outcomes):
        details["needs_reset"] = [o.component for o in outcomes if o.status == "staged"]
        return ActionResult(
            True,
            before,
            before,
            f"flashed {', '.join(o.component for o in todo)}, NOT active yet{note}",
            details=details,
        )
    return ActionResult(
        True,
        before,
        after,
        f"flashed and verified {', '.join(o.component for o in todo)}{note}",
        details=details,
    )


class UpdateFailed(RedfishError):
    """A flash failed or could not be verified; ``details`` holds every step's outcome."""

    def __init__(self, client: RedfishClient, failed: StepOutcome, details: dict[str, Any]) -> None:
        super().__init__(
            ErrorKind.HTTP,
            f"update of {failed.component} to {failed.wanted} failed: {failed.reason}",
            bmc=str(client.target),
        )
        self.details = details
