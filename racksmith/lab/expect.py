"""What the lab rack's run must end with, server by server, judged from its rack report.

The demo rack injects faults on purpose, so ``ansible-playbook`` exits non-zero on every
correct run. "Did the demo work?" therefore means: did each healthy server become GOLDEN, and
did each faulty one fail in the phase its fault belongs to, with a reason? This module answers
that from ``report.json``, so ``make demo`` fails when racksmith misjudges a server, not when
the lab's faults do what they are for. A server whose test host never booted (``LAB FAULT``,
triage cause ``lab_fault``) is not judged at all: the run still fails, naming the lab.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab import spec
from racksmith.lab.paths import add_lab_arguments, rack_file


@dataclass(frozen=True)
class Outcome:
    """What one fault must lead to: the server's result, the triage cause its ticket names,
    and, where the result alone does not tell faults apart (a quarantine may be for the GPUs
    or for the clock), what the reason must mention."""

    result: str
    cause: str
    reason: str = ""


# Faults not listed are ones racksmith must absorb (retries, clock correction, quirks): their
# servers must still end GOLDEN.
FAULT_OUTCOMES = {
    "bmc_unreachable": Outcome("FAILED:discover", "bmc_unreachable"),
    "bmc_auth_failed": Outcome("FAILED:discover", "bmc_auth"),
    "bmc_hang": Outcome("FAILED:discover", "bmc_unreachable"),
    "bmc_slow": Outcome("FAILED:discover", "bmc_unreachable"),
    "bmc_busy": Outcome("FAILED:discover", "bmc_error"),
    "bmc_reset": Outcome("FAILED:discover", "bmc_unreachable"),
    "bmc_malformed": Outcome("FAILED:discover", "bmc_error"),
    "bmc_empty_systems": Outcome("FAILED:discover", "bmc_error"),
    "missing_gpu": Outcome("QUARANTINED", "gpu_missing", "GPUs, BMC reports"),
    "bmc_clock_locked": Outcome("QUARANTINED", "clock_skew", "BMC clock"),
    "bmc_sel_psu": Outcome("QUARANTINED", "psu_fault", "BMC health (psu_fault)"),
    "firmware_old": Outcome("QUARANTINED", "firmware_drift", "drift from baseline"),
    "commission_fails": Outcome("FAILED:enlist", "commissioning_failed"),
    "power_fails": Outcome("FAILED:enlist", "power_control"),
    "deploy_fails": Outcome("FAILED:deploy", "deploy_failed"),
    "deploy_timeout": Outcome("FAILED:deploy", "boot_failure"),
}
_PHASE_ORDER = ("FAILED:discover", "QUARANTINED", "FAILED:enlist", "FAILED:deploy")
#: What the MAAS simulator writes when a server's test host never booted (labhosts.LabFault).
LAB_FAULT = "LAB FAULT"


def expected_result(server: spec.Server) -> str:
    """The first phase a server's faults stop it in, else GOLDEN."""
    results = {FAULT_OUTCOMES[f].result for f in server.faults if f in FAULT_OUTCOMES}
    return next((r for r in _PHASE_ORDER if r in results), "GOLDEN")


def report_names(rack: spec.RackSpec, server: spec.Server) -> tuple[str, ...]:
    """Names a server may carry in the report: its service tag (the inventory hostname), or
    ``bmc-<address>-<port>`` when its BMC never told us the tag."""
    return (server.service_tag.lower(), f"bmc-{rack.bmc_listen}-{server.bmc_port}")


def lab_fault(entry: dict) -> str | None:
    """The lab fault a host's report entry records, else None.

    A test host that never booted says nothing about the server, whatever its result: the
    simulator names it ``LAB FAULT: ...`` and the triage files it as ``lab_fault``.
    """
    maas = entry.get("maas") or {}
    texts = [*map(str, entry.get("reasons") or []), str(entry.get("failure_reason") or "")]
    texts.append(str(maas.get("cause") or "") if isinstance(maas, dict) else "")
    for text in texts:
        if LAB_FAULT in text:
            return text[text.index(LAB_FAULT) :]
    if (entry.get("triage") or {}).get("cause") == "lab_fault":
        return f"{LAB_FAULT}: triage cause lab_fault (see the host's ticket)"
    return None


def _decisive(server: spec.Server, want: str) -> list[Outcome]:
    """The outcomes of the server's faults that lead to ``want`` (the ones it is judged by)."""
    return [
        FAULT_OUTCOMES[f]
        for f in sorted(server.faults)
        if f in FAULT_OUTCOMES and FAULT_OUTCOMES[f].result == want
    ]


def _triage_problem(
    server: spec.Server, want: str, entry: dict, run_dir: Path | None
) -> str | None:
    """The faulty server's named cause and ticket (None when right, or not applicable)."""
    causes = {outcome.cause for outcome in _decisive(server, want)}
    if not causes:
        return None
    triage = entry.get("triage") or {}
    if triage.get("cause") not in causes:
        return f"cause {triage.get('cause')!r}, expected {' or '.join(sorted(causes))}"
    ticket = triage.get("ticket")
    if run_dir is not None and not (ticket and (run_dir / ticket).is_file()):
        return f"no ticket file for cause {triage.get('cause')} ({ticket or 'none named'})"
    return None


def check(
    rack: spec.RackSpec, report: dict, run_dir: Path | None = None
) -> list[tuple[spec.Server, str, str, str | None]]:
    """One row per server: (server, report name, result, problem or None). With ``run_dir``,
    each faulty server's ticket file must exist there too."""
    hosts = report.get("hosts", {})
    rows = []
    for server in rack.servers:
        want = expected_result(server)
        name = next((n for n in report_names(rack, server) if n in hosts), None)
        if name is None:
            rows.append((server, "-", "absent", f"not in the report, expected {want}"))
            continue
        got = hosts[name].get("result", "?")
        problem = None
        fault = lab_fault(hosts[name])
        if fault is not None:  # the lab failed this server: it was never judged
            problem = fault
        elif got != want:
            problem = f"expected {want}"
        elif want != "GOLDEN" and not hosts[name].get("reasons"):
            problem = "no reason given"
        else:
            text = " ".join(map(str, hosts[name].get("reasons") or []))
            missing = [
                f"reason should mention {outcome.reason!r}"
                for outcome in _decisive(server, want)
                if outcome.reason and outcome.reason not in text
            ]
            triage = _triage_problem(server, want, hosts[name], run_dir)
            problem = "; ".join([*missing, *([triage] if triage else [])]) or None
        rows.append((server, name, got, problem))
    return rows


def _latest_run(root: Path) -> Path:
    runs = sorted(root.glob("*/report.json"))  # run ids start with a UTC timestamp
    if not runs:
        raise FileNotFoundError(f"no report.json under {root}")
    return runs[-1].parent


def _cmd_check_run(args: argparse.Namespace) -> int:
    rack = spec.load(rack_file(args.rack))
    run_dir = Path(args.run_dir) if args.run_dir else _latest_run(Path(args.runs_root))
    rows = check(rack, json.loads((run_dir / "report.json").read_text()), run_dir)
    faults = [row for row in rows if row[3] and row[3].startswith(LAB_FAULT)]
    for server, name, result, problem in rows:
        kinds = ",".join(sorted(server.faults)) or "healthy"
        if problem and problem.startswith(LAB_FAULT):
            verdict = "LAB FAULT (not the server's)"
        else:
            verdict = f"WRONG: {problem}" if problem else "as expected"
        print(f"  {server.name:<8} {name:<20} {kinds:<18} {result:<16} {verdict}")
    for server, name, _result, problem in faults:
        print(f"LAB FAULT {server.name} ({name}), not the server's: {problem}")
    wrong = sum(1 for row in rows if row[3]) - len(faults)
    if wrong or faults:
        parts = [f"{wrong} server(s) did not end as the rack file says"] if wrong else []
        if faults:
            parts.append(f"{len(faults)} server(s) not judged: the lab failed them (LAB FAULT)")
        print(f"run {run_dir.name}: {'; '.join(parts)}")
        return 1
    print(f"run {run_dir.name}: every server ended as the rack file says it should")
    return 0


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    add_lab_arguments(parser)
    parser.add_argument("run_dir", nargs="?", help="a run directory (default: the latest run)")
    default_root = Path(__file__).resolve().parents[2] / "runs"
    parser.add_argument(
        "--runs-root",
        default=os.environ.get("RACKSMITH_RUNS_ROOT", str(default_root)),
        help="where runs are kept (default: runs/ of this checkout)",
    )
    parser.set_defaults(func=_cmd_check_run)
