"""What an iDRAC does with BIOS settings and firmware updates: the part sushy-tools lacks.

sushy-tools' dynamic emulator serves ``Bios``, ``Bios/Settings`` and ``SimpleUpdate`` only with
its libvirt driver (the fake driver answers "not supported"; libvirt-python is not in the
project's environment), and even there a BIOS PATCH applies at once, the update is a canned
"version + 1" with a task that is always ``Completed``. Rollouts fail in the gaps, so this layer
serves the real iDRAC9 capture's ``Bios``, ``Bios/Settings`` (``Settings.v1_3_3``,
``SupportedApplyTimes`` OnReset...), ``UpdateService`` (``MultipartHttpPushUri`` and
``SimpleUpdate``) and ``FirmwareInventory`` with state:

- **pending BIOS values apply on reset**, and only through a job: a PATCH with
  ``@Redfish.SettingsApplyTime: OnReset`` answers 202 with the job's ``Location``
  (``Managers/iDRAC.Embedded.1/Oem/Dell/Jobs/JID_...``, shaped like the capture's completed
  ``ConfigBIOS:BIOS.Setup.1-1`` job); values PATCHed without it stay pending and no reset applies
  them (as on iDRAC, where a job must be created); ``If-Match`` is checked when sent (412);
- **a job queue that refuses a second BIOS job**: while one is scheduled, another PATCH gets
  400 ``IDRAC.2.8.SYS011`` "Pending configuration values are already committed, unable to
  perform another set operation." (text from Dell's iDRAC event and error message reference;
  the capture holds no such answer);
- **updates with a task monitor**: multipart push or ``SimpleUpdate`` (the emulated BMC fetches
  ``ImageURI`` itself, http only); the task answers 202 with ``Retry-After`` while it runs and
  200 with ``TaskState`` and ``Messages`` at the end; a BIOS image is staged (``Available-``)
  until the host's next power-on, an iDRAC image resets the BMC (connections reset for
  ``bmc_reset_seconds``, every session lost) before its version is reported;
- faults for tests: the BMC resets mid-update, the task disappears (404) while the update goes
  on, the update fails (``Exception`` with a message).

LAB STAND-IN: the firmware images are not vendor packages. A lab package is a JSON document
``{"racksmith_lab_package": 1, "component": FQDD, "version": V}`` (:func:`lab_package`); the
emulated BMC installs exactly what it names.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from racksmith.lab.bmc.tree import ROOT

if TYPE_CHECKING:
    from racksmith.lab.bmc.behaviour import EmulatedBmc, Reply

UPDATE_SERVICE = f"{ROOT}/UpdateService"
INVENTORY = f"{UPDATE_SERVICE}/FirmwareInventory"
SIMPLE_UPDATE = f"{UPDATE_SERVICE}/Actions/UpdateService.SimpleUpdate"
MULTIPART = f"{UPDATE_SERVICE}/MultipartUpload"
TASKS = f"{ROOT}/TaskService/Tasks"
JOBS = f"{ROOT}/Managers/iDRAC.Embedded.1/Oem/Dell/Jobs"
_DELL_ID = re.compile(r"^(Installed|Current|Previous|Available)-([^-]*)-(.*?)__(.+)$")
_IDS = itertools.count(102_300_000_000)
BIOS_COMPONENT = "BIOS.Setup.1-1"
#: The BIOS the fault ``firmware_old`` runs: older than the capture's 1.8.2, behind the lab's
#: baseline (inventory/lab/firmware-baseline.yml). LAB STAND-IN: a version number only.
OLD_BIOS = "1.7.5"


def lab_package(component: str, version: str) -> bytes:
    """A LAB STAND-IN firmware image: what the emulated BMC will install."""
    return json.dumps(
        {"racksmith_lab_package": 1, "component": component, "version": version}
    ).encode()


def _read_package(data: bytes) -> tuple[str, str] | None:
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("racksmith_lab_package") != 1:
        return None
    component, version = doc.get("component"), doc.get("version")
    if isinstance(component, str) and isinstance(version, str):
        return component, version
    return None


@dataclass(frozen=True)
class UpdateFaults:
    bmc_reset_mid_update: float = 0.0  # seconds the BMC is down halfway through an update
    task_vanishes: bool = False  # the task answers 404 from halfway on; the update still applies
    update_fails: bool = False  # the task ends in Exception; nothing changes


@dataclass
class _Task:
    id: str
    component: str
    version: str
    started: float
    duration: float
    error: str | None = None  # set: the task ends in Exception with this message
    done: bool = False
    reset_applied: bool = False
    messages: list[dict[str, Any]] = field(default_factory=list)


class DellUpdates:
    """BIOS settings, jobs, firmware inventory and update tasks of one emulated iDRAC."""

    def __init__(
        self,
        bmc: EmulatedBmc,
        *,
        update_seconds: float,
        bmc_reset_seconds: float,
        faults: UpdateFaults,
        clock: Callable[[], float] = time.monotonic,
        running: Mapping[str, str] | None = None,
    ) -> None:
        self.bmc = bmc
        self.update_seconds = update_seconds
        self.bmc_reset_seconds = bmc_reset_seconds
        self.faults = faults
        self.clock = clock
        layout = bmc.variant.layout
        self.system = layout.system
        self.manager = layout.manager
        self.bios_uri = f"{layout.system}/Bios"
        self.settings_uri = f"{self.bios_uri}/Settings"
        self._lock = threading.RLock()
        captured = bmc.variant.document(self.bios_uri) or {}
        self.current: dict[str, Any] = dict(captured.get("Attributes") or {})
        self.pending: dict[str, Any] = {}
        self.etag = 1
        self.jobs: dict[str, dict[str, Any]] = {}
        self.bios_job: str | None = None  # the scheduled ConfigBIOS job
        self.tasks: dict[str, _Task] = {}
        self.down_until = 0.0
        self._reset_pending = False
        self.sessions_lost = False
        # firmware inventory: Id -> document, from the capture
        self.members: dict[str, dict[str, Any]] = {}
        collection = bmc.variant.document(INVENTORY) or {}
        for member in collection.get("Members") or []:
            uri = str(member.get("@odata.id"))
            doc = bmc.variant.document(uri)
            if doc is not None:
                self.members[uri.rsplit("/", 1)[-1]] = doc
        self.installed_events: list[tuple[str, str]] = []  # (component, version), tests read it
        for component, version in (running or {}).items():  # a lab fault: another running image
            self._run(component, version)

    # -- state ------------------------------------------------------------------------------------

    def down(self) -> bool:
        """True while the BMC resets: every connection is reset, sessions are lost."""
        with self._lock:
            self._advance()
            now = self.clock()
            if now < self.down_until:
                self.sessions_lost = True
                return True
            if self._reset_pending and now >= self.down_until:
                self.sessions_lost = True  # it reset whether or not anyone asked meanwhile
                self._reset_pending = False
            return False

    def take_sessions_lost(self) -> bool:
        with self._lock:
            lost, self.sessions_lost = self.sessions_lost, False
            return lost

    def _active(self, component: str) -> tuple[str, str, str] | None:
        """(Id, software id, version) of the running image of ``component``."""
        for fid, doc in self.members.items():
            match = _DELL_ID.match(fid)
            if match and match.group(1) == "Installed" and match.group(4) == component:
                return fid, match.group(2), str(doc.get("Version"))
        return None

    def _install(self, component: str, version: str) -> None:
        """Make ``version`` the running image of ``component`` (Installed-/Current-), the old
        one the rollback image (Previous-), and drop a staged copy."""
        found = self._active(component)
        if found is None:
            return
        old_id, sid, old_version = found
        template = self.members[old_id]
        for prefix in ("Installed", "Current", "Previous", "Available"):
            for fid in list(self.members):
                match = _DELL_ID.match(fid)
                if match and match.group(1) == prefix and match.group(4) == component:
                    del self.members[fid]
        for prefix, ver in (
            ("Installed", version),
            ("Current", version),
            ("Previous", old_version),
        ):
            self.members[f"{prefix}-{sid}-{ver}__{component}"] = self._member(
                template, old_id, f"{prefix}-{sid}-{ver}__{component}", ver
            )
        self.installed_events.append((component, version))

    def _run(self, component: str, version: str) -> None:
        """Serve ``version`` as the running image of ``component`` from the start (no update,
        no rollback image): how a server that left the factory with other firmware looks."""
        found = self._active(component)
        if found is None:
            return
        old_id, sid, _ = found
        template = self.members[old_id]
        for prefix in ("Installed", "Current"):
            for fid in list(self.members):
                match = _DELL_ID.match(fid)
                if match and match.group(1) == prefix and match.group(4) == component:
                    del self.members[fid]
            new_id = f"{prefix}-{sid}-{version}__{component}"
            self.members[new_id] = self._member(template, old_id, new_id, version)

    def _stage(self, component: str, version: str) -> None:
        found = self._active(component)
        if found is None:
            return
        old_id, sid, _ = found
        fid = f"Available-{sid}-{version}__{component}"
        self.members[fid] = self._member(self.members[old_id], old_id, fid, version)

    @staticmethod
    def _member(template: dict[str, Any], old_id: str, new_id: str, version: str) -> dict[str, Any]:
        doc = json.loads(json.dumps(template).replace(old_id, new_id))
        doc["Version"] = version
        return doc

    def _advance(self) -> None:
        """Finish the tasks whose time has come (call with the lock held)."""
        now = self.clock()
        for task in self.tasks.values():
            if task.done:
                continue
            half = task.started + task.duration / 2
            if self.faults.bmc_reset_mid_update and not task.reset_applied and now >= half:
                task.reset_applied = True
                self.down_until = max(self.down_until, half + self.faults.bmc_reset_mid_update)
                self._reset_pending = True
            if now < task.started + task.duration:
                continue
            task.done = True
            if task.error:
                task.messages.append(_msg("IDRAC.2.8.RED007", task.error, "Critical"))
                continue
            if task.component.startswith("BIOS."):
                self._stage(task.component, task.version)
                task.messages.append(
                    _msg(
                        "IDRAC.2.8.SUP0516", "The update is staged; it applies at the next reboot."
                    )
                )
            elif task.component.startswith("iDRAC."):
                self._install(task.component, task.version)
                self.down_until = max(self.down_until, now + self.bmc_reset_seconds)
                self._reset_pending = True
                task.messages.append(
                    _msg("IDRAC.2.8.RED030", "The iDRAC firmware is updated; iDRAC restarts.")
                )
            else:
                self._install(task.component, task.version)
                task.messages.append(_msg("IDRAC.2.8.RED001", "Job completed successfully."))

    def on_power_on(self) -> None:
        """The host booted: a scheduled BIOS job applies the pending values, staged BIOS
        images become the running ones."""
        with self._lock:
            self._advance()
            if self.bios_job:
                self.current.update(self.pending)
                self.pending.clear()
                self.etag += 1
                job = self.jobs[self.bios_job]
                job.update(
                    JobState="Completed",
                    PercentComplete=100,
                    Messages=[_msg("IDRAC.2.7.PR19", "Job completed successfully.", "OK")],
                )
                self.bios_job = None
            for fid in list(self.members):
                match = _DELL_ID.match(fid)
                if match and match.group(1) == "Available":
                    self._install(match.group(4), match.group(3))

    # -- reads ------------------------------------------------------------------------------------

    def resource(self, path: str) -> dict[str, Any] | None:
        """This layer's document at ``path``, or None when the capture serves it as is."""
        with self._lock:
            self._advance()
            if path == self.bios_uri:
                doc = self.bmc.variant.document(path) or {}
                doc["Attributes"] = dict(self.current)
                return doc
            if path == self.settings_uri:
                doc = self.bmc.variant.document(path) or {}
                doc["Attributes"] = dict(self.pending)
                doc["@odata.etag"] = f'W/"racksmith-bios-{self.etag}"'
                return doc
            if path == INVENTORY:
                doc = self.bmc.variant.document(path) or {}
                members = [{"@odata.id": f"{INVENTORY}/{fid}"} for fid in sorted(self.members)]
                doc["Members"] = members
                doc["Members@odata.count"] = len(members)
                return doc
            if path.startswith(INVENTORY + "/"):
                fid = path[len(INVENTORY) + 1 :]
                member = self.members.get(fid)
                return json.loads(json.dumps(member)) if member is not None else None
            if path.startswith(JOBS + "/"):
                job = self.jobs.get(path.rsplit("/", 1)[-1])
                return dict(job) if job is not None else None
            if path.startswith(TASKS + "/"):
                return None  # answered by handle(): 202 while running
            return None

    def decorate(self, path: str, doc: dict[str, Any]) -> None:
        """Versions the system and manager report follow the inventory."""
        with self._lock:
            if path == self.system:
                found = self._active(BIOS_COMPONENT)
                if found:
                    doc["BiosVersion"] = found[2]
            elif path == self.manager:
                found = self._active("iDRAC.Embedded.1-1")
                if found:
                    doc["FirmwareVersion"] = found[2]

    # -- writes -----------------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Reply | None:
        if method == "PATCH" and path == self.settings_uri:
            return self._patch_settings(headers, body)
        if method == "POST" and path == SIMPLE_UPDATE:
            return self._simple_update(body)
        if method == "POST" and path == MULTIPART:
            return self._multipart(headers, body)
        if method == "GET" and path.startswith(TASKS + "/"):
            return self._task(path.rsplit("/", 1)[-1])
        return None

    def _patch_settings(self, headers: Mapping[str, str], body: bytes) -> Reply:
        bmc = self.bmc
        payload = bmc._payload(body)
        if not isinstance(payload, dict):
            return payload
        wanted = {k.lower(): v for k, v in headers.items()}.get("if-match")
        with self._lock:
            self._advance()
            etag = f'W/"racksmith-bios-{self.etag}"'
            if (
                wanted
                and wanted.strip() != "*"
                and etag not in (t.strip() for t in wanted.split(","))
            ):
                return bmc._fail(
                    412,
                    "Base.1.12.PreconditionFailed",
                    f"The ETag supplied did not match the ETag required to change the resource "
                    f"at {self.settings_uri}.",
                    "Critical",
                )
            if self.bios_job:
                bmc._count("bios_job_refused")
                return bmc._fail(
                    400,
                    "IDRAC.2.8.SYS011",
                    "Pending configuration values are already committed, unable to perform "
                    "another set operation.",
                    "Warning",
                    "Wait for the scheduled job to complete or delete it, then retry.",
                )
            extra = sorted(set(payload) - {"Attributes", "@Redfish.SettingsApplyTime"})
            attributes = payload.get("Attributes")
            if extra or not isinstance(attributes, dict) or not attributes:
                return bmc._fail(
                    400,
                    "Base.1.12.PropertyValueTypeError",
                    "The request must carry an Attributes object and nothing else writable.",
                )
            unknown = sorted(set(attributes) - set(self.current))
            if unknown:
                return bmc._fail(
                    400,
                    "Base.1.12.PropertyUnknown",
                    f"The property {unknown[0]} is not in the list of valid properties for the "
                    "resource.",
                )
            self.pending.update(attributes)
            self.etag += 1
            apply = payload.get("@Redfish.SettingsApplyTime") or {}
            bmc._count("bios_patch")
            if isinstance(apply, dict) and apply.get("ApplyTime") == "OnReset":
                jid = f"JID_{next(_IDS)}"
                self.jobs[jid] = {
                    "@odata.id": f"{JOBS}/{jid}",
                    "@odata.type": "#DellJob.v1_0_2.DellJob",
                    "Id": jid,
                    "Name": "ConfigBIOS:BIOS.Setup.1-1",
                    "JobState": "Scheduled",
                    "JobType": "BIOSConfiguration",
                    "PercentComplete": 0,
                    "Messages": [_msg("IDRAC.2.8.JCP001", "Task successfully scheduled.", "OK")],
                }
                self.bios_job = jid
                return bmc._json(
                    202,
                    {
                        "@Message.ExtendedInfo": [
                            _msg("Base.1.12.Success", "Successfully Completed Request", "OK")
                        ]
                    },
                    {"Location": f"{JOBS}/{jid}"},
                )
            return bmc._json(
                200,
                {
                    "@Message.ExtendedInfo": [
                        _msg("Base.1.12.Success", "Successfully Completed Request", "OK")
                    ]
                },
            )

    def _start(self, package: tuple[str, str] | None, why: str | None) -> Reply:
        bmc = self.bmc
        with self._lock:
            self._advance()
            if any(not t.done for t in self.tasks.values()):
                return bmc._fail(
                    400,
                    "IDRAC.2.8.RED014",
                    "An update is already in progress; wait for it to complete.",
                )
            tid = f"JID_{next(_IDS)}"
            component, version = package or ("?", "?")
            error = why or (
                "Unable to verify the update package (lab fault)."
                if self.faults.update_fails
                else None
            )
            if package is not None and self._active(component) is None and error is None:
                error = f"The package does not apply to this system ({component})."
            self.tasks[tid] = _Task(
                tid, component, version, self.clock(), self.update_seconds, error
            )
            bmc._count("update_started")
        return bmc._json(202, self._task_doc(self.tasks[tid]), {"Location": f"{TASKS}/{tid}"})

    def _simple_update(self, body: bytes) -> Reply:
        payload = self.bmc._payload(body)
        if not isinstance(payload, dict):
            return payload
        uri = payload.get("ImageURI")
        if not isinstance(uri, str) or not uri.startswith("http://"):
            return self.bmc._fail(
                400,
                "Base.1.12.ActionParameterValueFormatError",
                "The value for the parameter ImageURI in the action SimpleUpdate is invalid "
                "(the lab fetches http:// only).",
            )
        try:
            with urllib.request.urlopen(uri, timeout=5) as answer:  # noqa: S310 (http only)
                data = answer.read(1 << 20)
        except OSError as exc:
            return self._start(None, f"Unable to transfer the image from {uri}: {exc}")
        package = _read_package(data)
        return self._start(package, None if package else "The image is not a valid package.")

    def _multipart(self, headers: Mapping[str, str], body: bytes) -> Reply:
        content_type = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
        if not content_type.startswith("multipart/form-data"):
            return self.bmc._fail(
                400, "Base.1.12.PropertyValueFormatError", "Expected multipart/form-data."
            )
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        package = None
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "UpdateFile":
                package = _read_package(part.get_payload(decode=True) or b"")
        return self._start(package, None if package else "The image is not a valid package.")

    def _task(self, tid: str) -> Reply:
        bmc = self.bmc
        with self._lock:
            self._advance()
            task = self.tasks.get(tid)
            if task is None or (
                self.faults.task_vanishes and self.clock() >= task.started + task.duration / 2
            ):
                return bmc._not_found(f"{TASKS}/{tid}")
            doc = self._task_doc(task)
        if not task.done:
            return bmc._json(202, doc, {"Retry-After": "1", "Location": f"{TASKS}/{tid}"})
        return bmc._json(200, doc)

    def _task_doc(self, task: _Task) -> dict[str, Any]:
        elapsed = self.clock() - task.started
        if not task.done:
            state, status = "Running", "OK"
            percent = min(99, int(100 * elapsed / max(task.duration, 0.001)))
        elif task.error:
            state, status, percent = "Exception", "Critical", 100
        else:
            state, status, percent = "Completed", "OK", 100
        return {
            "@odata.id": f"{TASKS}/{task.id}",
            "@odata.type": "#Task.v1_5_1.Task",
            "Id": task.id,
            "Name": f"Firmware Update: {task.component}",
            "TaskState": state,
            "TaskStatus": status,
            "PercentComplete": percent,
            "Messages": list(task.messages),
        }


def _msg(message_id: str, text: str, severity: str = "OK") -> dict[str, Any]:
    return {"MessageId": message_id, "Message": text, "Severity": severity}
