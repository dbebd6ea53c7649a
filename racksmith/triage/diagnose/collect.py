"""Reach every host of a hung job at once, within one deadline: the I/O of ``diagnose hang``.

Hosts come from an Ansible inventory and a ``--limit`` pattern, resolved by
``ansible-inventory`` itself (so every inventory source racksmith runs on, the MAAS and Redfish
plugins and their credentials included, names the same hosts with the same connection
variables). Each host gets one SSH session (``ansible_host``, ``ansible_user``, ``ansible_port``,
``ansible_ssh_private_key_file``, ``ansible_ssh_common_args``; ``ansible_connection: local``
runs on this machine) that feeds racksmith.triage.diagnose.probe to the host's ``python3`` on stdin,
under ``sudo -n`` unless the user is root (reading another user's process needs root and
ptrace). A host without py-spy gets the controller's (a static binary) copied to
``/var/tmp/racksmith/py-spy`` first, once.

Every host runs in its own thread and every step has a timeout cut from the one deadline, so
a wedged host costs the deadline, never more, and is reported as not answering with the reason.
The same sessions run the health agent's quick checks on the suspect hosts afterwards.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from racksmith.triage.diagnose.hang import HostProbe, parse_probe, unanswered

PROBE_SOURCE = Path(__file__).with_name("probe.py")
#: Where a host gets the controller's py-spy when it has none of its own.
REMOTE_PY_SPY = "/var/tmp/racksmith/py-spy"  # noqa: S108 (a fixed, root-owned path on the host)
#: Where the health role installs the agent (roles/health/defaults/main.yml).
HEALTH_AGENT_DIR = "/opt/racksmith/agent"
_OUTPUT_CAP = 64 << 20


class InventoryError(ValueError):
    """The inventory could not be read, or the limit selects no host."""


@dataclass(frozen=True)
class Target:
    """How to reach one inventory host."""

    name: str
    address: str
    user: str = ""
    port: int | None = None
    key: str = ""
    ssh_args: tuple[str, ...] = ()
    local: bool = False
    python: str = "python3"

    def argv(self, remote: Sequence[str], *, connect_timeout: float) -> list[str]:
        """The command that runs ``remote`` on the host (as root)."""
        as_root = [] if self.is_root else ["sudo", "-n"]
        if self.local:
            return [*as_root, *remote]
        argv = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ConnectTimeout={max(1, int(connect_timeout))}",
        ]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.key:
            argv += ["-i", self.key, "-o", "IdentitiesOnly=yes"]
        argv += list(self.ssh_args)
        argv += [f"{self.user}@{self.address}" if self.user else self.address, "--"]
        return [*argv, shlex.join([*as_root, *remote])]

    @property
    def is_root(self) -> bool:
        if self.local:
            return os.geteuid() == 0
        return self.user == "root"


def targets_from_inventory(doc: Mapping[str, Any]) -> list[Target]:
    """Targets from ``ansible-inventory --list`` output (pure): every host of group ``all``
    (its own hosts and its children's, recursively), with its connection variables."""
    hostvars = (doc.get("_meta") or {}).get("hostvars") or {}
    names: list[str] = []

    def walk(group: str, seen: set[str]) -> None:
        if group in seen:
            return
        seen.add(group)
        entry = doc.get(group) or {}
        for host in entry.get("hosts") or []:
            if host not in names:
                names.append(host)
        for child in entry.get("children") or []:
            walk(child, seen)

    walk("all", set())
    out = []
    for name in names:
        hv = hostvars.get(name) or {}
        common = " ".join(
            str(hv.get(k) or "") for k in ("ansible_ssh_common_args", "ansible_ssh_extra_args")
        )
        try:
            ssh_args = tuple(shlex.split(common))
        except ValueError as exc:
            raise InventoryError(f"host {name}: ansible_ssh_common_args: {exc}") from exc
        port = hv.get("ansible_port") or hv.get("ansible_ssh_port")
        out.append(
            Target(
                name=name,
                address=str(hv.get("ansible_host") or name),
                user=str(hv.get("ansible_user") or hv.get("ansible_ssh_user") or ""),
                port=int(port) if port else None,
                key=str(
                    hv.get("ansible_ssh_private_key_file")
                    or hv.get("ansible_private_key_file")
                    or ""
                ),
                ssh_args=ssh_args,
                local=hv.get("ansible_connection") == "local",
                python=str(hv.get("ansible_python_interpreter") or "python3")
                .replace("auto_silent", "python3")
                .replace("auto", "python3"),
            )
        )
    return out


def resolve(
    inventory: str,
    limit: str | None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> list[Target]:
    """The hosts ``limit`` selects in ``inventory``, as ``ansible-inventory`` resolves them."""
    exe = shutil.which("ansible-inventory") or str(
        Path(sys.executable).with_name("ansible-inventory")
    )
    argv = [exe, "-i", inventory, "--list"] + (["--limit", limit] if limit else [])
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(env) if env is not None else None,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise InventoryError(
            f"inventory {inventory}: ansible-inventory took over {timeout:g} s"
        ) from exc
    except OSError as exc:
        raise InventoryError(f"inventory {inventory}: cannot run ansible-inventory: {exc}") from exc
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])[:600]
        raise InventoryError(f"inventory {inventory}: ansible-inventory failed: {tail}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError as exc:
        raise InventoryError(f"inventory {inventory}: ansible-inventory printed no JSON") from exc
    targets = targets_from_inventory(doc)
    if not targets:
        raise InventoryError(
            f"inventory {inventory}: --limit {limit!r} selects no host"
            if limit
            else f"inventory {inventory}: no hosts"
        )
    return targets


@dataclass(frozen=True)
class Settings:
    deadline: float = 25.0  # seconds for the whole collection
    native: bool = True
    match: str = ""
    push_py_spy: bool = True
    local_py_spy: str = ""  # the controller's py-spy (shipped to hosts without one)
    extra_env: Mapping[str, str] = field(default_factory=dict)


def local_py_spy() -> str:
    """The controller's py-spy: beside this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy") or ""


def _run(argv: list[str], *, stdin: bytes, timeout: float) -> tuple[int | None, bytes, str]:
    """Run with a hard timeout; (rc or None, stdout, reason when it did not finish)."""
    try:
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, timeout=max(0.5, timeout), check=False
        )
    except subprocess.TimeoutExpired:
        return None, b"", f"no answer within {timeout:.1f} s"
    except OSError as exc:
        return None, b"", f"cannot run {argv[0]}: {exc}"
    if len(proc.stdout) > _OUTPUT_CAP:
        return None, b"", f"answer larger than {_OUTPUT_CAP} bytes"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return proc.returncode, proc.stdout, (err[-1] if err else f"exit {proc.returncode}")[:300]
    return 0, proc.stdout, ""


def _probe_once(target: Target, settings: Settings, until: float) -> tuple[dict | None, str]:
    left = until - time.monotonic()
    if left <= 0.5:
        return None, "deadline passed before the host was reached"
    config = {
        "budget": round(max(1.0, left - 1.5), 2),  # the probe's share: SSH and parsing beside
        "native": settings.native,
        "match": settings.match,
        "py_spy": ["py-spy", REMOTE_PY_SPY],
    }
    if target.local and settings.local_py_spy:
        config["py_spy"] = [settings.local_py_spy, *config["py_spy"]]
    python = sys.executable if target.local else target.python
    argv = target.argv(
        [python, "-", json.dumps(config, sort_keys=True)], connect_timeout=min(5.0, left)
    )
    rc, out, why = _run(argv, stdin=PROBE_SOURCE.read_bytes(), timeout=left)
    if rc != 0:
        return None, why
    try:
        return json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, "the probe printed no JSON"


def _push_py_spy(target: Target, settings: Settings, until: float) -> str:
    """Copy the controller's py-spy to the host; '' when done, else why not."""
    if not settings.local_py_spy:
        return "py-spy is on neither the host nor this controller (pip install py-spy)"
    remote = (
        f"umask 022 && mkdir -p {shlex.quote(str(Path(REMOTE_PY_SPY).parent))} && "
        f"cat > {REMOTE_PY_SPY}.tmp && chmod 0755 {REMOTE_PY_SPY}.tmp && "
        f"mv {REMOTE_PY_SPY}.tmp {REMOTE_PY_SPY}"
    )
    argv = target.argv(["sh", "-c", remote], connect_timeout=5.0)
    rc, _, why = _run(
        argv, stdin=Path(settings.local_py_spy).read_bytes(), timeout=until - time.monotonic()
    )
    return "" if rc == 0 else f"copying py-spy to the host failed: {why}"


def probe_host(target: Target, settings: Settings, until: float) -> HostProbe:
    """One host's probe, with py-spy shipped to it first when it has none."""
    doc, why = _probe_once(target, settings, until)
    if doc is None:
        return unanswered(target.name, why)
    if doc.get("ranks") and not doc.get("py_spy") and settings.push_py_spy and not target.local:
        why = _push_py_spy(target, settings, until)
        if why:
            return unanswered(target.name, why)
        doc, why = _probe_once(target, settings, until)
        if doc is None:
            return unanswered(target.name, why)
    return parse_probe(target.name, doc)


def collect(
    targets: Sequence[Target],
    settings: Settings,
    probe: Callable[[Target, Settings, float], HostProbe] = probe_host,
) -> list[HostProbe]:
    """Every target's probe at once, within ``settings.deadline``; in the targets' order."""
    until = time.monotonic() + settings.deadline
    with ThreadPoolExecutor(max_workers=max(1, min(256, len(targets)))) as pool:
        futures = [pool.submit(probe, t, settings, until) for t in targets]
        return [f.result() for f in futures]


# --- the health agent's quick checks on the suspect hosts ----------------------------------


def health_lines(doc: Any) -> list[str]:
    """The agent's JSON report as the lines a ticket quotes (pure): its verdict and its
    ``reasons`` (``FAIL xid [gpu3]: ...``, the form racksmith.triage's rules read)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("reasons"), list):
        return ["UNKNOWN health: the agent printed something that is not its report"]
    return [f"verdict {doc.get('verdict', '?')}", *(str(r) for r in doc["reasons"])]


def health_check(target: Target, until: float) -> list[str]:
    """Run the installed health agent's quick checks on the host; lines for the report."""
    left = until - time.monotonic()
    if left < 2:
        return ["UNKNOWN health: no time left in the deadline to run the quick checks"]
    agent = HEALTH_AGENT_DIR
    script = (
        f"test -f {agent}/current/racksmith/health/__main__.py || "
        f"{{ echo 'health agent not installed ({agent}/current)' >&2; exit 3; }}; "
        f"p=; test -f {agent}/profile.json && p='--profile {agent}/profile.json'; "
        f"PYTHONPATH={agent}/current exec python3 -m racksmith.health check --json "
        f"--deadline {max(1, int(left - 2))} $p"
    )
    rc, out, why = _run(
        target.argv(["sh", "-c", script], connect_timeout=min(5.0, left)), stdin=b"", timeout=left
    )
    if rc not in (0, 1, 2):
        return [f"UNKNOWN health: the quick checks did not run: {why}"]
    try:
        return health_lines(json.loads(out))
    except ValueError:
        return ["UNKNOWN health: the agent printed no JSON"]


def health_of(
    targets: Sequence[Target], hosts: Sequence[str], seconds: float
) -> dict[str, list[str]]:
    """Quick checks on ``hosts`` at once, within ``seconds``."""
    chosen = [t for t in targets if t.name in set(hosts)]
    until = time.monotonic() + seconds
    with ThreadPoolExecutor(max_workers=max(1, len(chosen))) as pool:
        futures = {t.name: pool.submit(health_check, t, until) for t in chosen}
        return {name: f.result() for name, f in futures.items()}
