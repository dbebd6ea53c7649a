"""Start a playbook through ansible-runner and watch it: the I/O half of ``racksmith run``.

The run directory holds everything of one run: ``events.jsonl`` (every ansible-runner event, one
JSON object a line, in order: the event stream, without colour codes), the report callback's
``report.*`` and ``progress.jsonl``, and ansible-runner's private data directory ``runner/``
(its ``artifacts/<ident>/`` keeps ``stdout``, ``rc``, ``status`` and ``job_events/``, one file
per event as AWX reads them). ansible-runner's ``command`` artifact records the whole
environment, which may hold a BMC password or MAAS key, so its values are dropped as soon as it
is written (names stay).

Two layouts: from the checkout (``site.yml`` beside the package) the checkout's playbooks and
``ansible.cfg``; installed (``pip install racksmith`` and the collection racksmith.core), the
collection's playbooks by name (``racksmith.core.site``) from the current directory, with its
``ansible.cfg`` if it has one (or ``ANSIBLE_CONFIG``), and the report callback enabled by name.

The screen: on a terminal, lines that matter (phases, failures, progress of the MAAS batches)
scroll above a table of hosts per phase and state that is redrawn in place; otherwise plain
lines, with each phase's counts every ``interval`` seconds and at its end.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from racksmith.maas.progress import ProgressPrinter, ProgressTail
from racksmith.maas.progress import default_path as progress_path
from racksmith.run.table import RunTable

EVENTS_FILE = "events.jsonl"
RUNNER_DIR = "runner"
IDENT = "racksmith"
#: Seconds between two counts lines (plain output) and the MAAS batch progress lines.
DEFAULT_INTERVAL = 30.0
_REDRAW = 0.5  # seconds between two redraws of the live table


#: The report callback, the compiled-template cache and the collector freeze by their
#: collection names (the installed layout enables them so; a checkout's ansible.cfg names all).
CALLBACK = "racksmith.core.racksmith_report,racksmith.core.template_cache,racksmith.core.gc_freeze"


def repo_root() -> Path:
    """The checkout (or installed tree) holding ``ansible.cfg``, ``site.yml`` and ``playbooks/``."""
    return Path(__file__).resolve().parents[2]


def in_checkout(root: Path | None = None) -> bool:
    """Whether the package runs from the project's checkout (its site.yml and ansible.cfg are
    beside it), or installed, where the playbooks come from the collection racksmith.core."""
    root = root or repo_root()
    return (root / "site.yml").is_file() and (root / "ansible.cfg").is_file()


@dataclass(frozen=True)
class RunRequest:
    #: A playbook file, or a collection playbook's name (``racksmith.core.site``).
    playbook: Path | str
    inventory: str
    run_dir: Path
    limit: str | None = None
    tags: str | None = None
    #: tags whose tasks do not run, even those also tagged `always` (a sliced run's prepare)
    skip_tags: str | None = None
    #: default: the checkout's ansible.cfg; None for a collection playbook: Ansible's own search
    ansible_config: Path | None = None
    interval: float = DEFAULT_INTERVAL
    #: where ansible-playbook runs (relative paths of the inventory and ansible.cfg); default the
    #: checkout for a playbook file, the current directory for a collection playbook
    project_dir: Path | None = None
    #: more inventory sources after ``inventory`` (a sliced run's carried groups)
    inventories: tuple[str, ...] = ()
    #: extra variables (-e), e.g. ``racksmith_slices`` for the slices of a sliced run
    extravars: Mapping[str, Any] | None = None
    #: more environment variables for ansible-playbook (a shard's ``RACKSMITH_SHARD``)
    env: Mapping[str, str] | None = None

    @property
    def by_name(self) -> bool:
        return isinstance(self.playbook, str)


@dataclass(frozen=True)
class RunOutcome:
    rc: int  # ansible-playbook's exit status
    status: str  # ansible-runner's: successful, failed, timeout, canceled
    run_dir: Path
    events: Path
    report_text: str | None  # the rack report, None when the run wrote none


class _Screen:
    """Where lines go: scrolling lines, and on a terminal the table kept below them."""

    def __init__(self, out: TextIO, tty: bool):
        self.out = out
        self.tty = tty
        self._drawn = 0

    def show(self, lines: list[str], table: list[str] | None = None) -> None:
        if not lines and table is None:
            return
        if self.tty and self._drawn:
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")  # up to the table's first line, erase
            self._drawn = 0
        for line in lines:
            self.out.write(line + "\n")
        if self.tty and table:
            self.out.write("\n".join(table) + "\n")
            self._drawn = len(table)
        self.out.flush()

    def forget_table(self) -> None:
        self._drawn = 0  # leave the last table on screen


def _scrub_command_artifact(artifact_dir: Path) -> None:
    """Keep the environment's names in ansible-runner's ``command`` file, never its values."""
    path = artifact_dir / "command"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data.get("env"), dict) and any(v != "" for v in data["env"].values()):
        data["env"] = dict.fromkeys(data["env"], "")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.chmod(tmp, 0o600)
        tmp.replace(path)


def _envvars(request: RunRequest) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # ansible-playbook of this environment first
    env = {
        "RACKSMITH_RUN_DIR": str(request.run_dir),
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "RACKSMITH_PROGRESS_INTERVAL": f"{request.interval:g}",
        # events and job_events/ as AWX keeps them: text without terminal colour codes
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        **(request.env or {}),
    }
    if request.by_name:
        # installed: the site's own ansible.cfg (or ANSIBLE_CONFIG) and the callback by name,
        # unless the site enables callbacks itself
        if request.ansible_config:
            env["ANSIBLE_CONFIG"] = str(request.ansible_config)
        if not os.environ.get("ANSIBLE_CALLBACKS_ENABLED"):
            env["ANSIBLE_CALLBACKS_ENABLED"] = CALLBACK
        return env
    # ansible-runner puts its own callback directory in this variable, which overrides
    # ansible.cfg's callback_plugins: name ours here so the report callback still runs
    env["ANSIBLE_CALLBACK_PLUGINS"] = str(repo_root() / "plugins" / "callback")
    env["ANSIBLE_CONFIG"] = str(request.ansible_config or repo_root() / "ansible.cfg")
    return env


def execute(
    request: RunRequest,
    out: TextIO,
    *,
    tty: bool,
    clock: Callable[[], float] = time.monotonic,
) -> RunOutcome:
    """Run the playbook to its end and return ansible-playbook's exit status."""
    import ansible_runner  # imported here: `racksmith --help` must not pay for it

    run_dir = request.run_dir
    private = run_dir / RUNNER_DIR
    private.mkdir(parents=True, exist_ok=True)
    events_path = run_dir / EVENTS_FILE
    artifact_dir = private / "artifacts" / IDENT
    inbox: queue.Queue[dict[str, Any]] = queue.Queue()
    events_file = events_path.open("a", encoding="utf-8")

    def on_event(event: dict[str, Any]) -> bool:
        events_file.write(json.dumps(event, default=str) + "\n")
        events_file.flush()
        inbox.put(event)
        return True  # and ansible-runner writes it to job_events/, as AWX reads events

    def on_status(status: dict[str, Any], runner_config: Any = None) -> None:
        if status.get("status") != "starting":
            _scrub_command_artifact(artifact_dir)

    table = RunTable()
    screen = _Screen(out, tty)
    tail = ProgressTail(progress_path(str(run_dir)))
    batches = ProgressPrinter(request.interval)
    name = request.playbook if request.by_name else request.playbook.name
    project = request.project_dir or (Path.cwd() if request.by_name else repo_root())
    screen.show([f"run: {name} -> {run_dir}"])
    try:
        thread, runner = ansible_runner.run_async(
            private_data_dir=str(private),
            project_dir=str(project),
            playbook=str(request.playbook),
            inventory=[request.inventory, *request.inventories]
            if request.inventories
            else request.inventory,
            limit=request.limit,
            tags=request.tags,
            skip_tags=request.skip_tags,
            extravars=dict(request.extravars) if request.extravars else None,
            envvars=_envvars(request),
            ident=IDENT,
            rotate_artifacts=1,
            quiet=True,
            event_handler=on_event,
            status_handler=on_status,
        )
        last_counts = last_draw = clock()
        while True:
            alive = thread.is_alive()
            lines: list[str] = []
            try:
                while True:
                    event = inbox.get(timeout=0.2 if alive else 0)
                    before = table.phase
                    lines += table.feed(event)
                    if not tty and table.phase != before and table.phases.get(before):
                        lines.insert(-1, table.counts_line(before))  # the phase just ended
                    if inbox.empty():
                        break
            except queue.Empty:
                pass
            now = clock()
            lines += batches.feed(tail.poll(), now)
            if not tty and table.phases and now - last_counts >= request.interval:
                lines.append(table.counts_line(table.phase))
                last_counts = now
            if tty and (lines or now - last_draw >= _REDRAW):
                screen.show(lines, table.render())
                last_draw = now
            else:
                screen.show(lines)
            if not alive and inbox.empty():
                break
        thread.join()
    finally:
        events_file.close()
        _scrub_command_artifact(artifact_dir)
    if tty:
        screen.show([], table.render())
    else:
        screen.show([table.counts_line(table.phase), *table.render()])
    screen.forget_table()
    report_text = _report_text(run_dir)
    rc = runner.rc if isinstance(runner.rc, int) else 1
    return RunOutcome(rc, str(runner.status), run_dir, events_path, report_text)


def _report_text(run_dir: Path) -> str | None:
    """The rack report the callback wrote, rendered for the terminal; None without one."""
    from racksmith.report.publish import load_run

    if not (run_dir / "report.json").is_file():
        return None
    try:
        return load_run(run_dir).render_text()
    except (OSError, ValueError) as exc:
        return f"rack report unreadable: {exc}"
