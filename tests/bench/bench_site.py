"""Benchmark: ``site.yml`` end to end on a generated lab rack of N servers with injected faults.

The figures of issue 11 for a whole rack, measured, not modelled: a rack of ``--servers``
(default 64) with ``--faults`` (default 10 %, mixed across BMC, MAAS and hardware faults) is
generated with its inventory (``racksmith lab rack --inventory``), its own lab is started
(bridge rslab5, 192.168.236.0/23, lab dir /var/lib/racksmith/lab-site, BMCs from port 9443,
MAAS on 127.0.0.1:5245: clear of the demo lab's rslab0, /var/lib/racksmith/lab, 8443+, 5240),
and for each ``--forks`` value, on a fresh lab (no machines in MAAS, no test hosts):

1. ``ansible-playbook site.yml -i INVENTORY --forks F``, every output line time-stamped
   (``bench-site.log`` in the run directory), phase wall times from the ``PLAY [Phase ...]``
   lines;
2. ``racksmith lab check-run RUN_DIR``: did every server end as its faults say?
3. the deploy figures: the deploy batch task and the whole deploy phase against the lab's
   simulated install time (``DURATIONS["deploying"]`` of the MAAS simulator over its clock
   speed) and against the slowest single deploy of the run (Deploying -> Deployed, from the
   simulator's MAAS events);
4. the apt cache over the configure phase only (``racksmith lab cache-stats`` on the log lines
   time-stamped inside that phase): bytes fetched from upstream vs served to hosts;
5. for the first forks value (unless ``--no-rerun``): the same ``site.yml`` again, which must
   report ``changed=0`` for every host (PLAY RECAP and report.json) and judge the same;
   ``--compare-template-cache`` adds one more such rerun with the compiled-template cache off
   (``ANSIBLE_CALLBACKS_ENABLED=racksmith_report``: no ``template_cache`` callback), printed
   beside it (label ``rerun-f<F>-nocache``).

``--deploy-forks F`` adds, first, a fresh run of the phases up to deploy only (``--tags
preflight,discover,enlist,deploy``) per value: the deploy figure at that forks without paying
for a second configure phase (a partial run, so not judged by check-run).

``--controller-cpus N`` runs the reruns with the controller (ansible-playbook and all it starts)
on the first N CPUs and every other process of the machine (test hosts, the lab's services) on
the rest (:class:`OwnCores`): issue 25's controller CPU as on a controller with cores of its own.

No timing is asserted (the machine is shared; load average is printed with every figure).
Exit 1 when check-run fails, a rerun changed anything, or a run could not be measured; the
bench's lab is torn down at the end, also on failure and Ctrl-C.

    sudo .venv/bin/python tests/bench/bench_site.py                       # 64 servers, forks 64
    sudo .venv/bin/python tests/bench/bench_site.py --forks 64 --forks 8  # both, fresh lab each
    sudo .venv/bin/python tests/bench/bench_site.py --deploy-forks 8 --cold-cache  # as measured
    sudo .venv/bin/python tests/bench/bench_site.py --quick               # 2 servers, 1 fault
    sudo .venv/bin/python tests/bench/bench_site.py --servers 4 --faults 0 --compare-template-cache
    sudo .venv/bin/python tests/bench/bench_site.py --servers 4 --faults 0 --controller-cpus 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from racksmith.lab import cachestats, paths
from racksmith.lab.creds import read_env
from racksmith.lab.maassim.state import DURATIONS
from racksmith.maas.auth import resolve_credentials
from racksmith.maas.client import MaasClient

REPO = Path(__file__).resolve().parents[2]
#: The bench's own run directories and health history: never the checkout's runs/, whose
#: history.jsonl ranks a site's golden hosts (a bench rack reuses the demo's host names).
RUNS_ROOT = Path("/tmp/racksmith-bench-site-runs")

BIN = Path(sys.executable).parent
# The bench's own lab: must never collide with the demo lab (rslab0, 192.168.250,
# /var/lib/racksmith/lab, BMC ports 8443+, MAAS 5240).
LAB = {
    "bridge": "rslab5",
    "prefix": "192.168.236",
    "bmc_base_port": 9443,
    "maas_listen": "127.0.0.1:5245",
    "lab_dir": Path("/var/lib/racksmith/lab-site"),
}
PHASES = ("preflight", "discover", "enlist", "deploy", "configure", "validate")
DEPLOY_TASK = "TASK [Deploy the OS on every server at once"
DEPLOY_TAGS = "preflight,discover,enlist,deploy"
_STAMP = re.compile(r"^(\d+\.\d+) (.*)$")
_RESULT = re.compile(r"^(ok|changed|skipping|failed|fatal): \[")
_HOST_RESULT = re.compile(r"^(?:ok|changed|skipping|failed|fatal): \[([^\]\s]+)")
_TASK = re.compile(r"^TASK \[(?:(?P<role>[^\]]+?) : )?")
#: Issue 25's budget: task results per healthy host on a no-change rerun of the whole flow
#: (it was ~226; the issue asks <= 120; 29.4 on the 32-server rack and 42 on `--quick`'s one
#: healthy host, which also carries the run-once results, on 2026-12-02). Every rerun this
#: bench measures is checked against it, `--quick` in `make test` too, so the count cannot
#: creep back; no timing is checked.
RESULTS_BUDGET = 60
#: Share of the controller's CPU spent in ansible-playbook's one main process (the strategy),
#: which more cores do not spread: py-spy over an 8-server site.yml run, 2026-12-01
#: (docs/fleet.md, "What the controller's share costs"). The rest (forked workers, ssh,
#: controller-side modules) runs on any core.
MAIN_SHARE = 0.68
_RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")
_SPEED = re.compile(r"clock x([0-9.]+)")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class OwnCores:
    """``--controller-cpus N``: the controller (this process, so ansible-playbook and all it
    starts) on the first N CPUs, every other process of the machine (the test hosts, the lab's
    BMCs, MAAS and apt cache, anything else running) on the rest, for the ``with`` block.

    Why: on the 2-core machine type the 30 test hosts of a 32-server rack compete with the
    controller for both cores, and its CPU seconds per task result more than doubled under that
    load (124-132 ms against 54-86 ms on a quiet machine). Issue 25 measures the controller's
    cost, as on a controller with cores of its own; pinning gives it one. Each thread's
    affinity is restored afterwards (per-CPU kernel threads cannot move and are left alone).
    New processes inherit their parent's CPUs, so the hosts' sshd children stay on the rest."""

    def __init__(self, controller_cpus: int) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        if not 0 < controller_cpus < len(cpus):
            raise ValueError(
                f"--controller-cpus {controller_cpus}: needs 1 to {len(cpus) - 1} of the"
                f" {len(cpus)} CPUs this process may use (the rest run everything else)"
            )
        self.controller, self.rest = set(cpus[:controller_cpus]), set(cpus[controller_cpus:])
        self.everywhere = set(cpus)
        self.saved: dict[int, set[int]] = {}

    def __str__(self) -> str:
        return (
            f"controller on CPU {sorted(self.controller)}, everything else on {sorted(self.rest)}"
        )

    def __enter__(self) -> OwnCores:
        me = os.getpid()
        for task in Path("/proc").glob("[0-9]*/task/[0-9]*"):
            tid = int(task.name)
            if int(task.parent.parent.name) == me:
                continue
            try:
                before = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, self.rest)
            except OSError:  # gone, or a per-CPU kernel thread
                continue
            self.saved[tid] = before
        os.sched_setaffinity(0, self.controller)
        return self

    def __exit__(self, *exc: object) -> None:
        os.sched_setaffinity(0, self.everywhere)
        # also the processes started meanwhile by pinned ones (a service a host started)
        for task in Path("/proc").glob("[0-9]*/task/[0-9]*"):
            tid = int(task.name)
            try:
                if tid in self.saved or os.sched_getaffinity(tid) == self.rest:
                    os.sched_setaffinity(tid, self.saved.get(tid, self.everywhere))
            except OSError:
                continue
        self.saved.clear()


def cpu_seconds() -> tuple[float, float]:
    """(CPU seconds of this process's finished children: ansible-playbook, its workers, ssh and
    the controller-side modules; CPU seconds the whole machine was busy: test hosts too)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return kids.ru_utime + kids.ru_stime, (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# -- pure parsing -----------------------------------------------------------------------------


def stamped(lines: list[str]) -> list[tuple[float, str]]:
    """``<unix time> <line>`` as written by :func:`play` -> (time, line)."""
    out = []
    for n, line in enumerate(lines, start=1):
        match = _STAMP.match(line.rstrip("\n"))
        if not match:
            raise ValueError(f"bench-site.log:{n}: not '<time> <line>': {line[:80]!r}")
        out.append((float(match.group(1)), match.group(2)))
    return out


def phase_times(log: list[tuple[float, str]]) -> dict[str, tuple[float, float]]:
    """Phase -> (start, end): from its first ``PLAY [Phase <name>`` line to the next phase's
    first play (or PLAY RECAP)."""
    starts: list[tuple[str, float]] = []
    end = None
    for t, line in log:
        for phase in PHASES:
            if line.startswith(f"PLAY [Phase {phase}:") and phase not in dict(starts):
                starts.append((phase, t))
        if line.startswith("PLAY RECAP"):
            end = t
    if end is None:
        raise ValueError("no PLAY RECAP in the output: the run did not finish")
    bounds = [t for _, t in starts[1:]] + [end]
    return {phase: (t0, t1) for (phase, t0), t1 in zip(starts, bounds, strict=True)}


def task_time(log: list[tuple[float, str]], prefix: str) -> float | None:
    """Seconds from the task line starting with ``prefix`` to the next TASK/PLAY line."""
    for i, (t, line) in enumerate(log):
        if line.startswith(prefix):
            nxt = next((u for u, ln in log[i + 1 :] if ln.startswith(("TASK [", "PLAY "))), None)
            return None if nxt is None else nxt - t
    return None


def task_results(log: list[tuple[float, str]]) -> int:
    """Task results the run printed (one per host and task, one per loop item): the unit of
    ansible-playbook's work on the controller, whatever the hosts cost."""
    return sum(1 for _, line in log if _RESULT.match(line))


def results_by_part(log: list[tuple[float, str]]) -> dict[tuple[str, str], dict[str, int]]:
    """(phase, role) -> host -> task results (``ok``/``changed``/``skipping``/``failed`` lines
    after a ``TASK [role : ...]`` line; role ``-`` for a play's own tasks). A delegated
    result (``host -> localhost``) counts for the host it was for."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    phase, role = "-", "-"
    for _, line in log:
        if line.startswith("PLAY [Phase "):
            phase = line[len("PLAY [Phase ") :].split(":", 1)[0]
            continue
        if line.startswith("TASK ["):
            match = _TASK.match(line)
            role = (match.group("role") or "-").rpartition(".")[2] if match else "-"
            continue
        match = _HOST_RESULT.match(line)
        if match:
            hosts = out.setdefault((phase, role), {})
            hosts[match.group(1)] = hosts.get(match.group(1), 0) + 1
    return out


def golden_hosts(report: dict) -> list[str]:
    """Hosts report.json calls GOLDEN: the healthy hosts, which ran every phase."""
    return sorted(n for n, h in report.get("hosts", {}).items() if h.get("result") == "GOLDEN")


def recap(log: list[tuple[float, str]]) -> dict[str, dict[str, int]]:
    """PLAY RECAP lines -> host -> counts."""
    rows = {}
    for _, line in log:
        match = _RECAP.match(line)
        if match:
            host, *counts = match.groups()
            keys = ("ok", "changed", "unreachable", "failed")
            rows[host] = dict(zip(keys, map(int, counts), strict=True))
    return rows


def report_changed(report: dict) -> dict[str, int]:
    """Host -> changed tasks over all phases, from report.json."""
    return {
        name: sum(int(p.get("changed") or 0) for p in (host.get("phases") or {}).values())
        for name, host in report.get("hosts", {}).items()
    }


def _event_time(text: str) -> float:
    return datetime.strptime(text, "%a, %d %b. %Y %H:%M:%S").replace(tzinfo=UTC).timestamp()


def deploy_durations(events: list[dict], since: float) -> dict[str, float]:
    """Hostname -> seconds from Deploying to Deployed (events after ``since``; 1 s steps)."""
    began: dict[str, float] = {}
    took: dict[str, float] = {}
    for event in sorted(events, key=lambda e: e["id"]):
        if event.get("type") != "Node changed status":
            continue
        when = _event_time(event["created"])
        if when < since - 1:
            continue
        text, host = event.get("description", ""), event.get("hostname", "?")
        if text.endswith("to 'Deploying'"):
            began[host] = when
        elif text.endswith("to 'Deployed'") and host in began:
            took[host] = when - began.pop(host)
    return took


# -- the lab and the runs ---------------------------------------------------------------------


def lab_env(inventory: Path, **extra: str) -> dict[str, str]:
    """The environment a bench's racksmith runs get: the checkout's venv and ansible.cfg, the
    bench lab's rack file and lab directory, plus ``extra``."""
    return dict(
        os.environ,
        PATH=f"{BIN}:{os.environ.get('PATH', '')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        RACKSMITH_RACK=str(inventory / "rack.yml"),
        RACKSMITH_LAB_DIR=str(LAB["lab_dir"]),
        **extra,
    )


@dataclass
class Bench:
    inventory: Path
    lab_dir: Path
    env: dict[str, str] = field(default_factory=dict)

    def racksmith(self, *argv: str, check: bool = True, quiet: bool = False) -> str:
        done = subprocess.run(
            [str(BIN / "racksmith"), *argv],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and done.returncode:
            raise RuntimeError(
                f"racksmith {' '.join(argv)} exited {done.returncode}:\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        if not quiet:
            sys.stdout.write(done.stdout)
        return done.stdout + done.stderr

    def fresh(self) -> float:
        """Lab down, no machines in MAAS and no test hosts, lab up; seconds for ``up``.
        The apt cache's files stay (``--cold-cache`` removes them first)."""
        self.racksmith("lab", "down", check=False, quiet=True)
        shutil.rmtree(self.lab_dir / "maas", ignore_errors=True)
        t0 = time.monotonic()
        self.racksmith("lab", "up", quiet=True)
        took = time.monotonic() - t0
        for name in ("bmc.env", "maas.env"):
            self.env.update(read_env(self.lab_dir / "secrets" / name))
        return took

    def speed(self) -> float:
        text = paths.LabPaths(self.lab_dir).logfile("maas").read_text(errors="replace")
        found = _SPEED.findall(text)
        if not found:
            raise RuntimeError("the MAAS simulator's log does not say its clock speed")
        return float(found[-1])

    def events(self) -> list[dict]:
        """Every MAAS event of the simulator (INFO and above), paged by id."""
        creds = resolve_credentials(environ=self.env)
        out: list[dict] = []
        before = None
        with MaasClient(creds) as client:
            while True:
                params = {"level": "INFO", "limit": 1000}
                if before is not None:
                    params["before"] = before
                page = client.get("events/", params, op="query")["events"]
                out += page
                if len(page) < 1000:
                    return out
                before = min(e["id"] for e in page)


def play(
    bench: Bench, run_dir: Path, forks: int, tags: str | None = None
) -> tuple[int, list[tuple[float, str]]]:
    """site.yml on the rack; every line time-stamped into the run dir, the progress shown."""
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(bench.env, RACKSMITH_RUN_DIR=str(run_dir), ANSIBLE_NOCOLOR="1")
    argv = [str(BIN / "ansible-playbook"), "site.yml", "-i", f"{bench.inventory}/"]
    proc = subprocess.Popen(
        [*argv, "--forks", str(forks), *(["--tags", tags] if tags else [])],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    lines = []
    show = re.compile(r"^(PLAY \[|PLAY RECAP|(discover|enlist|deploy): |\[ERROR\])")
    with (run_dir / "bench-site.log").open("w") as log:
        assert proc.stdout is not None
        for line in proc.stdout:
            t = time.time()
            log.write(f"{t:.2f} {line}")
            lines.append((t, line.rstrip("\n")))
            if show.match(line):
                print(f"    {line.rstrip()[:110]}", flush=True)
    return proc.wait(), lines


@dataclass
class Figures:
    label: str
    forks: int
    wall: float
    rc: int
    load_start: str
    load_end: str
    check_rc: int
    phases: dict[str, float] = field(default_factory=dict)
    changed: int = 0  # recap sum
    changed_report: int = 0
    changed_hosts: list[str] = field(default_factory=list)
    deploy: dict[str, float] = field(default_factory=dict)
    cache: cachestats.CacheStats | None = None
    notes: list[str] = field(default_factory=list)  # what could not be measured
    notes_ok: list[str] = field(default_factory=list)  # remarks
    cpu_controller: float = 0.0  # CPU s of ansible-playbook and everything it started
    cpu_machine: float = 0.0  # CPU s the machine was busy (test hosts, other work too)
    results: int = 0  # task results printed (host x task, loop items apart)
    healthy: list[str] = field(default_factory=list)  # GOLDEN hosts (report.json)
    parts: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)

    def per_healthy(self, phase: str | None = None, role: str | None = None) -> float:
        """Task results per healthy host, over every part or the phase's/role's ones."""
        if not self.healthy:
            return float("nan")
        total = sum(
            n
            for (ph, ro), hosts in self.parts.items()
            if (phase is None or ph == phase) and (role is None or ro == role)
            for host, n in hosts.items()
            if host in self.healthy
        )
        return total / len(self.healthy)


def measure(
    bench: Bench,
    label: str,
    forks: int,
    runs_root: Path,
    deploy_figures: bool,
    tags: str | None = None,
    pin: OwnCores | None = None,
) -> Figures:
    run_dir = runs_root / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-site-{label}"
    what = f"site.yml --tags {tags}" if tags else "site.yml"
    print(f"\n== {label}: {what}, forks {forks}, run {run_dir} (load {load()})")
    if pin:
        print(f"    {pin}")
    load_start, t0, cpu0 = load(), time.monotonic(), cpu_seconds()
    with pin or contextlib.nullcontext():
        rc, log = play(bench, run_dir, forks, tags)
    wall, cpu1 = time.monotonic() - t0, cpu_seconds()
    fig = Figures(label, forks, wall, rc, load_start, load(), check_rc=-1)
    fig.cpu_controller, fig.cpu_machine = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    if tags:  # a partial run is not judged (its servers stop before their last phase)
        fig.check_rc = 0
        fig.notes_ok.append(f"partial run (--tags {tags}): not judged by check-run")
    check = (
        None
        if tags
        else subprocess.run(
            [str(BIN / "racksmith"), "lab", "check-run", str(run_dir)],
            cwd=REPO,
            env=bench.env,
            capture_output=True,
            text=True,
            check=False,
        )
    )
    if check is not None:
        fig.check_rc = check.returncode
        verdict = (check.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"    check-run: {verdict}")
        if check.returncode:
            print(check.stdout + check.stderr)
    try:
        times = phase_times(log)
    except ValueError as exc:
        fig.notes.append(str(exc))
        return fig
    fig.phases = {phase: t1 - t0 for phase, (t0, t1) in times.items()}
    fig.results = task_results(log)
    rows = recap(log)
    fig.changed = sum(r["changed"] for r in rows.values())
    fig.parts = results_by_part(log)
    try:
        report = json.loads((run_dir / "report.json").read_text())
        per_host = report_changed(report)
        fig.healthy = golden_hosts(report)
    except (OSError, ValueError) as exc:
        fig.notes.append(f"report.json unreadable: {exc}")
        fig.changed_report = -1
    else:
        fig.changed_report = sum(per_host.values())
        changed = {h for h, r in rows.items() if r["changed"]} | {
            h for h, n in per_host.items() if n
        }
        fig.changed_hosts = sorted(changed)
    if deploy_figures and "deploy" in times:
        speed = bench.speed()
        took = deploy_durations(bench.events(), since=times["deploy"][0])
        fig.deploy = {
            "phase": fig.phases["deploy"],
            "batch": task_time(log, DEPLOY_TASK) or float("nan"),
            "install": DURATIONS["deploying"] / speed,
            "speed": speed,
            "slowest": max(took.values(), default=float("nan")),
            "median": statistics.median(took.values()) if took else float("nan"),
            "deployed": len(took),
        }
    if "configure" in times:
        start, end = times["configure"]
        log_file = cachestats.log_path(bench.lab_dir)
        time.sleep(1)  # apt-cacher-ng writes its log lines as transfers end
        transfers = cachestats.parse(log_file.read_text(errors="replace"), source=str(log_file))
        fig.cache = cachestats.summarize(
            t for t in transfers if int(start) <= t.time <= int(end) + 1
        )
    return fig


# -- output -----------------------------------------------------------------------------------


def per_result(f: Figures) -> tuple[str, str]:
    """CPU ms per task result: the controller's, and the rest of the machine's (the test
    hosts' module runs, the lab's services)."""
    if not f.results:
        return "-", "-"
    host = max(f.cpu_machine - f.cpu_controller, 0.0)
    return f"{1000 * f.cpu_controller / f.results:.0f}", f"{1000 * host / f.results:.0f}"


def table(figs: list[Figures]) -> list[str]:
    cols = ("run", "forks", "wall s", *[f"{p} s" for p in PHASES], "changed", "check",
            "ctl CPU s", "all CPU s", "results", "ctl ms/result", "host ms/result",
            "ctl floor s", "load start", "load end")  # fmt: skip
    rows = [cols]
    for f in figs:
        rows.append(
            (
                f.label,
                str(f.forks),
                f"{f.wall:.0f}",
                *[f"{f.phases[p]:.0f}" if p in f.phases else "-" for p in PHASES],
                str(f.changed),
                "ok" if f.check_rc == 0 else f"FAIL({f.check_rc})",
                f"{f.cpu_controller:.0f}",
                f"{f.cpu_machine:.0f}",
                str(f.results),
                *per_result(f),
                f"{f.cpu_controller / (os.cpu_count() or 1):.0f}",
                f.load_start,
                f.load_end,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    return [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def per_host_lines(figs: list[Figures]) -> list[str]:
    """Per healthy host: controller CPU beside the rest of the machine's, task results, and
    where the results come from (each phase; each role of configure and validate)."""
    out = [
        "per healthy host  healthy  ctl CPU s  other CPU s  results  budget"
        "  (issue 25: ctl CPU <= 4 s and results <= 120 on a rerun)"
    ]
    for f in figs:
        n = len(f.healthy)
        if not n:
            out.append(f"{f.label:<16}  {n:7d}  (no healthy host: nothing per host)")
            continue
        other = max(f.cpu_machine - f.cpu_controller, 0.0) / n
        budget = f"<= {RESULTS_BUDGET}" if f.label.startswith("rerun") else "-"
        out.append(
            f"{f.label:<16}  {n:7d}  {f.cpu_controller / n:9.1f}  {other:11.1f}"
            f"  {f.per_healthy():7.1f}  {budget}   (all results / healthy: {f.results / n:.1f})"
        )
        phases = [p for p in PHASES if f.per_healthy(phase=p)]
        out.append("  by phase: " + ", ".join(f"{p} {f.per_healthy(phase=p):.1f}" for p in phases))
        for phase in ("configure", "validate"):
            roles = sorted({r for ph, r in f.parts if ph == phase})
            shares = [(r, f.per_healthy(phase=phase, role=r)) for r in roles]
            out.append(f"  {phase} by role: " + ", ".join(f"{r} {v:.1f}" for r, v in shares if v))
    return out


def projection_lines(f: Figures, hosts: int = 512, cores: tuple[int, ...] = (8, 32)) -> list[str]:
    """What a no-change rerun of ``hosts`` healthy hosts needs of a controller, from this run's
    measured controller CPU per task result and task results per healthy host: the main
    process's share is serial in one process and split by K slices (K processes), the rest
    spreads over the cores. A floor (the controller's CPU alone), not a prediction of wall."""
    if not f.healthy or not f.results:
        return []
    per_result = f.cpu_controller / f.results
    total = hosts * (f.results / len(f.healthy)) * per_result
    main = MAIN_SHARE * total
    out = [
        f"projection from {f.label}: {hosts} hosts x {f.results / len(f.healthy):.0f} results x"
        f" {1000 * per_result:.0f} ms = {total / 60:.0f} controller CPU-min"
        f" ({MAIN_SHARE:.0%} in the main process)",
        "  cores  single process: floor min  sliced K=cores: floor min",
    ]
    for n in cores:
        single = max(main, total / n) / 60
        sliced = max(main / n, total / n) / 60
        out.append(f"  {n:5d}  {single:25.1f}  {sliced:25.1f}")
    return out


def deploy_lines(figs: list[Figures]) -> list[str]:
    out = [
        "deploy (s)      batch  phase  install(sim)  slowest  median  deployed"
        "  batch/install  batch/slowest  phase/install"
    ]
    for f in figs:
        d = f.deploy
        if not d:
            continue
        out.append(
            f"forks {f.forks:<8} {d['batch']:6.1f} {d['phase']:6.1f} {d['install']:13.1f}"
            f" {d['slowest']:8.0f} {d['median']:7.0f} {d['deployed']:9.0f}"
            f" {d['batch'] / d['install']:14.2f}x {d['batch'] / d['slowest']:13.2f}x"
            f" {d['phase'] / d['install']:13.2f}x"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 servers, 1 fault (CI smoke)")
    parser.add_argument("--servers", type=int, help="rack size (default 64, quick 2)")
    parser.add_argument("--faults", help="faulty servers: 10%% or a count (default 10%%, quick 1)")
    parser.add_argument("--seed", type=int, default=7, help="rack seed (default 7)")
    parser.add_argument(
        "--forks", type=int, action="append", help="one fresh site.yml run per value (default 64)"
    )
    parser.add_argument(
        "--deploy-forks",
        type=int,
        action="append",
        default=[],
        help="also a fresh run of the phases up to deploy (--tags " + DEPLOY_TAGS + ") per value:"
        " the deploy figure at that forks without a second configure phase",
    )
    parser.add_argument("--no-rerun", action="store_true", help="skip the changed=0 rerun")
    parser.add_argument(
        "--controller-cpus",
        type=int,
        metavar="N",
        help="reruns with the controller on the first N CPUs and everything else on the rest"
        " (its CPU measured as on a controller with cores of its own; default: not pinned)",
    )
    parser.add_argument(
        "--compare-template-cache",
        action="store_true",
        help="one more rerun with the compiled-template cache off, printed beside the rerun",
    )
    parser.add_argument("--cold-cache", action="store_true", help="empty the apt cache first")
    parser.add_argument("--inventory", type=Path, default=Path("/tmp/racksmith-bench-site"))
    parser.add_argument(
        "--runs-root",
        type=Path,
        default=RUNS_ROOT,
        help=f"run directories and history.jsonl (default {RUNS_ROOT}; never the checkout's)",
    )
    args = parser.parse_args(argv)
    # quick: one healthy host and one faulty (the budget check needs one; each more costs the
    # CI lane a configure phase's worth of CPU on its shared core)
    servers = args.servers or (2 if args.quick else 64)
    faults = args.faults or ("1" if args.quick else "10%")
    forks_list = args.forks or [4 if args.quick else 64]
    if os.geteuid() != 0:
        print("bench_site: the lab needs root (bridge, netns, systemd-nspawn)", file=sys.stderr)
        return 1

    try:
        pin = OwnCores(args.controller_cpus) if args.controller_cpus else None
    except ValueError as exc:
        print(f"bench_site: {exc}", file=sys.stderr)
        return 2
    lab_dir = LAB["lab_dir"]
    env = lab_env(args.inventory, RACKSMITH_PROGRESS_INTERVAL="10")
    for name in ("MAAS_URL", "MAAS_API_KEY", "RACKSMITH_BMC_USERNAME", "RACKSMITH_BMC_PASSWORD"):
        env.pop(name, None)  # never another lab's credentials
    bench = Bench(inventory=args.inventory, lab_dir=lab_dir, env=env)
    if args.inventory.exists():
        shutil.rmtree(args.inventory)  # the bench's own directory; regenerated every time
    bench.racksmith(
        "lab", "rack", "--servers", str(servers), "--faults", faults, "--seed", str(args.seed),
        "--bridge", LAB["bridge"], "--prefix", LAB["prefix"],
        "--bmc-base-port", str(LAB["bmc_base_port"]), "--maas-listen", LAB["maas_listen"],
        "--inventory", str(args.inventory), "--lab-dir", str(lab_dir), quiet=True,
    )  # fmt: skip
    about = (args.inventory / "rack.yml").read_text().splitlines()[:2]
    print(f"bench_site: {about[1][2:]}\n  {about[0][2:]}")
    print(f"  machine: nproc {os.cpu_count()}, load {load()}; lab {lab_dir}, {LAB['bridge']}")

    def stop(signum, frame):  # a TERM tears the lab down like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    figs: list[Figures] = []
    problems: list[str] = []
    started = time.monotonic()
    try:
        if args.cold_cache:
            bench.racksmith("lab", "down", check=False, quiet=True)
            shutil.rmtree(paths.LabPaths(lab_dir).acng / "cache", ignore_errors=True)
        for forks in args.deploy_forks:
            up = bench.fresh()
            print(f"\nlab up (fresh: no machines, no hosts) in {up:.1f} s")
            figs.append(
                measure(bench, f"deploy-f{forks}", forks, args.runs_root, True, tags=DEPLOY_TAGS)
            )
        for i, forks in enumerate(forks_list):
            up = bench.fresh()
            print(f"\nlab up (fresh: no machines, no hosts) in {up:.1f} s")
            figs.append(measure(bench, f"first-f{forks}", forks, args.runs_root, True))
            if i == 0 and not args.no_rerun:
                figs.append(
                    measure(bench, f"rerun-f{forks}", forks, args.runs_root, False, pin=pin)
                )
            if i == 0 and not args.no_rerun and args.compare_template_cache:
                off = replace(
                    bench, env={**bench.env, "ANSIBLE_CALLBACKS_ENABLED": "racksmith_report"}
                )
                figs.append(
                    measure(off, f"rerun-f{forks}-nocache", forks, args.runs_root, False, pin=pin)
                )
    except KeyboardInterrupt:
        problems.append("interrupted")
    except (RuntimeError, OSError, ValueError, cachestats.LogFormatError) as exc:
        problems.append(f"could not measure: {exc}")
    finally:
        print("\ntearing the bench's lab down ...", flush=True)
        out = bench.racksmith("lab", "down", check=False, quiet=True)
        if "racksmith lab down:" in out:
            print(out)
            problems.append("lab down reported problems")

    print(f"\nbench_site: {servers} servers, faults {faults}, seed {args.seed};"
          f" nproc {os.cpu_count()}; total {time.monotonic() - started:.0f} s")  # fmt: skip
    print("\n".join(table(figs)))
    print(
        "  ctl CPU: ansible-playbook and all it started (workers, ssh, controller-side modules);"
        " all CPU: the machine's busy CPU seconds over the run (the test hosts run on it too);"
        " results: task results printed (host x task; loop items apart); ctl floor: ctl CPU /"
        " nproc, the wall the controller's share alone needs on this machine"
    )
    print()
    print("\n".join(per_host_lines(figs)))
    print(
        "  ctl CPU / other CPU: the run's controller CPU and the rest of the machine's (the test"
        " hosts' module runs, the lab's services) over its healthy (GOLDEN) hosts; results: task"
        " results of those hosts (role '-': a play's own tasks; a loop item counts as one); all"
        " results / healthy: every result of the run (localhost's, failed hosts') over them, as"
        " issue 25's ~226 was counted"
    )
    for f in figs:
        if f.label.startswith("rerun") and projection_lines(f):
            print("\n".join(projection_lines(f)))
    print()
    print("\n".join(deploy_lines(figs)))
    print(
        "  batch: the deploy task (every server's deploy in flight at once); phase: the deploy"
        " phase (batch + SSH/first-boot wait); install(sim): the MAAS simulator's install time"
        " (600 MAAS s / clock speed); slowest/median: single deploys of the run, Deploying ->"
        " Deployed from MAAS events (1 s steps)"
    )
    for f in figs:
        if f.cache is not None:
            print(f"\n{f.label}, configure phase only:")
            print(cachestats.format_text(f.cache, "configure phase"))
            if f.cache.upstream_bytes:
                ratio = f.cache.served_bytes / f.cache.upstream_bytes
                print(f"  served/upstream: {ratio:.1f}x")
        for note in f.notes_ok + f.notes:
            print(f"  note ({f.label}): {note}")
        if f.check_rc != 0:
            problems.append(f"{f.label}: check-run exit {f.check_rc}")
        if f.label.startswith("rerun") and (f.changed or f.changed_report):
            problems.append(
                f"{f.label}: changed {f.changed} (recap) / {f.changed_report} (report) on"
                f" {', '.join(f.changed_hosts[:8])}"
            )
        if f.label.startswith("rerun"):
            if not f.healthy:
                problems.append(f"{f.label}: no healthy host to count task results for")
            elif f.per_healthy() > RESULTS_BUDGET:
                problems.append(
                    f"{f.label}: {f.per_healthy():.1f} task results per healthy host, over the"
                    f" budget of {RESULTS_BUDGET} (issue 25; per phase and role above)"
                )
            else:
                print(
                    f"{f.label}: {f.per_healthy():.1f} task results per healthy host"
                    f" <= budget {RESULTS_BUDGET}: ok"
                )
        if f.notes:
            problems.append(f"{f.label}: not measured ({'; '.join(f.notes)})")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
