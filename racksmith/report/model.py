"""Typed run report: per-host, per-phase outcomes, what each role skipped, each host's final
state.

Pure data and rendering; the Ansible callback adapts task events into :meth:`RunReport.record`
(and the skips roles announce, :func:`skips_of`, into :meth:`RunReport.skip`) and host
variables into :meth:`RunReport.annotate`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from racksmith.health.golden import FIT
from racksmith.secrets import redact

#: v3: the controller (``localhost``, where controller-side plays run) is no longer one of
#: ``hosts``: it has no result of a machine (it was listed INCOMPLETE); see ``controller``.
SCHEMA = "racksmith.run-report/v3"

PHASES = ("preflight", "discover", "enlist", "deploy", "configure", "validate", "reprovision")

#: Task statuses as Ansible reports them, in order of precedence for a phase's summary.
STATUSES = ("unreachable", "failed", "changed", "ok", "skipped")

#: The controller's name in the inventory: its plays (preflight's checks, discovery's summary,
#: the golden set) are recorded like a host's, and reported apart from the machines.
CONTROLLER = "localhost"

#: Redfish host variables the report keeps (identity and what a ticket needs), unprefixed.
_REDFISH_KEYS = (
    "bmc",
    "service_tag",
    "serial",
    "model",
    "bmc_firmware",
    "bios_version",
    "power_state",
    "health",
    "pxe_mac",
    "error_kind",
)
#: Registered results of the MAAS phases that carry a ``triage`` on failure.
MAAS_RESULTS = ("racksmith_maas_enlist", "racksmith_maas_deploy")
#: Every host variable the report reads (the callback fetches exactly these).
HOST_VARS = (
    "racksmith_location",
    "racksmith_quarantine_reason",
    "racksmith_failed_phase",
    "racksmith_failure_reason",
    "racksmith_health_verdict",
    "racksmith_health_reasons",
    *(f"redfish_{k}" for k in _REDFISH_KEYS),
    "redfish_gpus",
    "redfish_nics",
    "redfish_firmware",
    *MAAS_RESULTS,
)


#: The key of a task result that announces a skip (the action ``racksmith.core.role_skip``
#: returns it; docs/contracts.md, "What a role skips").
SKIP_KEY = "racksmith_skip"
#: The part a skip names when the whole role is skipped.
WHOLE_ROLE = "all"
#: Host names listed after each line of the text report's skip summary.
_SKIP_NAMES = 5


@dataclass(frozen=True)
class Skip:
    """One part of a role that did not apply to a host, and why (a person can act on it: the
    reason names the hardware that is missing or the variable that would force it)."""

    role: str
    part: str
    reason: str

    @property
    def what(self) -> str:
        """``role`` for the whole role, else ``role/part``: the name filters and counts use."""
        return self.role if self.part == WHOLE_ROLE else f"{self.role}/{self.part}"

    @classmethod
    def of(cls, data: Any) -> Skip:
        """A skip from its announcement ``{role, part, reason}``; anything else is a
        ValueError that says what is wrong (a skip the report drops silently is a lie)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{SKIP_KEY}: expected a mapping of role, part, reason: {data!r}")
        values = {}
        for key in ("role", "part", "reason"):
            value = data.get(key, WHOLE_ROLE if key == "part" else None)
            text = " ".join(str(value).split()) if isinstance(value, str) else ""
            if not text:
                raise ValueError(f"{SKIP_KEY}: {key!r} is missing or empty in {dict(data)!r}")
            values[key] = redact(text)[:400]
        return cls(**values)


def skips_of(result: Mapping[str, Any]) -> list[Skip]:
    """The skips a task result announces: its own, or each loop item's (none for any other
    task). Raises ValueError for an announcement that is not ``{role, part, reason}``."""
    found = [Skip.of(result[SKIP_KEY])] if SKIP_KEY in result else []
    for item in result.get("results") or []:
        if isinstance(item, Mapping) and SKIP_KEY in item and not item.get("skipped"):
            found.append(Skip.of(item[SKIP_KEY]))
    return found


def redfish_facts(hostvars: Mapping[str, Any]) -> dict[str, Any]:
    """The Redfish facts worth keeping in a report: scalars redacted, lists as counts."""
    out: dict[str, Any] = {}
    for key in _REDFISH_KEYS:
        value = hostvars.get(f"redfish_{key}")
        if value not in (None, ""):
            out[key] = redact(str(value))
    for key, name in (("redfish_gpus", "gpu_count"), ("redfish_nics", "nic_count")):
        if isinstance(hostvars.get(key), list):
            out[name] = len(hostvars[key])
    firmware = hostvars.get("redfish_firmware")  # discovery's extra "firmware" (issue 21)
    if isinstance(firmware, list):
        out["firmware"] = firmware_versions(firmware)
    return out


def firmware_versions(items: list[Any]) -> dict[str, str]:
    """Every firmware inventory member as ``component`` (``component [role: Id]`` for an image
    that is not the running one: staged, backup, rollback) -> version ("?" when the BMC names
    none); a component listed twice (Dell's Installed- and Current-) once."""
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, Mapping) or not item.get("component"):
            continue
        role = str(item.get("role") or "active")
        name = str(item["component"])
        if role != "active":
            name = f"{name} [{role}: {item.get('id')}]"
        out.setdefault(redact(name), redact(str(item.get("version") or "?")))
    return dict(sorted(out.items()))


def maas_triage(hostvars: Mapping[str, Any]) -> dict[str, Any]:
    """MAAS's triage of the host's failed enlist/deploy step, if a phase registered one."""
    for key in MAAS_RESULTS:
        result = hostvars.get(key)
        triage = result.get("triage") if isinstance(result, Mapping) else None
        if isinstance(triage, Mapping):
            return {
                "cause": redact(str(triage.get("cause") or "")),
                "status": str(triage.get("status_name") or ""),
                "events": [redact(str(e)) for e in (triage.get("events") or [])[:10]],
                "log_tail": [redact(str(e)) for e in (triage.get("log_tail") or [])[-10:]],
            }
    return {}


@dataclass
class PhaseOutcome:
    """Counts of task results one host had in one phase, and the first failure's reason."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0
    unreachable: int = 0
    reason: str | None = None

    @property
    def state(self) -> str:
        for status in STATUSES:
            if getattr(self, status):
                return status
        return "-"


@dataclass
class Triaged:
    """The cause triage named for a host that did not end GOLDEN, and its ticket."""

    cause: str
    title: str
    action: str
    ticket: str | None = None  # Markdown ticket, relative to the run directory
    url: str | None = None  # the ticket in a real tracker (the report's ticket URL template)


_OUTCOME_KEYS = tuple(f.name for f in fields(PhaseOutcome))


@dataclass
class HostRecord:
    name: str
    phases: dict[str, PhaseOutcome] = field(default_factory=dict)
    quarantine_reason: str | None = None
    failed_phase: str | None = None
    failure_reason: str | None = None
    health_verdict: str | None = None
    health_reasons: list[str] = field(default_factory=list)
    #: The host's golden-set entry (golden-set.json), when validate wrote one for it.
    golden: dict[str, Any] | None = None
    #: What the BMC said (Redfish facts without the ``redfish_`` prefix, counts for lists).
    facts: dict[str, Any] = field(default_factory=dict)
    #: MAAS's triage of a failed enlist or deploy (cause, events, log tail).
    maas: dict[str, Any] = field(default_factory=dict)
    triage: Triaged | None = None
    #: What roles left out on this host and why, in the order they said so.
    skips: list[Skip] = field(default_factory=list)
    #: Where the server is (the inventory's ``racksmith_location``: site/room/rack/U).
    location: str | None = None
    #: Its result in the run before this one (the health history), None when it was not in it.
    previous_result: str | None = None

    @property
    def result(self) -> str:
        """Where the host ended up, the one word an operator scans for.

        Fit is never decided here, nor read from a fact: the host's golden-set entry carries
        the verdict of :func:`racksmith.health.golden.judge`, so this column and
        ``golden-set.json`` agree. A host without an entry (the run stopped before the golden
        set was written) is INCOMPLETE, whatever its health facts say.
        """
        if self.quarantine_reason:
            return "QUARANTINED"
        if self.failed_phase or self.failure_reason:
            return f"FAILED:{self.failed_phase or '?'}"
        for phase, outcome in self.phases.items():
            if outcome.failed or outcome.unreachable:
                return f"FAILED:{phase}"
        verdict = (self.golden or {}).get("verdict")
        if verdict == FIT:
            return "GOLDEN"
        if verdict:
            return str(verdict).replace(" ", "_")
        return "INCOMPLETE"

    def cell(self, phase: str) -> str:
        """What the table shows for one phase: the phase's own verdict wins over task counts
        (a discovery that recorded an unreachable BMC ran its tasks fine, yet failed)."""
        if phase == self.failed_phase:
            return "FAILED"
        return self.phases[phase].state if phase in self.phases else "-"

    @property
    def reasons(self) -> list[str]:
        """Every reason once: a phase often records as a fact what its failed task said,
        sometimes with a prefix ("h1: deploy failed: <cause>"), so one that contains or is
        contained in a reason already listed adds nothing."""
        out: list[str] = []
        seen: list[str] = []

        def add(label: str, text: str) -> None:
            if not any(text in s or s in text for s in seen):
                seen.append(text)
                out.append(f"{label}: {text}")

        if self.quarantine_reason:
            add("quarantined", self.quarantine_reason)
        if self.failure_reason:
            add(self.failed_phase or "failed", self.failure_reason)
        for phase, outcome in self.phases.items():
            if outcome.reason:
                add(phase, outcome.reason)
        for reason in self.health_reasons:
            add("health", reason)
        for reason in (self.golden or {}).get("reasons") or []:
            if not str(reason).startswith("failed before validation:"):
                add("health", str(reason))
        return out


_RECORD_FIELDS = tuple(
    f for f in fields(HostRecord) if f.name not in ("phases", "health_reasons", "triage", "skips")
)


def _record_dict(rec: HostRecord) -> dict[str, Any]:
    """A host record as report.json writes it, less its ``result`` (a machine's or the
    controller's, which differ)."""
    out = {f.name: getattr(rec, f.name) for f in _RECORD_FIELDS}
    out["phases"] = {
        phase: {**{k: getattr(o, k) for k in _OUTCOME_KEYS}, "state": o.state}
        for phase, o in rec.phases.items()
    }
    out["health_reasons"] = list(rec.health_reasons)
    out["triage"] = asdict(rec.triage) if rec.triage else None
    out["skips"] = [asdict(s) for s in rec.skips]
    out["reasons"] = rec.reasons
    return out


@dataclass
class RunReport:
    run_id: str
    run_dir: str
    started: str
    finished: str | None = None
    hosts: dict[str, HostRecord] = field(default_factory=dict)
    #: The run this one is compared with (the last one in the health history before it).
    previous_run: str | None = None

    def compare(self, previous: Mapping[str, Any] | None, run_id: str | None = None) -> None:
        """Note each machine's result in ``previous`` (host -> result of the run before, from
        the health history); None: no earlier run, nothing is "new"."""
        self.previous_run = run_id if previous is not None else None
        for rec in self.machines():
            rec.previous_result = (previous or {}).get(rec.name)

    def since_last(self, rec: HostRecord) -> str:
        """What changed for a host since the last run: ``new host``, ``was <RESULT>``, or ''
        (same result, or no earlier run to compare with)."""
        if not self.previous_run:
            return ""
        if rec.previous_result is None:
            return "new host"
        return "" if rec.previous_result == rec.result else f"was {rec.previous_result}"

    def host(self, name: str) -> HostRecord:
        return self.hosts.setdefault(name, HostRecord(name))

    def record(self, host: str, phase: str, status: str, message: str | None = None) -> None:
        """Count one task result; keep the first failure message of the phase (redacted)."""
        if status not in STATUSES:
            raise ValueError(f"unknown task status {status!r}")
        outcome = self.host(host).phases.setdefault(phase, PhaseOutcome())
        setattr(outcome, status, getattr(outcome, status) + 1)
        if status in ("failed", "unreachable") and message and outcome.reason is None:
            outcome.reason = redact(" ".join(message.split()))[:400]

    def enter(self, host: str) -> None:
        """Note that a host took part in the run, before (or without) a task result of its own:
        a phase whose decisions run once for all its hosts (discover's judgements, enlist's
        batch) still lists every host it judged. No phase is added: results count there, and
        whether an earlier failure kept the host out of a later play is Ansible's to know."""
        self.host(host)

    def skip(self, host: str, skip: Skip) -> None:
        """Note that a role skipped a part on a host; a later announcement of the same role and
        part (configure applied again, by reprovision) replaces the earlier one."""
        skips = self.host(host).skips
        for i, known in enumerate(skips):
            if (known.role, known.part) == (skip.role, skip.part):
                skips[i] = skip
                return
        skips.append(skip)

    def skipped(self) -> list[tuple[Skip, list[str]]]:
        """Each distinct skip (role, part and reason) with the machines that had it, sorted by
        role and part, the most hosts first: the summary a person reads before any host."""
        hosts: dict[Skip, list[str]] = {}
        for rec in self.machines():
            for skip in rec.skips:
                hosts.setdefault(skip, []).append(rec.name)
        return sorted(
            hosts.items(), key=lambda kv: (kv[0].role, kv[0].part, -len(kv[1]), kv[0].reason)
        )

    def annotate(self, host: str, hostvars: dict[str, Any]) -> None:
        """Take the racksmith_* facts that phases set on a host (see CONTRACTS)."""
        rec = self.host(host)

        def text(key: str) -> str | None:
            value = hostvars.get(key)
            return redact(str(value)) if value not in (None, "") else None

        rec.quarantine_reason = text("racksmith_quarantine_reason") or rec.quarantine_reason
        rec.failed_phase = text("racksmith_failed_phase") or rec.failed_phase
        rec.failure_reason = text("racksmith_failure_reason") or rec.failure_reason
        rec.location = text("racksmith_location") or rec.location
        rec.health_verdict = text("racksmith_health_verdict") or rec.health_verdict
        reasons = hostvars.get("racksmith_health_reasons") or []
        if isinstance(reasons, list):
            rec.health_reasons = [redact(str(r)) for r in reasons]
        rec.facts = redfish_facts(hostvars) or rec.facts
        rec.maas = maas_triage(hostvars) or rec.maas

    def attach_golden(self, golden: Mapping[str, Any]) -> None:
        """Take each host's entry of a golden set (golden-set.json) as its fit verdict."""
        for name, entry in (golden.get("hosts") or {}).items():
            if isinstance(entry, Mapping):
                self.host(name).golden = {
                    "verdict": entry.get("verdict"),
                    "reasons": [redact(str(r)) for r in entry.get("reasons") or []],
                    "load": entry.get("load"),
                    "standin": entry.get("standin"),
                }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunReport:
        """Rebuild a report from its ``report.json`` (derived keys are recomputed, not read)."""
        try:
            report = cls(
                run_id=str(data["run_id"]),
                run_dir=str(data.get("run_dir") or ""),
                started=str(data.get("started") or ""),
                finished=data.get("finished"),
            )
            report.previous_run = data.get("previous_run")
            # v2 listed the controller among the hosts; v3 keeps it apart (same fields)
            hosts = dict(data.get("hosts") or {})
            if data.get("controller"):
                hosts[CONTROLLER] = data["controller"]
            for name, host in hosts.items():
                rec = report.host(name)
                for phase, outcome in (host.get("phases") or {}).items():
                    rec.phases[phase] = PhaseOutcome(
                        **{k: outcome[k] for k in _OUTCOME_KEYS if k in outcome}
                    )
                for key in (
                    "quarantine_reason",
                    "failed_phase",
                    "failure_reason",
                    "health_verdict",
                    "location",
                    "previous_result",
                ):
                    setattr(rec, key, host.get(key))
                rec.health_reasons = list(host.get("health_reasons") or [])
                rec.golden = host.get("golden")
                rec.facts = dict(host.get("facts") or {})
                rec.maas = dict(host.get("maas") or {})
                for skip in host.get("skips") or []:
                    report.skip(name, Skip.of(skip))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a racksmith run report: {exc!r}") from exc
        return report

    # -- rendering -------------------------------------------------------------------------

    def phases_seen(self) -> list[str]:
        seen = {p for rec in self.hosts.values() for p in rec.phases}
        return [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (built by hand: ``dataclasses.asdict`` took most of the time at 512
        hosts), with the derived keys readers want: result, reasons, each phase's state.
        ``hosts`` are the machines; the controller's own plays are under ``controller``."""
        hosts = {}
        for rec in self.machines():
            host = _record_dict(rec)
            host["result"] = rec.result
            hosts[rec.name] = host
        controller = None
        if CONTROLLER in self.hosts:
            controller = _record_dict(self.hosts[CONTROLLER])
            controller["result"] = self.controller_result()
        return {
            "schema": SCHEMA,
            "run_id": self.run_id,
            "run_dir": self.run_dir,
            "started": self.started,
            "finished": self.finished,
            "previous_run": self.previous_run,
            "hosts": hosts,
            "controller": controller,
            "golden": self.golden_hosts(),
            "summary": self.summary(),
            "firmware_matrix": self.firmware_matrix(),
        }

    def to_json(self) -> str:
        """One JSON document (no indent: the C encoder is ~10x faster at 500 hosts; use
        ``racksmith report RUN_DIR --json | jq`` to read it)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rec in self.machines():
            counts[rec.result] = counts.get(rec.result, 0) + 1
        return dict(sorted(counts.items()))

    def firmware_matrix(self) -> list[dict[str, Any]]:
        """Component x version x host count over the machines whose firmware inventory was
        read (``facts.firmware``): a fleet on mixed versions shows as two rows."""
        counts: dict[tuple[str, str], int] = {}
        for rec in self.machines():
            for component, version in (rec.facts.get("firmware") or {}).items():
                counts[(component, version)] = counts.get((component, version), 0) + 1
        return [{"component": c, "version": v, "hosts": n} for (c, v), n in sorted(counts.items())]

    def golden_hosts(self) -> list[str]:
        return [rec.name for rec in self.machines() if rec.result == "GOLDEN"]

    def machines(self) -> list[HostRecord]:
        """Host records other than the controller, sorted by name."""
        return [self.hosts[n] for n in sorted(self.hosts) if n != CONTROLLER]

    def controller_result(self) -> str | None:
        """``FAILED:<phase>`` for the first phase whose controller-side tasks failed, else
        ``OK`` (None without controller tasks): not a machine's result, it is never INCOMPLETE
        or GOLDEN."""
        rec = self.hosts.get(CONTROLLER)
        if rec is None:
            return None
        for phase, outcome in rec.phases.items():
            if outcome.failed or outcome.unreachable:
                return f"FAILED:{phase}"
        return "OK"

    def render_text(self, *, skips_per_host: bool = False) -> str:
        """A fixed-width table: one row per host, one column per phase, then the reasons.

        Once triage has run, a ``cause`` column names each failed host's cause and the lines
        below the table say its action and where its ticket is. What roles skipped follows, one
        line per distinct reason with its host count (every host's own list with
        ``skips_per_host``)."""
        phases = self.phases_seen()
        records = self.machines()
        triaged = any(rec.triage for rec in records)
        rows = [["host", *phases, "result", *(["cause"] if triaged else [])]]
        controller = self.hosts.get(CONTROLLER)
        if controller and any(o.failed or o.unreachable for o in controller.phases.values()):
            records.insert(0, controller)
        for rec in records:
            cells = [rec.cell(p) for p in phases]
            cause = [rec.triage.cause if rec.triage else "-"] if triaged else []
            rows.append([rec.name, *cells, rec.result, *cause])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"racksmith run {self.run_id}  ({self.run_dir})"]
        for row in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        summary = ", ".join(f"{n} {k}" for k, n in self.summary().items()) or "no hosts"
        lines.append(f"hosts: {summary}")
        for rec in records:
            for reason in rec.reasons:
                lines.append(f"  {rec.name}: {reason}")
            if rec.triage:
                ticket = f", ticket {rec.triage.ticket}" if rec.triage.ticket else ""
                lines.append(f"  {rec.name}: -> {rec.triage.title}: {rec.triage.action}{ticket}")
        lines += skipped_lines(self.skipped())
        if skips_per_host:
            lines += [
                f"  {rec.name}: {skip.what}: {skip.reason}"
                for rec in self.machines()
                for skip in rec.skips
            ]
        return "\n".join(lines)


def skipped_lines(skipped: Iterable[tuple[Skip, list[str]]]) -> list[str]:
    """The text report's skip summary: ``role/part (N hosts): reason  [names]``, nothing when
    no role skipped anything."""
    rows = list(skipped)
    if not rows:
        return []
    lines = ["skipped by role (did not apply; why):"]
    for skip, hosts in rows:
        names = ", ".join(hosts[:_SKIP_NAMES])
        if len(hosts) > _SKIP_NAMES:
            names += f", +{len(hosts) - _SKIP_NAMES} more"
        count = f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}"
        lines.append(f"  {skip.what} ({count}): {skip.reason}  [{names}]")
    return lines
