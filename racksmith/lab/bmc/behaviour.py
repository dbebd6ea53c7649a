"""What a real iDRAC does that static emulators do not: the behaviour layer of one emulated BMC.

sushy-static (see ``tree``) knows how to find a captured document; this layer decides what the
BMC answers. Each behaviour comes from a documented real-world report (see
docs/redfish.md and the Redfish reference):

- sessions: ``POST SessionService/Sessions`` gives 201, ``X-Auth-Token`` and ``Location``;
  ``DELETE`` logs out; idle sessions expire; more than ``session_limit`` live sessions gives
  **503 with IDRAC.2.8.RAC0218** (leaked sessions lock real operators out for ~30 minutes);
- authentication on everything but the service root: a session token or Basic; 401 otherwise;
- power: ``ComputerSystem.Reset`` validated against the advertised allowable values,
  ``PoweringOn``/``PoweringOff`` for ``power_delay`` seconds, and **409 IDRAC.2.8.PSU501**
  for ``On`` when the server is already on;
- one-time boot override: validated PATCH, read back, consumed when the host next powers on;
  where the model's layout names a settings object (the DGX's ``SD``), the override is taken
  only there, only with ``If-Match`` carrying that object's current ETag (428 without, 412 when
  stale), and shown there as the pending setting (the system shows the active one);
- ``$expand`` (``.``, ``*``, ``~``; MaxLevels 1 like iDRAC9) and ``$select``;
- the BMC clock (``Manager.DateTime`` and the HTTP ``Date`` header), settable by PATCH;
- latency per request and the faults a rack file asks for (``Faults.from_spec``).

:meth:`EmulatedBmc.handle` is transport-free (method, target, headers, body in; a
:class:`Reply` out), so the HTTP glue in ``server`` stays small.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import random
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from racksmith.lab.bmc import identity
from racksmith.lab.bmc.logs import LabLogs
from racksmith.lab.bmc.tree import ROOT, Variant
from racksmith.lab.bmc.updates import BIOS_COMPONENT, OLD_BIOS, DellUpdates, UpdateFaults
from racksmith.lab.spec import Server

SESSIONS = f"{ROOT}/SessionService/Sessions"
SYSTEMS = f"{ROOT}/Systems"
OPEN_PATHS = frozenset({"/redfish", ROOT, f"{ROOT}/odata", f"{ROOT}/$metadata"})
MAX_EXPAND_LEVELS = 1

BOOT_ENABLED = ("Disabled", "Once", "Continuous")
BOOT_MODES = ("UEFI", "Legacy")
BOOT_KEYS = frozenset(
    {
        "BootSourceOverrideEnabled",
        "BootSourceOverrideTarget",
        "BootSourceOverrideMode",
        "UefiTargetBootSourceOverride",
    }
)


@dataclass(frozen=True)
class Latency:
    """Seconds added to every answer: fixed (``0.5``), uniform (``0.1-0.3``) or a named profile."""

    low: float = 0.0
    high: float = 0.0

    PROFILES = {"none": (0.0, 0.0), "idrac9": (0.1, 0.3), "idrac8": (3.0, 12.0)}  # noqa: RUF012

    @classmethod
    def parse(cls, spec: str | float) -> Latency:
        text = str(spec).strip().lower()
        if text in cls.PROFILES:
            return cls(*cls.PROFILES[text])
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?", text)
        if not match:
            raise ValueError(
                f"latency {spec!r}: use seconds (0.5), a range (0.1-0.3) or one of "
                f"{', '.join(cls.PROFILES)}"
            )
        low = float(match.group(1))
        high = float(match.group(2) or low)
        if high < low:
            raise ValueError(f"latency {spec!r}: range is reversed")
        return cls(low, high)

    def sample(self, rng: random.Random) -> float:
        return self.low if self.high == self.low else rng.uniform(self.low, self.high)


#: Seconds a ``bmc_slow`` BMC takes per answer: well past any sane per-BMC deadline.
SLOW_SECONDS = 60.0
#: How far a ``bmc_clock_skew`` BMC's clock runs ahead (3 h 17 min: obvious in any report).
CLOCK_SKEW_SECONDS = 3 * 3600 + 17 * 60


@dataclass(frozen=True)
class Faults:
    """Injected misbehaviour of one BMC. ``from_spec`` maps rack-file fault names onto it."""

    unreachable: bool = False  # the farm does not listen on the port
    reject_credentials: bool = False  # 401 for the lab credentials
    slow: float = 0.0  # extra seconds per answer
    hang: bool = False  # read the request, never answer
    busy: bool = False  # every login: 503 RAC0218 (session table full of leaked sessions)
    busy_cycle: int = 0  # login k gets 503 RAC0218 unless k % busy_cycle == busy_cycle - 1
    reset: bool = False  # reset every authenticated request except logout
    reset_every: int = 0  # reset every n-th authenticated GET (transient trouble)
    malformed: str | None = None  # "truncated" or "not_redfish" under /Systems
    empty_systems: bool = False
    empty_nics: bool = False
    missing_gpu: bool = False
    clock_skew: float = 0.0
    clock_locked: bool = False  # DateTime PATCH refused (clock managed by the BMC's own NTP)
    boot_quirk: bool = False  # boot PATCH: 400 "depends on other attribute(s)", but applied
    update: UpdateFaults = field(default_factory=UpdateFaults)  # firmware update misbehaviour
    psu_log: bool = False  # a Critical "power supply input lost" entry in the BMC's log (logs.py)
    firmware_old: bool = False  # the BIOS runs OLD_BIOS, behind the lab's baseline (iDRAC only)

    @classmethod
    def from_spec(cls, names: Iterable[str]) -> Faults:
        names = set(names)
        return cls(
            unreachable="bmc_unreachable" in names,
            reject_credentials="bmc_auth_failed" in names,
            slow=SLOW_SECONDS if "bmc_slow" in names else 0.0,
            hang="bmc_hang" in names,
            busy="bmc_busy" in names,
            busy_cycle=3 if "bmc_503" in names else 0,
            reset="bmc_reset" in names,
            malformed="truncated" if "bmc_malformed" in names else None,
            empty_systems="bmc_empty_systems" in names,
            empty_nics="bmc_empty_nics" in names,
            missing_gpu="missing_gpu" in names,
            clock_skew=(
                CLOCK_SKEW_SECONDS if names & {"bmc_clock_skew", "bmc_clock_locked"} else 0.0
            ),
            clock_locked="bmc_clock_locked" in names,
            boot_quirk="bmc_boot_quirk" in names,
            psu_log="bmc_sel_psu" in names,
            update=UpdateFaults(update_fails="flash_fails" in names),
            firmware_old="firmware_old" in names,
        )


@dataclass(frozen=True)
class Settings:
    latency: Latency = field(default_factory=Latency)
    session_limit: int = 8
    session_timeout: float = 1800.0
    power_delay: float = 2.0
    initial_power: str = "Off"  # lab machines are off until MAAS powers them on
    update_seconds: float = 5.0  # how long a firmware update task runs
    bmc_reset_seconds: float = 5.0  # how long the BMC is gone after its own update


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    action: str | None = None  # "reset": drop the connection (RST); "hang": never answer
    delay: float = 0.0


@dataclass
class _Session:
    id: str
    token: str
    user: str
    last_used: float


def _message(
    message_id: str, message: str, severity: str = "Warning", resolution: str = "None."
) -> dict[str, Any]:
    return {
        "MessageId": message_id,
        "Message": message,
        "Severity": severity,
        "Resolution": resolution,
    }


def _error_body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "error": {
            "code": "Base.1.12.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information",
            "@Message.ExtendedInfo": list(messages),
        }
    }


class EmulatedBmc:
    """One emulated iDRAC: identity, state and faults. Thread-safe; one instance per port."""

    def __init__(
        self,
        server: Server,
        variant: Variant,
        *,
        username: str,
        password: str,
        settings: Settings | None = None,
        faults: Faults | None = None,
        seed: int | None = None,
    ) -> None:
        self.server = server
        self.variant = variant
        self.settings = settings or Settings()
        self.faults = faults if faults is not None else Faults.from_spec(server.faults)
        self.identity = identity.for_server(server, variant)
        self.port: int | None = None  # set by the farm once bound
        self._username = username
        self._password = password
        self._rng = random.Random(seed if seed is not None else server.index)  # noqa: S311
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._next_session = 1
        self._logins = 0
        self._gets = 0
        self._power = "On" if self.settings.initial_power.lower() == "on" else "Off"
        self._transition: tuple[float, str, str] | None = None  # (end, final, shown meanwhile)
        self._boot = {
            "BootSourceOverrideEnabled": "Disabled",
            "BootSourceOverrideTarget": "None",
            "BootSourceOverrideMode": "UEFI",
            "UefiTargetBootSourceOverride": None,
        }
        self._boot_etag = 0  # bumped by every accepted PATCH of a settings object
        settings = variant.layout.boot_settings
        if settings:  # the pending override as captured (the system's own Boot is the active one)
            captured = (variant.document(settings) or {}).get("Boot") or {}
            self._boot.update({k: captured.get(k) for k in self._boot if k in captured})
        self._clock_offset = self.faults.clock_skew
        self._tz = timezone(timedelta(hours=-5))  # the capture's DateTimeLocalOffset
        self.boots: list[
            tuple[float, str]
        ] = []  # (when, boot target) each time the host powered on
        self.stats: Counter[str] = Counter()  # requests by method, statuses, events (tests, bench)
        self._stats_lock = threading.Lock()
        self.max_live_sessions = 0
        self._hidden: set[str] = set()
        #: BIOS settings, jobs, firmware inventory and update tasks (updates.py); iDRAC only
        self.updates: DellUpdates | None = None
        if variant.vendor == "dell":
            self.updates = DellUpdates(
                self,
                update_seconds=self.settings.update_seconds,
                bmc_reset_seconds=self.settings.bmc_reset_seconds,
                faults=self.faults.update,
                running={BIOS_COMPONENT: OLD_BIOS} if self.faults.firmware_old else None,
            )
        self.logs = LabLogs(variant, psu_fault=self.faults.psu_log, created=self.now())
        if self.faults.missing_gpu and variant.gpu_ids:
            self._hidden = set(variant.gpu_paths(variant.gpu_ids[-1]))

    # -- introspection (tests, the lab's status) ------------------------------------------------

    def live_sessions(self) -> int:
        with self._lock:
            self._purge(time.monotonic())
            return len(self._sessions)

    def power_state(self) -> str:
        with self._lock:
            return self._power_state(time.monotonic())

    def boot_override(self) -> dict[str, Any]:
        with self._lock:
            self._power_state(time.monotonic())
            return dict(self._boot)

    def now(self) -> datetime:
        """The BMC's clock (controller time plus this BMC's offset), in its local offset."""
        return datetime.fromtimestamp(time.time() + self._clock_offset, tz=self._tz)

    # -- the one entry point ----------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        reply = self._handle(method.upper(), target, headers, body)
        reply.delay += self.settings.latency.sample(self._rng) + self.faults.slow
        self._count(f"{method.upper()}")
        self._count(f"status_{reply.status}")
        return reply

    def _handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Reply:
        if self.faults.hang:
            return Reply(0, action="hang")
        if self.updates is not None:
            if self.updates.down():  # resetting after (or during) a firmware update
                return Reply(0, action="reset")
            if self.updates.take_sessions_lost():
                with self._lock:
                    self._sessions.clear()  # a reset BMC forgets every session
        split = urlsplit(target)
        path = unquote(split.path).rstrip("/") or "/"
        if method == "POST" and path == SESSIONS:
            return self._login(body)
        if path not in OPEN_PATHS:
            session = self._authenticate(headers)
            if session is False:
                self._count("unauthorized")
                return self._fail(
                    401,
                    "Base.1.12.NoValidSession",
                    "There is no valid session established with the implementation.",
                    "Critical",
                    "Establish a session before attempting any operations.",
                    headers={"WWW-Authenticate": 'Basic realm="RedfishService"'},
                )
            if method == "DELETE" and path.startswith(SESSIONS + "/"):
                return self._logout(path.rsplit("/", 1)[-1])
            if self.faults.reset:
                return Reply(0, action="reset")
            if method == "GET" and self.faults.reset_every:
                with self._lock:
                    self._gets += 1
                    if self._gets % self.faults.reset_every == 0:
                        return Reply(0, action="reset")
        if self.updates is not None:
            handled = self.updates.handle(method, path, headers, body)
            if handled is not None:
                return handled
        if method == "GET":
            return self._get(path, split.query)
        layout = self.variant.layout
        if method == "POST" and path == layout.reset:
            return self._reset(body)
        if method == "PATCH" and layout.boot_settings and path == layout.boot_settings:
            return self._patch_settings(headers, body)
        if method == "PATCH" and path == layout.system and not layout.boot_settings:
            return self._patch_system(body)
        if method == "PATCH" and path == layout.manager:
            return self._patch_manager(body)
        if self._resource(path) is None:
            return self._not_found(path)
        return self._fail(
            405,
            "Base.1.12.OperationNotAllowed",
            f"The {method} operation is not allowed on {path}.",
        )

    # -- authentication ---------------------------------------------------------------------------

    def _credentials_ok(self, user: Any, password: Any) -> bool:
        if (
            self.faults.reject_credentials
            or not isinstance(user, str)
            or not isinstance(password, str)
        ):
            return False
        same_user = hmac.compare_digest(user.encode(), self._username.encode())
        same_password = hmac.compare_digest(password.encode(), self._password.encode())
        return same_user and same_password

    def _authenticate(self, headers: Mapping[str, str]) -> _Session | bool:
        lowered = {k.lower(): v for k, v in headers.items()}
        token = lowered.get("x-auth-token")
        now = time.monotonic()
        with self._lock:
            self._purge(now)
            if token:
                for session in self._sessions.values():
                    if hmac.compare_digest(session.token, token):
                        session.last_used = now
                        return session
                return False
        auth = lowered.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            return True if self._credentials_ok(user, password) else False
        return False

    def _purge(self, now: float) -> None:
        expired = [
            sid
            for sid, s in self._sessions.items()
            if now - s.last_used > self.settings.session_timeout
        ]
        for sid in expired:
            del self._sessions[sid]
            self._count("sessions_expired")

    def _login(self, body: bytes) -> Reply:
        payload = self._payload(body)
        if isinstance(payload, Reply):
            return payload
        with self._lock:
            attempt = self._logins
            self._logins += 1
        if not self._credentials_ok(payload.get("UserName"), payload.get("Password")):
            self._count("login_failed")
            return self._fail(
                401,
                "IDRAC.2.8.RAC0211",
                "Unable to log in because the username or password is incorrect.",
                "Critical",
                "Enter valid credentials and retry the operation.",
            )
        cycle = self.faults.busy_cycle
        with self._lock:
            self._purge(time.monotonic())
            full = len(self._sessions) >= self.settings.session_limit
            if self.faults.busy or full or (cycle and attempt % cycle != cycle - 1):
                self._count("busy")
                return self._fail(
                    503,
                    "IDRAC.2.8.RAC0218",
                    "The maximum number of user sessions is reached.",
                    "Critical",
                    "Close one or more sessions and retry the operation.",
                )
            sid = str(self._next_session)
            self._next_session += 1
            session = _Session(sid, secrets.token_hex(16), payload["UserName"], time.monotonic())
            self._sessions[sid] = session
            self.max_live_sessions = max(self.max_live_sessions, len(self._sessions))
        self._count("sessions_created")
        location = f"{SESSIONS}/{sid}"
        return self._json(
            201, self._session_doc(session), {"X-Auth-Token": session.token, "Location": location}
        )

    def _logout(self, sid: str) -> Reply:
        with self._lock:
            removed = self._sessions.pop(sid, None)
        if removed is None:
            return self._not_found(f"{SESSIONS}/{sid}")
        self._count("sessions_deleted")
        return self._json(
            200,
            {
                "@Message.ExtendedInfo": [
                    _message("Base.1.12.Success", "Successfully Completed Request", "OK")
                ]
            },
        )

    def _session_doc(self, session: _Session) -> dict[str, Any]:
        return {
            "@odata.id": f"{SESSIONS}/{session.id}",
            "@odata.type": "#Session.v1_3_0.Session",
            "Id": session.id,
            "Name": "User Session",
            "Description": "User Session",
            "UserName": session.user,
        }

    # -- reads ------------------------------------------------------------------------------------

    def _hidden_path(self, path: str) -> bool:
        return any(path == h or path.startswith(h + "/") for h in self._hidden)

    def _resource(self, path: str) -> dict[str, Any] | None:
        """The document at ``path`` as this BMC serves it (before $expand/$select), or None."""
        if self._hidden_path(path):
            return None
        if path == SESSIONS:
            with self._lock:
                self._purge(time.monotonic())
                members = [{"@odata.id": f"{SESSIONS}/{sid}"} for sid in self._sessions]
            return {
                "@odata.id": SESSIONS,
                "@odata.type": "#SessionCollection.SessionCollection",
                "Name": "Session Collection",
                "Members": members,
                "Members@odata.count": len(members),
            }
        if path.startswith(SESSIONS + "/"):
            with self._lock:
                session = self._sessions.get(path.rsplit("/", 1)[-1])
            return self._session_doc(session) if session else None
        doc = self.updates.resource(path) if self.updates is not None else None
        if doc is None:
            doc = self.logs.resource(path)
        if doc is None:
            doc = self.variant.document(path)
        if doc is None:
            return None
        if self.updates is not None:
            self.updates.decorate(path, doc)
        members = doc.get("Members")
        if isinstance(members, list):
            kept = [m for m in members if not self._hidden_path(str(m.get("@odata.id", "")))]
            if (path == SYSTEMS and self.faults.empty_systems) or (
                path == self.variant.layout.ethernet and self.faults.empty_nics
            ):
                kept = []
            if len(kept) != len(members):
                doc["Members"] = kept
                doc["Members@odata.count"] = len(kept)
        layout = self.variant.layout
        if path in (layout.system, layout.chassis):
            with self._lock:
                doc["PowerState"] = self._power_state(time.monotonic())
                if path == layout.system and not layout.boot_settings:
                    doc.setdefault("Boot", {}).update(self._boot)
        if layout.boot_settings and path == layout.boot_settings:
            with self._lock:
                self._power_state(time.monotonic())  # a finished boot consumed the override
                doc.setdefault("Boot", {}).update(self._boot)
                doc["@odata.etag"] = self._settings_etag(doc)
        if path == layout.manager:
            now = self.now()
            doc["DateTime"] = now.isoformat(timespec="seconds")
            doc["DateTimeLocalOffset"] = now.strftime("%z")[:3] + ":" + now.strftime("%z")[3:]
        return doc

    def _expand(self, node: Any, mode: str, in_links: bool = False) -> Any:
        """Replace references by the documents they point to (one level, like iDRAC9)."""
        if isinstance(node, dict):
            if len(node) == 1 and isinstance(node.get("@odata.id"), str):
                uri = node["@odata.id"]
                wanted = mode == "*" or (mode == "." and not in_links) or (mode == "~" and in_links)
                if wanted and "#" not in uri:
                    target = self._resource(uri.rstrip("/"))
                    if target is not None:
                        return target
                return node
            return {k: self._expand(v, mode, in_links or k == "Links") for k, v in node.items()}
        if isinstance(node, list):
            return [self._expand(item, mode, in_links) for item in node]
        return node

    def _get(self, path: str, query: str) -> Reply:
        expand = select = None
        skip = None
        for key, value in parse_qsl(query, keep_blank_values=True):
            if key == "$expand":
                match = re.fullmatch(r"([.*~])(?:\(\$levels=(\d+)\))?", value)
                if not match:
                    return self._bad_query(key, value)
                if int(match.group(2) or 1) > MAX_EXPAND_LEVELS:
                    return self._fail(
                        400,
                        "Base.1.12.QueryParameterOutOfRange",
                        f"The value {value} for the query parameter $expand is out of range "
                        f"(MaxLevels {MAX_EXPAND_LEVELS}).",
                    )
                expand = match.group(1)
            elif key == "$select":
                select = {v.strip() for v in value.split(",") if v.strip()}
            elif key == "$skip" and value.isdigit():
                skip = value
            else:
                return self._bad_query(key, value)
        lookup = f"{path}?$skip={skip}" if skip else path
        doc = self._resource(lookup)
        if doc is None:
            return self._not_found(path)
        if self.faults.malformed and path.startswith(SYSTEMS):
            if self.faults.malformed == "not_redfish":
                return self._json(200, {"status": "ok", "data": "service restarting"})
            text = self.identity.apply(json.dumps(doc))
            return Reply(200, text[: len(text) // 3].encode(), {"Content-Type": "application/json"})
        if expand:
            self._count("expand")
            doc = self._expand(doc, expand)
        if select:
            doc = {k: v for k, v in doc.items() if k in select or k.startswith("@odata.")}
        etag = doc.get("@odata.etag") if path == self.variant.layout.boot_settings else None
        return self._json(200, doc, {"ETag": etag} if isinstance(etag, str) else None)

    # -- power, boot, clock -----------------------------------------------------------------------

    def _power_state(self, now: float) -> str:
        """Current PowerState, completing a finished transition (call with the lock held)."""
        if self._transition is not None:
            end, final, shown = self._transition
            if now < end:
                return shown
            self._transition = None
            self._power = final
            if final == "On":
                target = (
                    self._boot["BootSourceOverrideTarget"]
                    if self._boot["BootSourceOverrideEnabled"] != "Disabled"
                    else "None"
                )
                self.boots.append((time.time(), target))
                if self.updates is not None:
                    self.updates.on_power_on()
                if self._boot["BootSourceOverrideEnabled"] == "Once":
                    self._boot["BootSourceOverrideEnabled"] = "Disabled"
                    self._boot["BootSourceOverrideTarget"] = "None"
        return self._power

    def _reset(self, body: bytes) -> Reply:
        payload = self._payload(body)
        if isinstance(payload, Reply):
            return payload
        allowed = self._reset_types()
        reset_type = payload.get("ResetType")
        if reset_type is None:
            return self._fail(
                400,
                "Base.1.12.ActionParameterMissing",
                "The action ComputerSystem.Reset requires the parameter ResetType to be present "
                "in the request body.",
            )
        if reset_type not in allowed:
            return self._fail(
                400,
                "Base.1.12.ActionParameterValueNotInList",
                f"The value '{reset_type}' for the parameter ResetType in the action "
                "ComputerSystem.Reset is not in the list of acceptable values.",
            )
        delay = self.settings.power_delay
        with self._lock:
            now = time.monotonic()
            state = self._power_state(now)
            on = state in ("On", "PoweringOn")
            if reset_type == "On" and on and self.variant.vendor != "dell":
                self._count("already_on")
                return Reply(204)  # other vendors' answer to this is not in any capture
            if reset_type == "On" and on:
                self._count("psu501")
                return self._fail(
                    409,
                    "IDRAC.2.8.PSU501",
                    "Server is already powered ON.",
                    "Warning",
                    "No response action is required.",
                )
            if reset_type == "ForceOff" or (reset_type == "PushPowerButton" and on):
                self._power, self._transition = "Off", None
            elif reset_type == "GracefulShutdown":
                if on:
                    self._transition = (now + delay, "Off", "PoweringOff")
            elif reset_type in (
                "On",
                "ForceRestart",
                "GracefulRestart",
                "PowerCycle",
                "PushPowerButton",
            ):
                self._power = "Off"
                self._transition = (now + delay, "On", "PoweringOn")
            self._count(f"reset_{reset_type}")
        return Reply(204)

    def _reset_types(self) -> list[str]:
        """Allowed reset types, inline or (Supermicro, AMI) in the action's ActionInfo."""
        system = self.variant.document(self.variant.layout.system) or {}
        action = system.get("Actions", {}).get("#ComputerSystem.Reset", {})
        allowed = action.get("ResetType@Redfish.AllowableValues")
        if isinstance(allowed, list):
            return allowed
        ref = action.get("@Redfish.ActionInfo")
        info = (self.variant.document(ref) if isinstance(ref, str) else None) or {}
        for parameter in info.get("Parameters", []):
            if isinstance(parameter, dict) and parameter.get("Name") == "ResetType":
                return list(parameter.get("AllowableValues") or [])
        return []

    def _settings_etag(self, doc: dict[str, Any]) -> str:
        """The settings object's ETag: the captured one until the first accepted PATCH."""
        if not self._boot_etag:
            return str(doc.get("@odata.etag") or '"0"')
        return f'"racksmith-{self._boot_etag}"'

    def _patch_settings(self, headers: Mapping[str, str], body: bytes) -> Reply:
        """A boot PATCH of the settings object: ``If-Match`` first, as AMI's Redfish does."""
        wanted = {k.lower(): v for k, v in headers.items()}.get("if-match")
        settings = self.variant.layout.boot_settings or ""
        if not wanted:
            self._count("precondition_required")
            return self._fail(
                428,
                "Base.1.12.PreconditionRequired",
                f"A precondition header or annotation is required to change the resource at "
                f"{settings}.",
                "Critical",
                "Try the request again with an If-Match header carrying the resource's ETag.",
            )
        current = self._resource(settings) or {}
        etag = str(current.get("@odata.etag"))
        if wanted.strip() != "*" and etag not in (t.strip() for t in wanted.split(",")):
            self._count("precondition_failed")
            return self._fail(
                412,
                "Base.1.12.PreconditionFailed",
                f"The ETag supplied did not match the ETag required to change the resource at "
                f"{settings}.",
                "Critical",
                "Read the resource again and retry with its current ETag.",
            )
        reply = self._patch_boot(body, current)
        if reply.status == 200:
            with self._lock:
                self._boot_etag += 1
        return reply

    def _patch_system(self, body: bytes) -> Reply:
        system = self.variant.document(self.variant.layout.system) or {}
        return self._patch_boot(body, system)

    def _patch_boot(self, body: bytes, described: dict[str, Any]) -> Reply:
        """Validate a boot override PATCH against the allowable values ``described`` lists (the
        system, or the settings object), then apply it."""
        payload = self._patch_payload(body, {"Boot"})
        if isinstance(payload, Reply):
            return payload
        boot = payload.get("Boot")
        if not isinstance(boot, dict) or not boot:
            return self._fail(
                400,
                "Base.1.12.PropertyValueTypeError",
                "The value for the property Boot is of a different type than the property can "
                "accept.",
            )
        unknown = set(boot) - BOOT_KEYS
        if unknown:
            return self._fail(
                400,
                "Base.1.12.PropertyUnknown",
                f"The property {sorted(unknown)[0]} is not in the list of valid properties for "
                "the resource.",
            )
        listed = described.get("Boot") or {}
        allowed = {
            "BootSourceOverrideTarget": listed.get(
                "BootSourceOverrideTarget@Redfish.AllowableValues", []
            ),
            "BootSourceOverrideEnabled": listed.get(
                "BootSourceOverrideEnabled@Redfish.AllowableValues", BOOT_ENABLED
            ),
            "BootSourceOverrideMode": listed.get(
                "BootSourceOverrideMode@Redfish.AllowableValues", BOOT_MODES
            ),
        }
        for key, values in allowed.items():
            if key in boot and boot[key] not in values:
                return self._fail(
                    400,
                    "Base.1.12.PropertyValueNotInList",
                    f"The value '{boot[key]}' for the property {key} is not in the list of "
                    "acceptable values.",
                )
        with self._lock:
            self._boot.update(boot)
        self._count("boot_patch")
        if self.faults.boot_quirk:
            # community.general#5091: 13G in UEFI mode rejects the PATCH yet applies it.
            return self._fail(
                400,
                "Base.1.12.PropertyValueConflict",
                "The value for BootSourceOverrideTarget cannot be applied because it depends on "
                "other attribute(s).",
            )
        return self._json(
            200,
            {
                "@Message.ExtendedInfo": [
                    _message("Base.1.12.Success", "Successfully Completed Request", "OK")
                ]
            },
        )

    def _patch_manager(self, body: bytes) -> Reply:
        payload = self._patch_payload(body, {"DateTime", "DateTimeLocalOffset"})
        if isinstance(payload, Reply):
            return payload
        if self.faults.clock_locked:
            return self._fail(
                400,
                "Base.1.12.PropertyNotWritable",
                "The property DateTime is a read only property and cannot be assigned a value.",
            )
        try:
            if "DateTimeLocalOffset" in payload:
                hours, _, minutes = str(payload["DateTimeLocalOffset"]).partition(":")
                sign = -1 if hours.startswith("-") else 1
                self._tz = timezone(
                    sign * timedelta(hours=abs(int(hours)), minutes=int(minutes or 0))
                )
            if "DateTime" in payload:
                wanted = datetime.fromisoformat(str(payload["DateTime"]).replace("Z", "+00:00"))
                if wanted.tzinfo is None:
                    raise ValueError("no UTC offset")
                self._clock_offset = wanted.timestamp() - time.time()
        except ValueError:
            return self._fail(
                400,
                "Base.1.12.PropertyValueFormatError",
                "The value for the property DateTime is of a different format than the property "
                "can accept.",
            )
        self._count("clock_set")
        return self._json(
            200,
            {
                "@Message.ExtendedInfo": [
                    _message("Base.1.12.Success", "Successfully Completed Request", "OK")
                ]
            },
        )

    # -- helpers ----------------------------------------------------------------------------------

    def _patch_payload(self, body: bytes, writable: set[str]) -> dict[str, Any] | Reply:
        """The PATCH body, or the error for malformed JSON or a property that is not writable."""
        payload = self._payload(body)
        if isinstance(payload, Reply):
            return payload
        extra = sorted(set(payload) - writable)
        if extra:
            return self._fail(
                400,
                "Base.1.12.PropertyNotWritable",
                f"The property {extra[0]} is a read only property and cannot be assigned a value.",
            )
        return payload

    def _payload(self, body: bytes) -> dict[str, Any] | Reply:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            return self._fail(
                400,
                "Base.1.12.MalformedJSON",
                "The request body submitted was malformed JSON and could not be parsed by the "
                "receiving service.",
            )
        return payload

    def _json(
        self, status: int, doc: dict[str, Any], headers: dict[str, str] | None = None
    ) -> Reply:
        text = self.identity.apply(json.dumps(doc))
        return Reply(
            status,
            text.encode(),
            {
                "Content-Type": "application/json;odata.metadata=minimal;charset=utf-8",
                **(headers or {}),
            },
        )

    def _count(self, key: str) -> None:
        with self._stats_lock:  # many connection threads per BMC; += on a Counter is not atomic
            self.stats[key] += 1

    def _fail(
        self,
        status: int,
        message_id: str,
        text: str,
        severity: str = "Warning",
        resolution: str = "None.",
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """A Redfish error answer with one ``@Message.ExtendedInfo`` entry."""
        body = _error_body(_message(message_id, text, severity, resolution))
        return self._json(status, body, headers)

    def _not_found(self, path: str) -> Reply:
        return self._fail(
            404,
            "Base.1.12.ResourceMissingAtURI",
            f"The resource at the URI {path} was not found.",
            "Critical",
        )

    def _bad_query(self, key: str, value: str) -> Reply:
        return self._fail(
            400,
            "Base.1.12.QueryNotSupported",
            f"Querying with {key}={value} is not supported by this emulated service.",
        )
