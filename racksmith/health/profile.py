"""Host-type profiles: what a healthy host of one type looks like (GPU count and model, links,
disks, HCAs, pools, versions) and which checks do not apply to it.

A profile is a JSON file (Python 3.10 has no tomllib, and the agent is stdlib-only). It may
``extends`` another by name; the child's keys are merged over the parent's, and ``null``
removes a parent's key. A check that does not apply must be named under ``skip`` with a
reason: a check whose expectations are missing and that is not skipped is a profile error,
so nothing is skipped by luck (a forgotten key) and every report says why a check did not run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUILTIN_DIR = Path(__file__).resolve().parent / "profiles"
DEFAULT_PROFILE = "hgx-h200-8gpu"

#: Top-level keys a profile may have; anything else is a typo we refuse.
KNOWN_KEYS = frozenset(
    {
        "name",
        "description",
        "extends",
        "gpu",
        "nvswitch",
        "versions",
        "firmware",
        "hcas",
        "nvme",
        "disks",
        "zpools",
        "docker",
        "cpu_governor",
        "clock_sync",
        "kernel_log",
        "skip",
        "load",
    }
)


class ProfileError(ValueError):
    """The profile is unusable; the message names the file and the key."""


@dataclass(frozen=True)
class Profile:
    name: str
    source: str  # file it came from (the most derived one)
    data: Mapping[str, Any]

    @property
    def description(self) -> str:
        return str(self.data.get("description", ""))

    @property
    def skips(self) -> Mapping[str, str]:
        return self.data.get("skip") or {}

    def get(self, path: str, default: Any = None) -> Any:
        """``profile.get("gpu.nvlink.links_per_gpu")``; missing or null -> default."""
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, Mapping) or node.get(part) is None:
                return default
            node = node[part]
        return node

    def has(self, path: str) -> bool:
        return self.get(path) is not None


def available() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.json"))


def load(name_or_path: str, check_requirements: Mapping[str, str | None] | None = None) -> Profile:
    """Load a built-in profile by name, or a profile file by path, resolving ``extends``.
    ``check_requirements`` (check name -> profile key it needs, or None) enables the rule that
    every check is either configured or explicitly skipped."""
    path = _locate(name_or_path, None)
    data = _resolve(path, seen=())
    data.pop("extends", None)
    profile = Profile(str(data.get("name") or path.stem), str(path), data)
    if check_requirements is not None:
        validate(profile, check_requirements)
    return profile


def validate(profile: Profile, requirements: Mapping[str, str | None]) -> None:
    where = f"profile {profile.name} ({profile.source})"
    unknown_keys = set(profile.data) - KNOWN_KEYS
    if unknown_keys:
        raise ProfileError(f"{where}: unknown keys {sorted(unknown_keys)}")
    skips = profile.data.get("skip") or {}
    if not isinstance(skips, Mapping):
        raise ProfileError(f"{where}: 'skip' must map check names to reasons")
    for check, reason in skips.items():
        if check not in requirements:
            raise ProfileError(f"{where}: skip names unknown check {check!r}")
        if not isinstance(reason, str) or not reason.strip():
            raise ProfileError(f"{where}: skip.{check} needs a reason (why it does not apply)")
    missing = [
        f"{check} (needs '{key}')"
        for check, key in requirements.items()
        if key and check not in skips and not profile.has(key)
    ]
    if missing:
        raise ProfileError(
            f"{where}: these checks have no expectations and are not skipped: "
            f"{', '.join(missing)}. Add the key, or add a reason under 'skip'."
        )
    _check_types(profile, where)


def _check_types(profile: Profile, where: str) -> None:
    ints = ("gpu.count", "hcas.count", "nvme.count", "nvswitch.count", "gpu.nvlink.links_per_gpu")
    for key in ints:
        value = profile.get(key)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ProfileError(f"{where}: {key} must be a non-negative integer, got {value!r}")
    zpools = profile.get("zpools")
    if zpools is not None and not (
        isinstance(zpools, list) and zpools and all(isinstance(z, str) for z in zpools)
    ):
        raise ProfileError(f"{where}: zpools must be a non-empty list of pool names")
    limit = profile.get("gpu.processes.max_used_mib")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ProfileError(
            f"{where}: gpu.processes.max_used_mib must be a non-negative integer (MiB), "
            f"got {limit!r}"
        )
    allow = profile.get("gpu.processes.allow")
    if allow is not None and not (
        isinstance(allow, list) and all(isinstance(a, str) for a in allow)
    ):
        raise ProfileError(f"{where}: gpu.processes.allow must be a list of process names")
    gdr = profile.get("hcas.gdr")
    if gdr is not None and gdr not in (True, "peermem", "dmabuf"):
        raise ProfileError(f"{where}: hcas.gdr must be true, 'peermem' or 'dmabuf', got {gdr!r}")
    severity = profile.get("firmware.severity")
    if severity is not None and severity not in ("fail", "warn"):
        raise ProfileError(f"{where}: firmware.severity must be 'fail' or 'warn'")
    gpu_fw = profile.get("firmware.gpu") or {}
    known = {"vbios", "inforom", "inforom_oem", "board_part_number"}
    if not isinstance(gpu_fw, Mapping) or set(gpu_fw) - known:
        raise ProfileError(
            f"{where}: firmware.gpu must map {sorted(known)} to versions, got {gpu_fw!r}"
        )
    board = profile.get("firmware.baseboard")
    if board is not None and not (
        isinstance(board, Mapping) and all(isinstance(v, str) for v in board.values())
    ):
        raise ProfileError(f"{where}: firmware.baseboard must map component names to versions")
    pct = profile.get("disks.max_used_pct")
    if pct is not None and not (isinstance(pct, (int, float)) and 0 < pct <= 100):
        raise ProfileError(f"{where}: disks.max_used_pct must be in (0, 100], got {pct!r}")


def _locate(name_or_path: str, relative_to: Path | None) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".json" or "/" in name_or_path:
        if not candidate.is_absolute() and relative_to is not None:
            candidate = relative_to / candidate
        if not candidate.is_file():
            raise ProfileError(f"profile file {candidate} does not exist")
        return candidate
    for directory in (relative_to, BUILTIN_DIR):
        if directory is not None and (directory / f"{name_or_path}.json").is_file():
            return directory / f"{name_or_path}.json"
    raise ProfileError(
        f"no profile named {name_or_path!r}; built-in profiles: {', '.join(available())}"
    )


def _resolve(path: Path, seen: Iterable[Path]) -> dict[str, Any]:
    seen = (*seen, path.resolve())
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ProfileError(f"profile {path}: cannot read it as JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"profile {path}: the top level must be a JSON object")
    parent_name = data.get("extends")
    if not parent_name:
        return data
    parent_path = _locate(str(parent_name), path.parent)
    if parent_path.resolve() in seen:
        raise ProfileError(f"profile {path}: 'extends' loops back to {parent_path}")
    return merge(_resolve(parent_path, seen), data)


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge; ``None`` in ``override`` deletes the key."""
    out = dict(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out
