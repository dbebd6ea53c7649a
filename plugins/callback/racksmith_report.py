"""Ansible callback: per-host, per-phase rack report for every run, in its own directory.

A thin adapter over :mod:`racksmith.report`. It gives each run a results directory
(``<runs_dir>/<timestamp>-<pid>/`` unless ``RACKSMITH_RUN_DIR`` is set) and exports
``RACKSMITH_RUN_DIR`` so that playbooks and modules write their results (golden set, tickets,
logs) into the same place. It keeps what each role says it skipped (the ``racksmith_skip``
a ``racksmith.core.role_skip`` task returns). At the end it triages the failed hosts and
writes their tickets, report.json/.txt/.html/.prom (racksmith.report.publish), prints the
table, and adds the run to the health history beside the run directories
(racksmith.triage.history). In a sliced run (docs/fleet.md, "Sliced runs") each process but
the last writes only its shard's report.json (RACKSMITH_SHARD=1); the last one, the merge, folds
the shards' reports into its own before all of the above (racksmith.report.merge).
"""

from __future__ import annotations

DOCUMENTATION = """
    name: racksmith_report
    type: aggregate
    short_description: per-host, per-phase rack report written to the run's own directory
    description:
      - Creates <runs_dir>/<timestamp>-<pid>/ (or uses RACKSMITH_RUN_DIR), exports
        RACKSMITH_RUN_DIR, and at the end prints and saves what each phase did to each host,
        with a triaged cause and a ticket for each failed host (JSON, text, HTML, Prometheus
        textfile).
      - Lists what each role skipped on each host and why, from the racksmith_skip result of
        every racksmith.core.role_skip task (docs/contracts.md, "What a role skips").
      - Appends the run to the health history (history.jsonl beside the run directory).
    requirements:
      - the racksmith Python package
    options:
      runs_dir:
        description:
          - Where each run's directory and the health history (history.jsonl) go.
          - Default, C(runs/) beside the playbook named on the command line; for a collection's
            playbook (C(racksmith.core.site), or one in a collection's C(playbooks/)
            directory), C(runs/) in the current directory, never inside the collection.
          - RACKSMITH_RUN_DIR, when set, names the run's own directory and wins over this.
        type: path
        env:
          - name: RACKSMITH_RUNS_DIR
        ini:
          - section: callback_racksmith_report
            key: runs_dir
      prom_path:
        description:
          - Also write the run's Prometheus textfile here, atomically (temporary file and
            rename), for node-exporter's textfile collector (a C(.prom) file in its
            C(--collector.textfile.directory)). Unset, only the run directory's report.prom.
        type: path
        env:
          - name: RACKSMITH_PROM_PATH
        ini:
          - section: callback_racksmith_report
            key: prom_path
      ticket_url:
        description:
          - URL template of a ticket in a real tracker, linked from each failed host's row of
            report.html. Fields in braces are filled in URL-encoded - C({host}),
            C({cause}), C({title}), C({action}), C({run}), C({summary}) - for example
            C(https://jira.example.com/secure/CreateIssueDetails!init.jspa?pid=10000&issuetype=1&summary={summary}).
            Unset, the row links the run directory's Markdown ticket.
        type: str
        env:
          - name: RACKSMITH_TICKET_URL
        ini:
          - section: callback_racksmith_report
            key: ticket_url
"""

import math
import os
import threading
import time
from pathlib import Path

from ansible.plugins.callback import CallbackBase

try:
    from racksmith.maas.progress import DEFAULT_INTERVAL, ProgressPrinter, ProgressTail
    from racksmith.maas.progress import default_path as progress_path
    from racksmith.report import PHASES, RunReport
    from racksmith.report.merge import SHARD_ENV, merged_report, named_run_dir
    from racksmith.report.model import HOST_VARS, skips_of
    from racksmith.report.publish import REPORT_JSON, attach_golden_set, publish
    from racksmith.triage import history
except ImportError as exc:  # the controller lacks the racksmith package: say so, run on
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


def default_runs_dir(playbook: str | None, cwd: Path) -> Path:
    """``runs/`` beside the playbook a person named, or in the current directory for a
    collection's playbook: an installed collection is not the place for a site's results."""
    if not playbook:
        return cwd / "runs"
    folder = (cwd / playbook).resolve().parent
    in_collection = "ansible_collections" in folder.parts or (
        folder.name == "playbooks"
        and any((folder.parent / f).is_file() for f in ("galaxy.yml", "MANIFEST.json"))
    )
    return (cwd if in_collection else folder) / "runs"


def _message(result: dict) -> str:
    if result.get("censored"):
        return "details hidden (no_log)"
    for key in ("msg", "stderr", "reason", "module_stderr"):
        if result.get(key):
            return str(result[key])
    return "failed without a message"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "racksmith_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if _IMPORT_ERROR is not None:
            self._display.warning(
                f"racksmith_report: no run report: the racksmith package is missing "
                f"({_IMPORT_ERROR}); install it on the controller (pip install racksmith)"
            )
            self.disabled = True
            return
        self._report = None
        self._phase = "other"
        self._play = None
        self._entering = False  # the play's hosts are yet to be listed in the report
        self._progress = None

    def _option(self, name: str):
        try:
            return self.get_option(name)
        except KeyError:  # options not loaded (a caller that skipped set_options)
            return None

    def v2_playbook_on_start(self, playbook):
        if self._report is not None:  # several playbooks on one command line: one run
            return
        run_dir = os.environ.get("RACKSMITH_RUN_DIR")
        if not run_dir:
            run_id = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}"
            root = self._option("runs_dir")
            runs = (
                Path(root)
                if root
                else default_runs_dir(getattr(playbook, "_file_name", None), Path.cwd())
            ).resolve()
            run_dir = str(runs / run_id)
            named = self._named_run_dir(playbook, runs)  # AWX: the sliced workflow's jobs
            if named is not None:
                run_dir = str(named[0])
                if named[1]:
                    os.environ[SHARD_ENV] = "1"
            os.environ["RACKSMITH_RUN_DIR"] = run_dir  # inherited by lookups and local modules
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        self._report = RunReport(
            run_id=Path(run_dir).name,
            run_dir=run_dir,
            started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        self._progress = _ProgressThread(self._display, run_dir)
        self._progress.start()

    def _named_run_dir(self, playbook, runs: Path):
        """The run directory extra variables name (racksmith_run_id, racksmith_shard), or
        None; a bad name is said and ignored (the run keeps a directory of its own)."""
        try:
            plays = playbook.get_plays()
            extra = plays[0].get_variable_manager().extra_vars if plays else {}
            return named_run_dir(runs, extra or {}, os.environ)
        except ValueError as exc:
            self._display.warning(f"racksmith: {exc}; this run gets a directory of its own")
        except Exception as exc:  # never break the run for its directory's name
            self._display.warning(
                f"racksmith: extra variables not read for the run directory: {exc}"
            )
        return None

    # -- events ----------------------------------------------------------------------------

    def v2_playbook_on_play_start(self, play):
        self._play = play
        tags = list(play.tags or [])
        self._phase = next((t for t in tags if t in PHASES), "other")
        self._entering = self._phase != "other"

    def v2_playbook_on_task_start(self, task, is_conditional):
        # Every host of a phase's play is listed once a task of the play starts, also where the
        # phase's tasks run once for all of them (run_once) and the host has no result of its
        # own (issue 25). Not at the play's start: a play whose tasks --tags left out (a sliced
        # run's processes) lists no host.
        if not self._entering or self._report is None or self._play is None:
            return
        self._entering = False
        try:
            inventory = self._play.get_variable_manager()._inventory
            for host in inventory.get_hosts(self._play.hosts):
                self._report.enter(host.name)
        except Exception as exc:  # the report never breaks the run
            self._display.warning(f"racksmith: the play's hosts not listed in the report: {exc}")

    def _record(self, result, status: str) -> None:
        self._progress.flush()  # a batch's last lines belong under its task, not after the recap
        msg = _message(result.result) if status in ("failed", "unreachable") else None
        self._report.record(result.host.get_name(), self._phase, status, msg)

    def v2_runner_on_ok(self, result):
        self._record(result, "changed" if result.result.get("changed") else "ok")
        self._note_skips(result)

    def _note_skips(self, result) -> None:
        """Keep the skips a role announced; a malformed announcement is said, not dropped."""
        host = result.host.get_name()
        try:
            skips = skips_of(result.result)
        except ValueError as exc:
            self._display.warning(f"racksmith: {host}: skip not in the report: {exc}")
            return
        for skip in skips:
            self._report.skip(host, skip)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "ok" if ignore_errors else "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        if self._report is None:  # no playbook started (a syntax check, a listing)
            return
        self._progress.stop()
        self._annotate_hosts()
        report = self._report
        report.finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        run_dir = Path(report.run_dir)
        if os.environ.get(SHARD_ENV) == "1":  # one process of a sliced run: its shard only
            self._write_shard(report, run_dir)
            return
        try:  # the merge of a sliced run: the shards' reports, then this process's own
            report = merged_report(run_dir, report) or report
        except (OSError, ValueError) as exc:
            self._display.warning(f"racksmith: the sliced run's shards not merged: {exc}")
        try:
            attach_golden_set(report, run_dir)
        except ValueError as exc:
            self._display.warning(f"racksmith: golden set not used: {exc}")
        try:
            published = publish(
                report,
                run_dir,
                prom_path=self._option("prom_path"),
                ticket_url=self._option("ticket_url"),
            )
            text = published.text
            for warning in published.warnings:
                self._display.warning(f"racksmith: {warning}")
        except (OSError, ValueError) as exc:
            text = report.render_text()
            self._display.warning(f"racksmith: cannot write the report to {run_dir}: {exc}")
        self._display.banner("RACKSMITH REPORT")
        self._display.display(text)
        self._display.display(f"report: {run_dir / 'report.txt'} (HTML: report.html)")
        try:
            path = history.default_path(run_dir)
            history.append(path, history.record_of(report.to_dict()))
        except (OSError, ValueError) as exc:
            self._display.warning(f"racksmith: run not added to the health history: {exc}")

    def _write_shard(self, report, run_dir: Path) -> None:
        """A slice's (or the deploy process's) part of a sliced run: report.json with its
        hosts' golden-set entries; tickets, the history line and the Prometheus file are the
        merged run's (racksmith.report.merge), written once."""
        try:
            attach_golden_set(report, run_dir)
            (run_dir / REPORT_JSON).write_text(report.to_json() + "\n")
        except (OSError, ValueError) as exc:
            self._display.warning(f"racksmith: cannot write the shard's report to {run_dir}: {exc}")
            return
        self._display.display(f"racksmith: shard report: {run_dir / REPORT_JSON}")

    def _annotate_hosts(self) -> None:
        """Read the racksmith_* facts phases left on each host; never break the run for it."""
        if self._play is None:
            return
        try:
            vm = self._play.get_variable_manager()
            # inventory.hosts, not get_hosts(): the latter honours the last play's restriction.
            for host in vm._inventory.hosts.values():
                if host.name not in self._report.hosts:
                    continue
                hostvars = vm.get_vars(host=host, include_hostvars=False)
                self._report.annotate(host.name, {k: hostvars.get(k) for k in HOST_VARS})
        except Exception as exc:
            self._display.warning(f"racksmith: could not read host facts for the report: {exc}")


class _ProgressThread:
    """Tails the run's progress file once a second and prints what the printer picks, so long
    waits inside one task show up in plain ansible-playbook output."""

    def __init__(self, display, run_dir: str):
        self._display = display
        raw = os.environ.get("RACKSMITH_PROGRESS_INTERVAL", "")
        try:
            interval = float(raw) if raw else DEFAULT_INTERVAL
            if not math.isfinite(interval) or interval <= 0:  # NaN and inf fail too
                raise ValueError(raw)
        except ValueError:
            display.warning(
                f"racksmith: RACKSMITH_PROGRESS_INTERVAL={raw!r} is not a positive number of "
                f"seconds; using {DEFAULT_INTERVAL:g}"
            )
            interval = DEFAULT_INTERVAL
        self._tail = ProgressTail(progress_path(run_dir))
        self._printer = ProgressPrinter(interval)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="racksmith-progress", daemon=True)

    def start(self) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.flush()  # what arrived since the last tick

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.flush()

    def flush(self) -> None:
        """Print what the printer picks from the lines written since the last call."""
        with self._lock:
            try:
                lines = self._printer.feed(self._tail.poll(), time.monotonic())
            except OSError as exc:
                lines = [f"progress: cannot read {self._tail.path}: {exc}"]
            for line in lines:
                self._display.display(line)
