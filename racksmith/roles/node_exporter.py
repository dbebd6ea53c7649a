"""The ``node_exporter`` role's verify-first step: one read of what the last converge left on
the host (the package's status, version and hold, the flags file's checksum and owner, the
textfile directory, the unit's state, and apt's view of the package), and the decision whether
anything drifted from what the role would write. Nothing drifted: the role ends there (a
healthy host's rerun is one command); anything drifted: the role's steps run as on a first run.

Its filters (``plugins/filter/node_exporter.py``) are thin adapters over these functions.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

_MARK = "### racksmith-node-exporter"
SECTIONS = ("status", "policy", "flags", "textfile", "unit")


def probe_argv(*, package: str, unit: str, flags_file: str, textfile_dir: str) -> list[str]:
    """One command (``/bin/sh -c``) printing each part after a marker line. Only apt-cache
    must answer (check mode reads its policy on a new host); an absent package, file or unit
    prints what the tools say, which :func:`drift` reads as drift. It only reads."""
    for name, value in (("package", package), ("unit", unit)):
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"{name} {value!r} must be one word")
    for name, value in (("flags_file", flags_file), ("textfile_dir", textfile_dir)):
        if not value.startswith("/"):
            raise ValueError(f"{name} {value!r} must be an absolute path")
    pkg, svc = shlex.quote(package), shlex.quote(unit)
    flags, textfile = shlex.quote(flags_file), shlex.quote(textfile_dir)
    script = "; ".join(
        [
            "set -e",
            f"echo '{_MARK} status'",
            f"dpkg-query -W -f='${{Status}}|${{Version}}\\n' {pkg} 2>&1 || true",
            f"echo '{_MARK} policy'",
            f"apt-cache policy {pkg}",
            f"echo '{_MARK} flags'",
            f"sha1sum {flags} 2>/dev/null || true",
            f"stat -c '%U %G %a' {flags} 2>/dev/null || true",
            f"echo '{_MARK} textfile'",
            f"stat -c '%F|%U %G %a' {textfile} 2>/dev/null || true",
            f"echo '{_MARK} unit'",
            f"systemctl is-active {svc} 2>&1 || true",
            f"systemctl is-enabled {svc} 2>&1 || true",
        ]
    )
    return ["/bin/sh", "-c", script]


@dataclass(frozen=True)
class Probe:
    status: str
    policy: str
    flags: list[str]
    textfile: str
    unit: list[str]


def parse_probe(text: str) -> Probe:
    """Split :func:`probe_argv`'s output; fail, naming the part, on anything else."""
    if not isinstance(text, str):
        raise ValueError(f"probe output must be text, got {type(text).__name__}")
    parts: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(_MARK + " "):
            current = line[len(_MARK) + 1 :].strip()
            if current not in SECTIONS or current in parts:
                raise ValueError(f"probe output: unexpected part {current!r}")
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    missing = [name for name in SECTIONS if name not in parts]
    if missing:
        raise ValueError(f"probe output lacks the {', '.join(missing)} part")
    return Probe(
        status="\n".join(parts["status"]).strip(),
        policy="\n".join(parts["policy"]),
        flags=[line.strip() for line in parts["flags"] if line.strip()],
        textfile="\n".join(parts["textfile"]).strip(),
        unit=[line.strip() for line in parts["unit"] if line.strip()],
    )


def drift(
    text: str,
    *,
    package: str,
    version: str = "",
    hold: bool = True,
    flags_sha1: str,
    method: str = "package",
) -> list[str]:
    """What differs from what the role would leave (empty: nothing; the role may end). The
    upstream release's steps are not read ahead: with ``method`` release this always says so."""
    probe = parse_probe(text)
    if method != "package":
        return [f"node_exporter_install_method {method}: its steps are not read ahead"]
    found = []
    status, _, installed = probe.status.partition("|")
    words = status.split()
    if len(words) != 3 or words[1:] != ["ok", "installed"]:
        found.append(f"{package} is not installed ({probe.status or 'no status'})")
    else:
        if version and installed != version:
            found.append(f"{package} is {installed}, not {version}")
        if hold and words[0] != "hold":
            found.append(f"{package} is not held")
    if len(probe.flags) != 2 or probe.flags[0].split()[0] != flags_sha1:
        found.append("the flags file differs from what the role writes")
    elif probe.flags[1] != "root root 644":
        found.append(f"the flags file is {probe.flags[1]}, not root root 644")
    if probe.textfile != "directory|root root 755":
        found.append(f"the textfile directory is {probe.textfile or 'absent'}")
    if probe.unit != ["active", "enabled"]:
        found.append(f"the exporter is {' and '.join(probe.unit) or 'unknown'}")
    return found


def policy(text: str) -> str:
    """The ``apt-cache policy`` part of the probe (the role's check mode reads it)."""
    return parse_probe(text).policy
