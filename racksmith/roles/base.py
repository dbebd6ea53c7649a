"""Role base's one host probe, parsed.

The role asks the host everything it decides on in one command (``tasks/main.yml``, "Probe
the host"), instead of a stat per path, a command per sysctl and ``package_facts`` (whose
110-250 KB result Ansible deep-copies into every variable lookup). The command prints
marker lines, then ``apt-cache policy chrony``:

    @cpufreq yes|no           the cpufreq sysfs file exists
    @governor_unit yes|no     the boot-time governor unit is written
    @writable KEY             a sysctl key whose /proc/sys file the host may write
    @package NAME STATUS      ``dpkg-query -W -f '${Package} ${db:Status-Abbrev}'``
    @policy                   the rest is ``apt-cache policy`` output

Parsing is pure and fails closed: output without the markers (a probe that did not run to its
end) is an error naming what is missing, never a host with nothing installed.

The same command is also the role's verify-first read (issue 25): it is one
:mod:`racksmith.hostprobe` run whose ``base`` section prints the lines above
(:func:`probe_sections`), beside the generic sections of :mod:`racksmith.roles.drift`
(packages and holds, files and directories, units, live sysctl values) and three of base's own:
the governor script's ``--check``, the sysctl file's settings and whether chrony is
synchronised. :func:`drift` compares all of it with what the role would leave; nothing drifted,
the role ends after its checks. Anything the probe did not read counts as drift (fail closed).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from racksmith.roles import drift as role_drift

#: dpkg's current-state letters (second letter of ``db:Status-Abbrev``) of a package that is
#: not on the host: not-installed and config-files. Every other state has files installed
#: (installed, unpacked, half-configured, half-installed, triggers-awaited/-pending), as
#: python-apt's ``is_installed`` (package_facts) counts them.
NOT_INSTALLED = frozenset("nc")


class ProbeError(ValueError):
    """The probe's output is not what the role's probe command prints."""


@dataclass(frozen=True)
class BaseProbe:
    """What role base read from the host in one probe."""

    cpufreq: bool
    governor_unit: bool
    sysctl_writable: list[str] = field(default_factory=list)
    installed: list[str] = field(default_factory=list)
    apt_policy: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _flag(value: str, marker: str) -> bool:
    if value not in ("yes", "no"):
        raise ProbeError(f"probe line @{marker} says {value!r}, expected yes or no")
    return value == "yes"


def parse_probe(stdout: str) -> BaseProbe:
    """The probe's stdout as a :class:`BaseProbe`; :class:`ProbeError` names what is wrong."""
    text = str(stdout)
    if text.rstrip("\n").endswith("@policy"):  # apt knew nothing, and Ansible strips the newline
        text = text.rstrip("\n") + "\n"
    head, sep, policy = text.partition("@policy\n")
    if not sep:
        raise ProbeError("probe output lacks its @policy line (the probe did not finish)")
    flags: dict[str, bool] = {}
    writable: list[str] = []
    installed: list[str] = []
    for number, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        marker, _, rest = line.partition(" ")
        if marker in ("@cpufreq", "@governor_unit"):
            flags[marker[1:]] = _flag(rest.strip(), marker[1:])
        elif marker == "@writable" and rest.strip():
            writable.append(rest.strip())
        elif marker == "@package" and len(rest.split()) >= 2:
            name, status = rest.split()[0], rest.split()[1]
            if len(status) < 2:
                raise ProbeError(
                    f"probe line {number}: dpkg status {status!r} of {name} is not two letters"
                )
            if status[1] not in NOT_INSTALLED:
                installed.append(name)
        elif marker == "@package":
            continue  # dpkg-query knows the name but not as a package: not installed
        else:
            raise ProbeError(f"probe line {number} is not a probe line: {line!r}")
    missing = [m for m in ("cpufreq", "governor_unit") if m not in flags]
    if missing:
        raise ProbeError(f"probe output lacks @{', @'.join(missing)}")
    return BaseProbe(
        cpufreq=flags["cpufreq"],
        governor_unit=flags["governor_unit"],
        sysctl_writable=writable,
        installed=installed,
        apt_policy=policy,
    )


# --- the verify-first read and comparison (issue 25) -------------------------------------------

#: The sections :func:`probe_sections` writes, in that order: base's own read (parsed by
#: :func:`parse_probe`), the generic ones of :mod:`racksmith.roles.drift`, then the governor
#: script's check, the sysctl file's settings and the clock.
SECTIONS = ("base", *role_drift.SECTIONS, "governor", "sysctl_file", "clock")

#: Values ansible.posix.sysctl writes as 1 and 0 (Ansible's booleans, after its ``str`` option).
_SYSCTL_TRUE = frozenset(("y", "yes", "on", "1", "true", "t"))
_SYSCTL_FALSE = frozenset(("n", "no", "off", "0", "false", "f"))


def sysctl_value(value: Any) -> str:
    """``value`` as ansible.posix.sysctl writes it to the file (``key=<this>``) and sets it:
    the option is a string, booleans become 1 and 0, the rest is stripped. The comparison must
    be the module's, or a host it leaves alone would count as drifted (or the reverse)."""
    if value is None:
        return ""
    text = ("1" if value else "0") if isinstance(value, bool) else str(value)
    if text.lower() in _SYSCTL_TRUE:
        return "1"
    if text.lower() in _SYSCTL_FALSE:
        return "0"
    return text.strip()


def _quoted_path(value: Any, what: str) -> str:
    return role_drift.quote_paths([value], what)


def _word(value: Any, what: str) -> str:
    return role_drift.quote_words([value], what)


def _base_snippet(cpufreq: str, unit: str, keys: Sequence[str], packages: Sequence[str]) -> str:
    """The ``base`` section: the marker lines :func:`parse_probe` reads."""
    lines = [
        f'if [ -e {_quoted_path(cpufreq, "cpufreq file")} ]; then echo "@cpufreq yes";'
        ' else echo "@cpufreq no"; fi',
        f'if [ -e {_quoted_path(unit, "governor unit")} ]; then echo "@governor_unit yes";'
        ' else echo "@governor_unit no"; fi',
    ]
    for key in keys:
        _word(key, "sysctl key")
        proc = "/proc/sys/" + key.replace(".", "/")
        lines.append(
            f"if [ -w {shlex.quote(proc)} ]; then echo {shlex.quote('@writable ' + key)}; fi"
        )
    fmt = shlex.quote("@package ${Package} ${db:Status-Abbrev}\n")
    names = role_drift.quote_words(list(packages), "package")
    if names:
        lines.append(f"dpkg-query -W -f {fmt} {names} 2>/dev/null || true")
    lines += ["echo @policy", "apt-cache policy chrony"]
    return "\n".join(lines)


def probe_sections(read: Mapping[str, Any]) -> dict[str, str]:
    """The shell snippets (``racksmith.hostprobe`` sections, in :data:`SECTIONS` order) of the
    role's one read of the host. ``read`` names what to read, never what is wanted (naming a
    file must not render its template): ``cpufreq`` (the sysfs file), ``governor_unit`` (the
    unit file), ``sysctl`` (keys), ``packages`` (names), ``files`` (paths), ``services``
    (units), ``governor_script`` and ``governor`` (run as ``<script> --check <governor>``) and
    ``sysctl_file``. Every snippet only reads and always ends with status 0 (what it cannot
    read, it prints as such), so the probe runs in check mode and on a new host alike."""
    keys = [str(key) for key in read.get("sysctl") or []]
    generic = role_drift.probe_sections(
        {
            "packages": list(read.get("packages") or []),
            "files": [{"path": path} for path in read.get("files") or []],
            "services": list(read.get("services") or []),
            "sysctl": dict.fromkeys(keys, ""),
        }
    )
    script = _quoted_path(read["governor_script"], "governor script")
    sysctl_file = _quoted_path(read["sysctl_file"], "sysctl file")
    return {
        "base": _base_snippet(
            read["cpufreq"], read["governor_unit"], keys, list(read.get("packages") or [])
        ),
        **generic,
        # exit 0: every CPU runs it; 1: some do not; 2: not offered (the script's usage)
        "governor": (
            f"if [ -x {script} ]; then rc=0; {script} --check"
            f" {_word(read['governor'], 'governor')} >/dev/null 2>&1 || rc=$?;"
            ' echo "rc $rc"; else echo absent; fi'
        ),
        # only the setting lines (no comments: a comment could never be taken for a marker);
        # grep ends the last line with a newline even when the file does not
        "sysctl_file": (
            f"if [ -f {sysctl_file} ]; then echo @present; grep -v -e '^[[:space:]]*[#;]'"
            f" -e '^[[:space:]]*$' {sysctl_file} || true; else echo @missing; fi"
        ),
        # what `chronyc waitsync` waits for (a reference that is not the local clock), asked
        # once; a daemon that is not running is not asked (chronyc would wait for its timeouts)
        "clock": (
            "if systemctl is-active --quiet chrony 2>/dev/null"
            " && chronyc waitsync 1 0 0 1 >/dev/null 2>&1; then echo synced;"
            " else echo unsynced; fi"
        ),
    }


def _sysctl_file_settings(text: str) -> dict[str, str] | None:
    """The file's ``key=value`` settings as ansible.posix.sysctl reads them (stripped, the
    last of a key wins); None when the probe said the file is missing or printed nothing."""
    lines = text.splitlines()
    if not lines or lines[0] != "@present":
        return None
    settings = {}
    for line in lines[1:]:
        line = line.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        settings[key.strip()] = value.strip()
    return settings


def _sysctl_file_drift(text: str, wanted: Mapping[str, Any]) -> list[str]:
    path = wanted.get("path", "the sysctl file")
    values = wanted.get("values") or {}
    settings = _sysctl_file_settings(text)
    if settings is None:
        return [f"{path}: missing"]
    reasons = []
    for key, value in values.items():
        want = sysctl_value(value)
        have = settings.get(str(key).strip())
        if have is None:
            reasons.append(f"{path}: {key} not set, wanted {key}={want}")
        elif have != want:
            reasons.append(f"{path}: {key}={have}, wanted {key}={want}")
    return reasons


def _governor_drift(text: str, governor: str) -> list[str]:
    said = text.strip()
    if said == "rc 0":
        return []
    if said == "rc 1":
        return [f"CPU governor: not every CPU runs {governor}"]
    if said == "rc 2":
        return [f"CPU governor: {governor} is not offered by the cpufreq driver"]
    if said == "absent":
        return ["CPU governor: the governor script is missing"]
    return [f"CPU governor: the check said {said!r}"]


def _clock_drift(text: str) -> list[str]:
    if text.strip() == "synced":
        return []
    return ["clock: chrony is not synchronised (what chronyc waitsync waits for)"]


def drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    """What differs on the host (as read in ``sections``) from what role base sets up, one
    reason per line; empty: nothing drifted, and the role ends after its checks.

    ``want``: the keys of :func:`racksmith.roles.drift.drift` (``packages``, ``hold``,
    ``files``, ``services``; ``sysctl``: key -> the value ansible.posix.sysctl sets live,
    compared as the module writes it, :func:`sysctl_value`), and base's own: ``sysctl_file``
    (``{path, values}``: each key's setting in the file, the module's way: last one wins),
    ``governor`` (the governor every CPU must run; empty: not managed here) and
    ``clock_synced`` (true: chrony must be synchronised). A wanted part whose section the probe
    did not print counts as drift (fail closed)."""
    generic = {key: want[key] for key in ("packages", "hold", "files", "services") if key in want}
    generic["sysctl"] = {
        str(key): sysctl_value(value) for key, value in (want.get("sysctl") or {}).items()
    }
    reasons = role_drift.drift(sections, generic)
    # base's own parts, where wanted: the section each reads and its comparison
    checks = [
        (key, compare)
        for key, is_wanted, compare in (
            (
                "sysctl_file",
                bool((want.get("sysctl_file") or {}).get("values")),
                lambda text: _sysctl_file_drift(text, want["sysctl_file"]),
            ),
            (
                "governor",
                bool(want.get("governor")),
                lambda text: _governor_drift(text, str(want["governor"])),
            ),
            ("clock", bool(want.get("clock_synced")), _clock_drift),
        )
        if is_wanted
    ]
    for key, _ in checks:
        if not isinstance(sections.get(key), str):
            return [*reasons, f"the probe did not read {key}"]
    for key, compare in checks:
        reasons += compare(sections[key])
    return reasons
