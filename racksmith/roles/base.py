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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

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
