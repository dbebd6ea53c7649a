"""The BMC's own view of the server's health: its logs, its Health rollups, its sensors.

Why (issue 21, item 6): users' BMC health check read the BMC's own error log, ignoring the
harmless entries, and caught what the host OS never sees (a power supply that lost redundancy,
fans pinned at full speed in a cool room, a temperature sensor reading nonsense). Three parts,
each pure over Redfish documents, each finding named with a triage cause
(``racksmith.triage.causes``: ``psu_fault``, ``thermal``, ``hardware_critical``):

- **log entries** (``LogServices/*/Entries``: SEL, Lifecycle log, event log) since a time,
  classified against an allow-list like the kernel-log check: entries of severity ``OK`` never
  count; a ``Warning`` or ``Critical`` entry counts unless its ``MessageId`` (the part after the
  registry prefix, ``SWC9005``) or its message matches the allow-list. The built-in list holds
  only what a capture shows to be harmless (:data:`HARMLESS`); a site adds its own.
- **Health rollups** of the system, the chassis, each power supply and each fan: anything but
  ``OK`` (an absent part is not a finding).
- **sensor sanity**: a temperature below -20 C or above 150 C is a broken sensor, not weather
  (a CPU ``DTS`` sensor is not a temperature but the margin below the CPU's throttle point:
  Lenovo XCC reports ``CPU 1 DTS`` at -51 beside ``CPU 1 Temp`` at 27 C, so it is not judged);
  fans at 95 % or more (``Percent`` readings, or RPM against ``MaxReadingRange``) while every
  temperature reads below 40 C means the BMC lost control of the fans; a power supply
  redundancy set whose health is not ``OK`` has lost redundancy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

Doc = Mapping[str, Any]

#: (MessageId suffix, why it is harmless), each seen in a capture
#: (racksmith/lab/data/redfish/dell-idrac9, Lifecycle log).
HARMLESS: tuple[tuple[str, str], ...] = (
    (
        "SWC9005",
        "a SecureBoot certificate export someone requested could not run: an operation's "
        "error, not the hardware's (dell-idrac9 Lclog 83432)",
    ),
)
COOL_CELSIUS = 40.0
PINNED_PERCENT = 95.0
IMPOSSIBLE_CELSIUS = (-20.0, 150.0)
#: Sensors that read a margin to a limit, not a temperature (the Lenovo capture's ``CPU 1 DTS``).
_MARGIN_SENSOR = re.compile(r"\bDTS\b")


@dataclass(frozen=True)
class Finding:
    cause: str  # a racksmith.triage cause name
    source: str  # log, health, sensor
    what: str  # the part or entry
    detail: str
    created: str | None = None  # a log entry's own time, as the BMC wrote it

    def public(self) -> dict[str, Any]:
        return asdict(self)


def _status(doc: Doc, key: str = "Health") -> str | None:
    status = doc.get("Status")
    value = status.get(key) if isinstance(status, Mapping) else None
    return value if isinstance(value, str) else None


def _absent(doc: Doc) -> bool:
    return _status(doc, "State") in ("Absent", "Disabled", "UnavailableOffline")


def _created(entry: Doc) -> datetime | None:
    value = entry.get("Created")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def allow_patterns(extra: Iterable[str] = ()) -> list[re.Pattern[str]]:
    """The built-in harmless MessageIds plus the site's patterns (regexes over ``MessageId`` and
    message); a bad pattern is an error naming it."""
    patterns = [re.compile(rf"(^|\.){re.escape(mid)}$") for mid, _ in HARMLESS]
    for text in extra:
        try:
            patterns.append(re.compile(text))
        except re.error as exc:
            raise ValueError(f"BMC log allow pattern {text!r}: {exc}") from None
    return patterns


def _cause_of(entry: Doc) -> str:
    text = f"{entry.get('MessageId', '')} {entry.get('Message', '')}".lower()
    if any(w in text for w in ("psu", "power supply", "redundan")):
        return "psu_fault"
    if any(w in text for w in ("temp", "thermal", "fan")):
        return "thermal"
    return "hardware_critical"


def log_findings(
    entries: Iterable[Doc],
    *,
    since: datetime | None = None,
    allow: Sequence[re.Pattern[str]] | None = None,
    log: str = "log",
) -> list[Finding]:
    """Entries that count: Warning or Critical, not allow-listed, not older than ``since``
    (an entry without a readable time counts: fail closed)."""
    patterns = allow_patterns() if allow is None else list(allow)
    out = []
    for entry in entries:
        severity = entry.get("Severity") or entry.get("MessageSeverity")
        if severity not in ("Warning", "Critical"):
            continue
        created = _created(entry)
        if since is not None and created is not None and created < since:
            continue
        message_id = str(entry.get("MessageId") or "")
        message = str(entry.get("Message") or "")
        if any(p.search(message_id) or p.search(message) for p in patterns):
            continue
        out.append(
            Finding(
                _cause_of(entry),
                "log",
                f"{log} {entry.get('Id') or '?'}",
                f"{severity} {message_id} at {entry.get('Created') or 'unknown time'}: {message}",
                str(entry["Created"]) if isinstance(entry.get("Created"), str) else None,
            )
        )
    return out


def health_findings(
    system: Doc | None, chassis: Doc | None, power: Doc | None, thermal: Doc | None
) -> list[Finding]:
    """Health rollups that are not OK: system, chassis, power supplies, fans."""
    out = []
    for name, doc in (("system", system), ("chassis", chassis)):
        if not isinstance(doc, Mapping):
            continue
        for key in ("HealthRollup", "Health"):
            value = _status(doc, key)
            if value and value != "OK":
                out.append(
                    Finding(
                        "hardware_critical",
                        "health",
                        name,
                        f"{key} {value} ({doc.get('@odata.id')})",
                    )
                )
                break
    for key, cause, parts in (
        ("PowerSupplies", "psu_fault", power),
        ("Fans", "thermal", thermal),
    ):
        for part in (parts or {}).get(key) or ():
            if not isinstance(part, Mapping) or _absent(part):
                continue
            value = _status(part)
            if value and value != "OK":
                out.append(Finding(cause, "health", str(part.get("Name")), f"Health {value}"))
    return out


def sensor_findings(thermal: Doc | None, power: Doc | None) -> list[Finding]:
    """Impossible temperatures, fans pinned in a cool chassis, power redundancy lost."""
    out = []
    temps = []
    for sensor in (thermal or {}).get("Temperatures") or ():
        if not isinstance(sensor, Mapping) or _absent(sensor):
            continue
        if _MARGIN_SENSOR.search(str(sensor.get("Name") or "")):
            continue
        reading = sensor.get("ReadingCelsius")
        if isinstance(reading, int | float) and not isinstance(reading, bool):
            low, high = IMPOSSIBLE_CELSIUS
            if not low <= reading <= high:
                out.append(
                    Finding(
                        "thermal",
                        "sensor",
                        str(sensor.get("Name")),
                        f"reads {reading} C, outside {low:g}..{high:g} C: a broken sensor",
                    )
                )
            else:
                temps.append(float(reading))
    pinned = []
    for fan in (thermal or {}).get("Fans") or ():
        if not isinstance(fan, Mapping) or _absent(fan):
            continue
        reading, units, top = (
            fan.get("Reading"),
            fan.get("ReadingUnits"),
            fan.get("MaxReadingRange"),
        )
        if not isinstance(reading, int | float) or isinstance(reading, bool):
            continue
        if units == "Percent":
            percent = float(reading)
        elif isinstance(top, int | float) and top > 0:
            percent = 100.0 * reading / top
        else:
            continue  # RPM without a maximum: cannot say how hard it spins
        if percent >= PINNED_PERCENT:
            pinned.append(f"{fan.get('Name')} {percent:.0f}%")
    if pinned and temps and max(temps) < COOL_CELSIUS:
        out.append(
            Finding(
                "thermal",
                "sensor",
                "fans",
                f"pinned ({', '.join(pinned)}) while the hottest sensor reads {max(temps):g} C",
            )
        )
    for redundancy in (power or {}).get("Redundancy") or ():
        if isinstance(redundancy, Mapping) and _status(redundancy) not in (None, "OK"):
            out.append(
                Finding(
                    "psu_fault",
                    "sensor",
                    str(redundancy.get("Name") or "power redundancy"),
                    f"redundancy lost: Health {_status(redundancy)}",
                )
            )
    return out


def report(findings: Sequence[Finding]) -> dict[str, Any]:
    """``status`` (OK or FAILED), the causes named, the findings."""
    return {
        "status": "FAILED" if findings else "OK",
        "causes": sorted({f.cause for f in findings}),
        "findings": [f.public() for f in findings],
    }


def read(
    client: Any,
    *,
    system_uri: str | None = None,
    since: datetime | None = None,
    allow: Iterable[str] = (),
) -> dict[str, Any]:
    """Read one BMC's logs, rollups and sensors and judge them (:func:`report`); anything that
    cannot be read makes the status ``UNKNOWN`` with the reason (never ``OK``). ``system_uri``:
    the ComputerSystem discovery chose (else the BMC's first)."""
    from racksmith.redfish import actions, parse  # the client side; the judging above is pure
    from racksmith.redfish.errors import RedfishError

    patterns = allow_patterns(allow)
    findings: list[Finding] = []
    unread: list[str] = []

    def fetch(uri: str | None) -> Doc | None:
        if not uri:
            return None
        try:
            return client.get(uri)
        except RedfishError as exc:
            unread.append(f"{uri}: {exc.kind.value}")
            return None

    if system_uri is None:
        system_uri = actions.locate(client)[0].uri
    system = fetch(system_uri)
    chassis = fetch(next(iter(parse.links(system, "Chassis")), None) if system else None)
    thermal = fetch(parse.link(chassis, "Thermal")) if chassis else None
    power = fetch(parse.link(chassis, "Power")) if chassis else None
    for manager in client.get_collection("/redfish/v1/Managers"):
        services = parse.link(manager, "LogServices")
        if not services:
            continue
        try:
            logs = client.get_collection(services)
        except RedfishError as exc:
            unread.append(f"{services}: {exc.kind.value}")
            continue
        for service in logs:
            entries = parse.link(service, "Entries")
            if not entries:
                continue
            try:
                found = client.get_collection(entries)
            except RedfishError as exc:
                unread.append(f"{entries}: {exc.kind.value}")
                continue
            findings += log_findings(
                found, since=since, allow=patterns, log=str(service.get("Id") or entries)
            )
    findings += health_findings(system, chassis, power, thermal)
    findings += sensor_findings(thermal, power)
    out = report(findings)
    if unread:
        out["unread"] = unread
        if out["status"] == "OK":
            out["status"] = "UNKNOWN"
    return out


#: How a phase reason names its cause: ``BMC health (psu_fault): ...``; the triage takes the
#: cause from here (racksmith.triage.classify), so the decision is made once, in this module.
REASON_PREFIX = "BMC health"


def reason(cause: str, text: str) -> str:
    return f"{REASON_PREFIX} ({cause}): {text}"


def problems(health: Any, *, since: datetime | None = None, allow: Iterable[str] = ()) -> list[str]:
    """Why a host's BMC health (a :func:`report`/:func:`read` result, as discovery stored it)
    stops it, one reason per finding, each naming its triage cause; empty when it is ``OK``.

    Fail closed: no report (discovery was not asked for it), a report that is not a mapping, a
    status other than OK/FAILED, or anything left unread is ``UNKNOWN`` (cause ``bmc_error``),
    never healthy; beside findings, what was unread is said on the last finding's line.
    ``since`` drops log findings older than it (a finding without a readable time stays);
    ``allow`` adds the site's patterns over the finding's text."""
    if not isinstance(health, Mapping):
        return [
            reason(
                "bmc_error",
                "UNKNOWN: not read (discovery needs the extra bmc_health)"
                if health is None
                else f"UNKNOWN: unusable report ({type(health).__name__})",
            )
        ]
    patterns = allow_patterns(allow)[len(HARMLESS) :]
    out = []
    for raw in health.get("findings") or ():
        if not isinstance(raw, Mapping):
            out.append(reason("bmc_error", f"UNKNOWN: unusable finding {raw!r:.80}"))
            continue
        detail = str(raw.get("detail") or "")
        if raw.get("source") == "log":
            created = _created({"Created": raw.get("created")})
            if since is not None and created is not None and created < since:
                continue
            if any(p.search(detail) for p in patterns):
                continue
        out.append(
            reason(str(raw.get("cause") or "hardware_critical"), f"{raw.get('what')}: {detail}")
        )
    status = health.get("status")
    unread = [str(u) for u in health.get("unread") or ()]
    if unread and out:
        # the findings already stop the host and name what the BMC reported; what could not
        # be read is said beside the last one, not as a cause of its own that would outrank them
        out[-1] += f" (and UNKNOWN: could not read {', '.join(unread)})"
    elif unread:
        out.append(reason("bmc_error", f"UNKNOWN: could not read {', '.join(unread)}"))
    elif status not in ("OK", "FAILED"):
        out.append(reason("bmc_error", f"UNKNOWN: status {status!r}"))
    elif status == "FAILED" and not health.get("findings"):
        out.append(reason("bmc_error", "UNKNOWN: FAILED without findings"))
    return out


def parse_since(value: Any) -> datetime | None:
    """A site's ``since`` (ISO 8601, ``Z`` allowed) or None for empty; bad text is an error
    naming it. A time without a zone is refused: BMC entries carry their offset."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        when = value
    else:
        try:
            when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"BMC health since {value!r}: not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise ValueError(f"BMC health since {value!r}: give a UTC offset (Z or +00:00)")
    return when


def host_problems(health: Any, since: Any = None, allow: Any = ()) -> list[str]:
    """:func:`problems` with the site's settings as a playbook gives them (``since`` text,
    ``allow`` a list): what the discover phase quarantines a server for."""
    if isinstance(allow, str | bytes) or not isinstance(allow, Sequence):
        raise ValueError(f"BMC health allow list must be a list of patterns, not {allow!r:.80}")
    return problems(health, since=parse_since(since), allow=[str(a) for a in allow])
