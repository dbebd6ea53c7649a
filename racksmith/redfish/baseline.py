"""Firmware and BIOS baselines per host type, and the compliance verdict for each host.

A site writes one baseline file (docs/firmware.md has the format). Each *host type* is selected
by vendor profile, manufacturer and model; it names components by an identity pattern
(:mod:`racksmith.redfish.firmware`) with a minimum and a target version and whether newer is
allowed, BIOS attributes by name and value, and whether the **fleet rule** holds (every host of
the type carries the same HGX baseboard firmware: a half-updated fabric is what broke users'
fabric managers).

Verdicts, per host: ``COMPLIANT``; ``PENDING`` (every difference is already staged: a pending
BIOS value or a staged image waits for its reset or AC cycle); ``DRIFT`` (a component below its
minimum, newer than allowed, off the fleet's version, or a BIOS value wrong and not pending);
``UNKNOWN`` (the inventory or the BIOS settings could not be read, a component or attribute the
baseline names is not reported, no host type matches). Fail closed: nothing unread is ever
compliant. A drifted host is ``quarantined`` with its components named, unless the type (or the
file) says ``on_drift: warn``.

Pure: documents and host facts in (the ``public()`` dicts discovery produces), plain data out.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from racksmith.redfish import firmware as fw

COMPLIANT, PENDING, DRIFT, UNKNOWN = "COMPLIANT", "PENDING", "DRIFT", "UNKNOWN"
#: worst first: the host's verdict is its worst finding's
_SEVERITY = {DRIFT: 3, UNKNOWN: 2, PENDING: 1, COMPLIANT: 0}
ON_DRIFT = ("quarantine", "warn")
ACTIVATIONS = ("reboot", "ac-cycle", "bmc-reset", "none")


class BaselineError(ValueError):
    """The baseline file is wrong; the message names the file and the entry."""


@dataclass(frozen=True)
class ComponentRule:
    pattern: str
    minimum: str
    target: str
    allow_newer: bool = False
    activation: str | None = None  # None: by kind (activation_for)
    required: bool = True


@dataclass(frozen=True)
class HostType:
    name: str
    vendor: str | None
    manufacturer: str | None
    model: str | None
    firmware: tuple[ComponentRule, ...]
    bios: Mapping[str, Any]
    fleet_same_hgx: bool = True
    on_drift: str = "quarantine"

    def matches(self, facts: Mapping[str, Any]) -> bool:
        def same(pattern: str | None, value: Any) -> bool:
            if pattern is None:
                return True
            return isinstance(value, str) and fnmatch.fnmatchcase(value.lower(), pattern.lower())

        return (
            same(self.vendor, facts.get("vendor"))
            and same(self.manufacturer, facts.get("manufacturer"))
            and same(self.model, facts.get("model"))
        )


@dataclass(frozen=True)
class Baseline:
    types: tuple[HostType, ...]
    source: str = "baseline"

    def type_for(self, facts: Mapping[str, Any]) -> HostType | None:
        """The first host type whose vendor, manufacturer and model match."""
        return next((t for t in self.types if t.matches(facts)), None)


# -- reading the file -------------------------------------------------------------------------


def _str(entry: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise BaselineError(f"{where}: {key} is required")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BaselineError(f"{where}: {key} must be text, not {type(value).__name__}")
    return str(value)


def _rule(entry: Any, where: str) -> ComponentRule:
    if not isinstance(entry, Mapping):
        raise BaselineError(f"{where}: a firmware entry must be a mapping")
    unknown = set(entry) - {
        "component",
        "minimum",
        "target",
        "allow_newer",
        "activation",
        "required",
    }
    if unknown:
        raise BaselineError(f"{where}: unknown keys {sorted(unknown)}")
    pattern = _str(entry, "component", where, required=True) or ""
    where = f"{where} ({pattern})"
    minimum = _str(entry, "minimum", where)
    target = _str(entry, "target", where)
    if minimum is None and target is None:
        raise BaselineError(f"{where}: give a minimum, a target or both")
    minimum, target = minimum or target or "", target or minimum or ""
    if fw.compare(minimum, target) > 0:
        raise BaselineError(f"{where}: minimum {minimum} is newer than target {target}")
    activation = _str(entry, "activation", where)
    if activation is not None and activation not in ACTIVATIONS:
        raise BaselineError(f"{where}: activation {activation!r}: use {', '.join(ACTIVATIONS)}")
    for flag in ("allow_newer", "required"):
        if flag in entry and not isinstance(entry[flag], bool):
            raise BaselineError(f"{where}: {flag} must be true or false")
    return ComponentRule(
        pattern=pattern,
        minimum=minimum,
        target=target,
        allow_newer=bool(entry.get("allow_newer", False)),
        activation=activation,
        required=bool(entry.get("required", True)),
    )


def parse_baseline(doc: Any, source: str = "baseline") -> Baseline:
    """A baseline from its parsed YAML/JSON document; every mistake names the entry."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("host_types"), list):
        raise BaselineError(f"{source}: expected a mapping with a host_types list")
    default_on_drift = doc.get("on_drift", "quarantine")
    if default_on_drift not in ON_DRIFT:
        raise BaselineError(f"{source}: on_drift must be one of {ON_DRIFT}")
    types: list[HostType] = []
    for index, entry in enumerate(doc["host_types"]):
        where = f"{source}: host_types[{index}]"
        if not isinstance(entry, Mapping):
            raise BaselineError(f"{where}: must be a mapping")
        name = _str(entry, "name", where, required=True) or ""
        where = f"{source}: host type {name!r}"
        match = entry.get("match") or {}
        if not isinstance(match, Mapping) or set(match) - {"vendor", "manufacturer", "model"}:
            raise BaselineError(f"{where}: match takes vendor, manufacturer and model")
        if not match:
            raise BaselineError(f"{where}: match must name at least a vendor, maker or model")
        rules = entry.get("firmware") or []
        bios = entry.get("bios") or {}
        if not isinstance(rules, list):
            raise BaselineError(f"{where}: firmware must be a list")
        if not isinstance(bios, Mapping) or not all(isinstance(k, str) for k in bios):
            raise BaselineError(f"{where}: bios must map attribute names to values")
        on_drift = entry.get("on_drift", default_on_drift)
        if on_drift not in ON_DRIFT:
            raise BaselineError(f"{where}: on_drift must be one of {ON_DRIFT}")
        fleet = entry.get("fleet_same_hgx", True)
        if not isinstance(fleet, bool):
            raise BaselineError(f"{where}: fleet_same_hgx must be true or false")
        types.append(
            HostType(
                name=name,
                vendor=_str(match, "vendor", where),
                manufacturer=_str(match, "manufacturer", where),
                model=_str(match, "model", where),
                firmware=tuple(_rule(r, f"{where} firmware[{i}]") for i, r in enumerate(rules)),
                bios=dict(bios),
                fleet_same_hgx=fleet,
                on_drift=on_drift,
            )
        )
    names = [t.name for t in types]
    if len(set(names)) != len(names):
        raise BaselineError(f"{source}: host type names repeat: {names}")
    return Baseline(tuple(types), source)


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline file (YAML; JSON is YAML too)."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"{path}: {exc.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BaselineError(f"{path}: not YAML: {exc}") from None
    return parse_baseline(doc, str(path))


def load(source: Any) -> Baseline:
    """A baseline given as a file path, or as the document itself (a mapping: an inventory's
    ``racksmith_firmware_baseline`` written inline, as the lab's group_vars do, so that every
    inventory linking those group_vars carries it without a path to resolve)."""
    if isinstance(source, Mapping):
        return parse_baseline(dict(source), "racksmith_firmware_baseline (inline)")
    if not isinstance(source, str | Path) or not str(source):
        raise BaselineError(f"racksmith_firmware_baseline: a file or a mapping, not {source!r:.80}")
    return load_baseline(source)


# -- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One component or attribute: what the host has, what the baseline wants, what to do."""

    what: str  # firmware, bios, fleet
    name: str  # component identity or attribute name
    status: str  # COMPLIANT, PENDING, DRIFT, UNKNOWN
    current: Any = None
    wanted: Any = None
    pending: Any = None
    action: str | None = None  # upgrade, downgrade, set; None when nothing to do
    activation: str | None = None  # reboot, ac-cycle, bmc-reset, none
    reason: str = ""


@dataclass(frozen=True)
class HostVerdict:
    host: str
    host_type: str | None
    status: str
    quarantined: bool
    findings: tuple[Finding, ...] = ()
    reasons: tuple[str, ...] = field(default=())

    def public(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = [asdict(f) for f in self.findings]
        out["reasons"] = list(self.reasons)
        return out


_BIOS_WORDS = ("bios", "uefi", "system rom")
_BMC_WORDS = ("bmc", "idrac", "ilo", "xcc")


def activation_for(item: Mapping[str, Any]) -> str:
    """How a new image of this component takes effect, when the baseline does not say: the HGX
    baseboard by an AC power cycle (NVIDIA's fwpkg bundles activate that way), a BMC by its own
    reset, anything else at the host's next reboot."""
    if item.get("hgx"):
        return "ac-cycle"
    name = f"{item.get('component', '')} {item.get('name') or ''}".lower()
    if any(w in name for w in _BIOS_WORDS):
        return "reboot"
    if any(w in name for w in _BMC_WORDS):
        return "bmc-reset"
    return "reboot"


def _firmware_findings(rule: ComponentRule, items: Sequence[Mapping[str, Any]]) -> list[Finding]:
    # one running image per component (Dell lists it twice: Installed- and Current-)
    first: dict[str, Mapping[str, Any]] = {}
    for item in items:
        if item.get("role") == "active":
            first.setdefault(str(item.get("component")), item)
    active = list(first.values())
    staged = {i["component"]: i for i in items if i.get("role") == "staged" and i.get("version")}
    matched = [i for i in active if fnmatch.fnmatchcase(str(i.get("component")), rule.pattern)]
    if not matched:
        if not rule.required:
            return []
        return [
            Finding(
                "firmware",
                rule.pattern,
                UNKNOWN,
                wanted=rule.target,
                reason="no component of the inventory matches",
            )
        ]
    out = []
    for item in matched:
        name = str(item["component"])
        activation = rule.activation or activation_for(item)
        current = item.get("version")
        if not current:
            out.append(
                Finding("firmware", name, UNKNOWN, None, rule.target, reason="no version reported")
            )
            continue
        below_min = fw.compare(current, rule.minimum) < 0
        vs_target = fw.compare(current, rule.target)
        if vs_target == 0 or (vs_target > 0 and rule.allow_newer):
            out.append(Finding("firmware", name, COMPLIANT, current, rule.target))
            continue
        if not below_min and vs_target < 0:
            out.append(
                Finding(
                    "firmware",
                    name,
                    COMPLIANT,
                    current,
                    rule.target,
                    action="upgrade",
                    activation=activation,
                    reason=f"at or above minimum {rule.minimum}, below target",
                )
            )
            continue
        action = "upgrade" if vs_target < 0 else "downgrade"
        why = f"below minimum {rule.minimum}" if below_min else "newer than target, not allowed"
        waiting = staged.get(name)
        if waiting and fw.compare(str(waiting["version"]), rule.target) == 0:
            out.append(
                Finding(
                    "firmware",
                    name,
                    PENDING,
                    current,
                    rule.target,
                    pending=waiting["version"],
                    action=action,
                    activation=activation,
                    reason=f"{why}; the target is staged, waiting for {activation}",
                )
            )
            continue
        out.append(
            Finding("firmware", name, DRIFT, current, rule.target, None, action, activation, why)
        )
    return out


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return a is not None and b is not None and str(a) == str(b)


def registry_problems(
    attributes: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Attribute -> why the baseline's value cannot be right by the BMC's own registry: unknown
    name, read-only, a value outside the enumeration, an integer out of bounds, a string too
    long or short."""
    problems: dict[str, str] = {}
    for name, value in attributes.items():
        entry = registry.get(name)
        if entry is None:
            problems[name] = "not in the attribute registry"
            continue
        if entry.get("ReadOnly") or entry.get("Immutable"):
            problems[name] = "read-only in the attribute registry"
            continue
        kind = str(entry.get("Type") or "")
        if kind == "Enumeration":
            allowed = [v.get("ValueName") for v in entry.get("Value") or () if isinstance(v, dict)]
            if allowed and not any(_same(value, a) for a in allowed):
                problems[name] = f"{value!r} is not one of {allowed}"
        elif kind == "Integer":
            if isinstance(value, bool) or not isinstance(value, int):
                problems[name] = f"{value!r} is not an integer"
            else:
                low, high = entry.get("LowerBound"), entry.get("UpperBound")
                if (isinstance(low, int) and value < low) or (
                    isinstance(high, int) and value > high
                ):
                    problems[name] = f"{value} is outside {low}..{high}"
        elif kind == "Boolean" and not isinstance(value, bool):
            problems[name] = f"{value!r} is not true or false"
        elif kind == "String":
            text = str(value)
            low, high = entry.get("MinLength"), entry.get("MaxLength")
            if (isinstance(low, int) and len(text) < low) or (
                isinstance(high, int) and len(text) > high
            ):
                problems[name] = f"length {len(text)} is outside {low}..{high}"
    return problems


def _bios_findings(wanted: Mapping[str, Any], bios: Mapping[str, Any] | None) -> list[Finding]:
    if not wanted:
        return []
    if bios is None:
        return [
            Finding("bios", name, UNKNOWN, wanted=value, reason="BIOS settings were not read")
            for name, value in wanted.items()
        ]
    current = bios.get("current") or {}
    pending = bios.get("pending") or {}
    known = bios.get("pending_known", True)
    out = []
    for name, value in wanted.items():
        if name not in current:
            out.append(Finding("bios", name, UNKNOWN, wanted=value, reason="not reported"))
            continue
        now = current[name]
        waiting = pending.get(name)
        if not known:
            out.append(
                Finding("bios", name, UNKNOWN, now, value, reason="pending values unreadable")
            )
        elif name in pending and _same(waiting, value) and not _same(now, value):
            out.append(
                Finding("bios", name, PENDING, now, value, waiting, "set", "reboot", "pending")
            )
        elif name in pending and not _same(waiting, value):
            out.append(
                Finding(
                    "bios",
                    name,
                    DRIFT,
                    now,
                    value,
                    waiting,
                    "set",
                    "reboot",
                    "a pending value would replace it at the next reboot",
                )
            )
        elif _same(now, value):
            out.append(Finding("bios", name, COMPLIANT, now, value))
        else:
            out.append(Finding("bios", name, DRIFT, now, value, None, "set", "reboot", "differs"))
    return out


def _fleet_findings(
    members: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
) -> dict[str, list[Finding]]:
    """Host -> findings of the fleet rule: per HGX component, the version most hosts carry (the
    newest on a tie) is the fleet's; a host on another version drifts."""
    versions: dict[str, dict[str, str]] = {}
    for host, items in members:
        for item in items:
            if item.get("hgx") and item.get("role") == "active" and item.get("version"):
                versions.setdefault(str(item["component"]), {})[host] = str(item["version"])
    out: dict[str, list[Finding]] = {}
    for component, by_host in sorted(versions.items()):
        counts = Counter(by_host.values())
        if len(counts) < 2:
            continue
        reference = max(counts, key=lambda v: (counts[v], fw.version_key(v)))
        spread = ", ".join(f"{n} at {v}" for v, n in counts.most_common())
        for host, version in by_host.items():
            if version == reference:
                continue
            action = "upgrade" if fw.compare(version, reference) < 0 else "downgrade"
            out.setdefault(host, []).append(
                Finding(
                    "fleet",
                    component,
                    DRIFT,
                    version,
                    reference,
                    action=action,
                    activation="ac-cycle",
                    reason=f"hosts of this type carry different versions ({spread})",
                )
            )
    return out


def _host_name(result: Mapping[str, Any]) -> str:
    return str(result.get("service_tag") or result.get("bmc") or "?")


def evaluate(results: Iterable[Mapping[str, Any]], baseline: Baseline) -> list[HostVerdict]:
    """A verdict per discovery result (``BmcResult.as_dict()``), in the results' order."""
    rows = list(results)
    typed: list[tuple[Mapping[str, Any], HostType | None]] = [
        (r, baseline.type_for(r)) for r in rows
    ]
    fleet: dict[str, list[Finding]] = {}
    for host_type in baseline.types:
        if not host_type.fleet_same_hgx:
            continue
        members = [
            (_host_name(r), r.get("firmware") or [])
            for r, t in typed
            if t is host_type and not r.get("firmware_error") and r.get("firmware")
        ]
        for host, findings in _fleet_findings(members).items():
            fleet.setdefault(host, []).extend(findings)

    verdicts = []
    for result, host_type in typed:
        host = _host_name(result)
        reasons: list[str] = []
        findings: list[Finding] = []
        if result.get("error") and not result.get("serial"):
            # first: a BMC that gave no facts matches no host type, and that is not the news
            reasons.append(f"the BMC could not be read: {result.get('error')}")
        elif host_type is None:
            reasons.append(
                f"no host type of {baseline.source} matches vendor {result.get('vendor')!r}, "
                f"manufacturer {result.get('manufacturer')!r}, model {result.get('model')!r}"
            )
        else:
            if host_type.firmware:
                if result.get("firmware_error"):
                    reasons.append(f"firmware inventory unreadable: {result['firmware_error']}")
                elif "firmware" not in result:
                    reasons.append("firmware inventory not read (discovery extra 'firmware')")
                else:
                    for rule in host_type.firmware:
                        findings += _firmware_findings(rule, result["firmware"])
            bios = result.get("bios")
            registry = bios.get("registry") if isinstance(bios, Mapping) else None
            wanted = dict(host_type.bios)
            if wanted and isinstance(registry, Mapping):
                # a value the BMC's own registry rejects cannot be judged (nor ever applied)
                for name, problem in registry_problems(wanted, registry).items():
                    reasons.append(f"baseline BIOS attribute {name}: {problem}")
                    findings.append(
                        Finding("bios", name, UNKNOWN, wanted=wanted.pop(name), reason=problem)
                    )
            findings += _bios_findings(wanted, bios if isinstance(bios, Mapping) else None)
            findings += fleet.get(host, [])
        status = max((f.status for f in findings), key=_SEVERITY.__getitem__, default=COMPLIANT)
        if reasons and _SEVERITY[status] < _SEVERITY[UNKNOWN]:
            status = UNKNOWN
        drifted = sorted({f.name for f in findings if f.status == DRIFT})
        quarantined = status == DRIFT and (host_type is None or host_type.on_drift == "quarantine")
        if status == DRIFT:
            verb = "QUARANTINED" if quarantined else "warning"
            reasons.append(f"{verb}: drift in {', '.join(drifted)}")
        verdicts.append(
            HostVerdict(
                host=host,
                host_type=host_type.name if host_type else None,
                status=status,
                quarantined=quarantined,
                findings=tuple(findings),
                reasons=tuple(reasons),
            )
        )
    return verdicts


def validate_bios_against_registry(
    baseline: Baseline, type_name: str, registry: Mapping[str, Mapping[str, Any]]
) -> dict[str, str]:
    """The baseline's BIOS attributes of one host type checked against a registry (the BMC's
    ``AttributeRegistry`` entries by name): attribute -> problem, empty when all are valid."""
    host_type = next((t for t in baseline.types if t.name == type_name), None)
    if host_type is None:
        raise BaselineError(f"{baseline.source}: no host type {type_name!r}")
    return registry_problems(host_type.bios, registry)


def matrix(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The firmware matrix: component x version x host count, over the running images."""
    counts: Counter[tuple[str, str]] = Counter()
    for result in results:
        running = {
            (str(item["component"]), str(item.get("version")))
            for item in result.get("firmware") or ()
            if item.get("role") == "active"
        }
        counts.update(running)  # once per host, though Dell lists Installed- and Current-
    return [{"component": c, "version": v, "hosts": n} for (c, v), n in sorted(counts.items())]


def report(results: Iterable[Mapping[str, Any]], baseline: Baseline) -> dict[str, Any]:
    """The compliance report as plain JSON data: a verdict per host, counts, the matrix."""
    rows = list(results)
    verdicts = evaluate(rows, baseline)
    return {
        "baseline": baseline.source,
        "summary": dict(Counter(v.status for v in verdicts)),
        "quarantined": [v.host for v in verdicts if v.quarantined],
        "hosts": [v.public() for v in verdicts],
        "matrix": matrix(rows),
    }


def results_from_hostvars(hostvars: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Discovery results rebuilt from the Redfish inventory's host variables (``redfish_*``,
    prefix dropped), one per host, keyed back by ``inventory_host``: how a playbook hands its
    hosts to :func:`evaluate` / :func:`quarantine_reasons`."""
    out = []
    for host, variables in hostvars.items():
        # only the redfish_* values are read (Ansible's hostvars template each value on access)
        result = {
            str(key).removeprefix("redfish_"): variables[key]
            for key in variables
            if str(key).startswith("redfish_")
        }
        result["inventory_host"] = host
        out.append(result)
    return out


def _describe(finding: Finding) -> str:
    if finding.action:
        return (
            f"{finding.name} {finding.current} -> {finding.wanted} "
            f"({finding.action}, {finding.activation or 'no activation'})"
        )
    return f"{finding.name}: {finding.reason}"


def phase_verdicts(
    results: Sequence[Mapping[str, Any]], baseline: Baseline
) -> dict[str, dict[str, str]]:
    """What the discover phase does with each host: ``quarantine`` (host -> reason, for every
    QUARANTINED host: the drifted components with current and wanted versions, action and
    activation) and ``warn`` (host -> reason: drift under ``on_drift: warn``, and UNKNOWN, which
    is never compliant but is not proof of drift). Hosts are named by ``inventory_host`` when
    the results carry it (:func:`results_from_hostvars`)."""
    out: dict[str, dict[str, str]] = {"quarantine": {}, "warn": {}}
    for result, verdict in zip(results, evaluate(results, baseline), strict=True):
        host = str(result.get("inventory_host") or verdict.host)
        if verdict.status == DRIFT:
            first: dict[str, Finding] = {}  # a component off by rule and by fleet: once
            for finding in verdict.findings:
                if finding.status == DRIFT:
                    first.setdefault(finding.name, finding)
            drift = "; ".join(_describe(f) for f in first.values())
            key = "quarantine" if verdict.quarantined else "warn"
            out[key][host] = f"firmware/BIOS drift from baseline: {drift}"
        elif verdict.status == UNKNOWN:
            unknown = [_describe(f) for f in verdict.findings if f.status == UNKNOWN]
            why = "; ".join([*verdict.reasons, *unknown])
            out["warn"][host] = f"firmware/BIOS compliance UNKNOWN: {why}"
    return out


def quarantine_reasons(results: Sequence[Mapping[str, Any]], baseline: Baseline) -> dict[str, str]:
    """Host -> why it is quarantined (:func:`phase_verdicts`' ``quarantine``)."""
    return phase_verdicts(results, baseline)["quarantine"]
