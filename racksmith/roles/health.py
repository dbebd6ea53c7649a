"""Role health's readings of the host: its one probe (the host's Python and the agent it has,
:func:`probe_sections` / :func:`probe_outcome`, below) and the quick checks' run (the agent's
report, or why there is none, :func:`quick_outcome`).

Why here: the role used to read the report with a ``set_fact`` whose ``from_json`` failure fell
into a rescue. Folding that task away (each task costs the controller 35-68 ms per host) needs
a reading that cannot raise: output that is not the agent's JSON report is an error with a
reason, and the verdict (racksmith.health.golden.judge, through filter health_fit) makes the
host NOT FIT for it, never healthy. Pure; a run that exited outside 0-2 still fails its task
(``failed_when``) and the role's rescue says why, as before.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from racksmith import hostprobe
from racksmith.roles import drift

__all__ = ["PROBE_SECTIONS", "probe_outcome", "probe_sections", "quick_outcome"]

PREFIX = "health agent did not run: "


def quick_outcome(run: Mapping[str, Any] | None) -> dict[str, Any]:
    """The registered result of the agent's run -> ``{quick: report or {}, error: '' or why}``.

    No run at all (the quick checks' tag skipped) gives no report and no error, as before: the
    verdict then says the quick checks gave no report."""
    if not run or "stdout" not in run:
        return {"quick": {}, "error": ""}
    stdout = str(run.get("stdout") or "")
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        why = f"its output is not a JSON report ({exc})"
    else:
        if isinstance(report, dict):
            return {"quick": report, "error": ""}
        why = f"its output is not a JSON report (a {type(report).__name__})"
    stderr = str(run.get("stderr") or "").strip()[-300:]
    return {"quick": {}, "error": PREFIX + (stderr or why)}


# --- Verify first: the host's Python and the agent it already has ------------------------------
#
# Why: on a rerun the ship steps (folders and `current` link, unpack, site profile) were three
# task results per host (each 50-70 ms of the controller's CPU, issue 25) that changed nothing.
# One read-only probe now checks the host's Python and reads what those steps leave; the role
# ships only where something differs. Anything the probe cannot read counts as drift (fail
# closed: the ship steps run, as on a first run) and, for the Python, as a problem the role's
# preflight assert names.

#: The probe's sections (racksmith.hostprobe), in the order they run.
PROBE_SECTIONS = ("python", "link", "agent", "files")

#: What the ship steps leave (roles/health/tasks/ship.yml): folders 0755 and the site profile
#: 0644, all root:root.
_DIR = {"directory": True, "mode": "755", "owner": "root", "group": "root"}
_PROFILE = {"mode": "644", "owner": "root", "group": "root"}
_PYTHON_CHECK = "import sys; sys.exit(sys.version_info < (3, 10))"
#: The file whose presence says a version is unpacked (the unarchive step's ``creates``).
AGENT_MARKER = "racksmith/health/__main__.py"


def _abs(want: Mapping[str, Any], key: str) -> str:
    value = want.get(key)
    if not isinstance(value, str) or not value.startswith("/") or "\n" in value:
        raise ValueError(f"health probe: {key} {value!r} must be an absolute path on one line")
    return value.rstrip("/") or "/"


def _wanted_files(want: Mapping[str, Any]) -> list[dict[str, Any]]:
    files = [{"path": _abs(want, "report_dir"), **_DIR}]
    if want.get("version_dir"):
        files.insert(0, {"path": _abs(want, "version_dir"), **_DIR})
    if want.get("profile_src"):
        files.append(
            {
                "path": _abs(want, "agent_dir") + "/profile.json",
                "sha1": want.get("profile_sha1") or "",
                **_PROFILE,
            }
        )
    return files


def probe_sections(want: Mapping[str, Any]) -> dict[str, str]:
    """The shell snippets (``racksmith.hostprobe`` sections) of the role's one probe.

    ``want``: ``python`` (the host's interpreter), ``agent_dir``, ``version_dir`` (this run's
    version folder; empty when the bundle was not built, then nothing of it is read),
    ``report_dir`` and ``profile_src`` (the site profile on the controller, or empty). Each
    snippet only reads and never fails on what it finds (a missing Python is an answer, not
    a failed probe), so the probe runs in check mode too."""
    python = _abs(want, "python")
    agent_dir = _abs(want, "agent_dir")
    version_dir = _abs(want, "version_dir") if want.get("version_dir") else ""
    check = shlex.quote(_PYTHON_CHECK)
    marker = shlex.quote(f"{version_dir}/{AGENT_MARKER}") if version_dir else ""
    current = shlex.quote(f"{agent_dir}/current")
    return {
        "python": (
            f"if out=$({shlex.quote(python)} -c {check} 2>&1); then echo ok; "
            "else rc=$?; printf 'fail exit %s: %s\\n' \"$rc\" "
            "\"$(printf '%s' \"$out\" | tr '\\n' ' ')\"; fi"
        ),
        "link": f"readlink -- {current} 2>/dev/null || echo -",
        "agent": (
            f"if [ -f {marker} ]; then echo present; else echo absent; fi" if marker else "true"
        ),
        "files": drift.probe_sections({"files": _wanted_files(want)})["files"],
    }


def probe_outcome(run: Mapping[str, Any] | None, want: Mapping[str, Any]) -> dict[str, Any]:
    """The probe's registered run -> ``{problem: '' or why the host could not be probed,
    python: '' or why the host's Python will not do, drift: [what the ship steps would
    change]}`` (no drift: this version is there as shipped).

    ``want`` as for :func:`probe_sections`, plus ``profile_sha1`` (the controller's profile,
    None when it could not be read). A probe that did not run (``unreachable: ...`` for a host
    that cannot be reached), failed or printed something else fails closed: a problem with
    the reason, and that reason as the drift."""
    why = _probe_failure(run)
    sections: dict[str, str] = {}
    if not why:
        try:
            sections = hostprobe.parse_sections(str(run.get("stdout")), PROBE_SECTIONS)  # type: ignore[union-attr]
        except hostprobe.ParseError as exc:
            why = f"the probe's output could not be read ({exc})"
    if why:
        return {"problem": why, "python": "", "drift": [why]}
    first = (sections["python"].splitlines() or [""])[0].strip()
    python = "" if first == "ok" else (first.removeprefix("fail").strip() or "no answer")
    return {"problem": "", "python": python, "drift": _drift(sections, want)}


def _probe_failure(run: Mapping[str, Any] | None) -> str:
    if run and run.get("unreachable"):
        return f"unreachable: {str(run.get('msg') or 'no answer').strip()}"
    if not run:
        return "the probe did not run: no result"
    if run.get("skipped"):
        return "the probe did not run: skipped"
    if "stdout" not in run:
        return f"the probe did not run: {str(run.get('msg') or 'no output').strip()}"
    if run.get("rc") != 0:
        said = str(run.get("stderr") or "").strip()[-300:] or str(run.get("msg") or "").strip()
        return f"the probe failed (exit {run.get('rc')}): {said}"
    return ""


def _drift(sections: Mapping[str, str], want: Mapping[str, Any]) -> list[str]:
    version_dir = str(want.get("version_dir") or "").rstrip("/")
    if not version_dir:
        return ["this run's agent bundle was not built (its version is unknown)"]
    reasons = []
    link = (sections["link"].splitlines() or ["-"])[0].strip()
    if link != version_dir:
        reasons.append(f"{want['agent_dir']}/current -> {link}, wanted {version_dir}")
    if sections["agent"].strip() != "present":
        reasons.append(f"{version_dir}/{AGENT_MARKER}: missing (this version is not unpacked)")
    if want.get("profile_src") and not want.get("profile_sha1"):
        reasons.append(
            f"the site profile {want['profile_src']} could not be read on the controller"
        )
    return reasons + drift.drift({"files": sections["files"]}, {"files": _wanted_files(want)})
