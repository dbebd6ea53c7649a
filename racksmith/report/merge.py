"""A sliced run's one result from its shards: the rack report, the golden set, fabric cabling.

A sliced run (``racksmith run --slices K``, or AWX job templates in a workflow: docs/fleet.md,
"Sliced runs") is several ansible-playbook processes: one that takes the whole rack from
discovery to deploy, then K slices that configure and validate their share of the hosts. Each
process writes only into its own shard, ``RUN_DIR/shards/<name>/`` (its ``report.json``, its
hosts' ``golden-set.json`` entries, ``fabric/hosts.json``), so no two processes ever write the
same file; this module builds the run's own result from them, once, in ``RUN_DIR``:

- the report: each host's phases from the first shard that ran them (``preflight`` and the
  discovery triage are tagged ``always`` and run again in every slice: the same checks, counted
  once), what phases recorded about it from the last shard that did (a slice knows more than the
  deploy process), the controller's task counts summed (it did all of them);
- the golden set: every shard's judged entries, and each other host that reached deployment or
  was quarantined (``{failure: why}``, judged by :func:`racksmith.health.golden.assemble`, as
  validate does in one process); a host judged by two shards is an error, not a choice;
- fabric: every shard's HCA ports in one ``fabric/hosts.json``, then the cabling check over all of
  them (a slice alone would call every other slice's cables unknown).

Pure apart from reading and writing the run directory; ``python -m racksmith.report.merge``
is the command the merge playbook (playbooks/merge.yml) runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from racksmith.errors import UsageError
from racksmith.health import golden as golden_mod
from racksmith.phases.validate import NO_RESULT
from racksmith.report.model import CONTROLLER, PhaseOutcome, RunReport
from racksmith.report.publish import GOLDEN_SET, REPORT_JSON, read_json
from racksmith.report.summary import summary_of

#: Where a sliced run's processes write, one folder each, under the run directory.
SHARDS_DIR = "shards"
#: The HCA ports validate hands to the cabling check, relative to a run (or shard) directory.
FABRIC_HOSTS = "fabric/hosts.json"
CABLING = "fabric/cabling.json"
#: Set (to 1) in a shard process's environment: its callback writes the shard's report.json
#: only (no tickets, history line or Prometheus file: the merged run writes those once).
SHARD_ENV = "RACKSMITH_SHARD"

_OUTCOME_KEYS = ("ok", "changed", "failed", "skipped", "unreachable")

#: Extra variables that name a sliced run's directory where no one sets RACKSMITH_RUN_DIR (AWX:
#: the workflow's three job templates; docs/awx.md, "A sliced workflow").
RUN_ID_VAR = "racksmith_run_id"
SHARD_VAR = "racksmith_shard"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def named_run_dir(
    runs: Path, extra_vars: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Path, bool] | None:
    """The run directory the extra variables name, and whether this process is a shard of it;
    None without ``racksmith_run_id``. ``racksmith_run_id`` names the run (``runs/<id>/``,
    the same for every job of one workflow); ``racksmith_shard`` makes this job one shard of it:
    ``prepare`` (the unsliced job before the slices), or ``slice`` (each job of a sliced job
    template: ``shards/slice-<JOB_ID>``, AWX's job id, so slices never share a folder). The
    merge job sets neither ``racksmith_shard``: it writes the run's own report."""
    run_id = extra_vars.get(RUN_ID_VAR)
    if run_id in (None, ""):
        return None
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise ValueError(
            f"{RUN_ID_VAR}: expected a folder name (letters, digits, . _ -): {run_id!r}"
        )
    base = runs / run_id
    shard = extra_vars.get(SHARD_VAR)
    if shard in (None, ""):
        return base, False
    if shard == "prepare":
        return base / SHARDS_DIR / "prepare", True
    if shard == "slice":
        job = str(environ.get("JOB_ID") or "")
        if not job.isdigit():
            raise ValueError(f"{SHARD_VAR}: slice: no AWX job id (JOB_ID) to name the shard by")
        return base / SHARDS_DIR / f"slice-{job}", True
    raise ValueError(f"{SHARD_VAR}: expected prepare or slice, got {shard!r}")


def _natural(path: Path) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name)]


def shard_dirs(run_dir: str | os.PathLike) -> list[Path]:
    """The run's shards that wrote a report, in order (``prepare``, ``slice-1``, ``slice-2``,
    ... ``slice-10``): the order their processes ran in, which the merge relies on."""
    root = Path(run_dir) / SHARDS_DIR
    if not root.is_dir():
        return []
    found = [d for d in root.iterdir() if d.is_dir() and (d / REPORT_JSON).is_file()]
    return sorted(found, key=lambda d: (not d.name.startswith("prepare"), _natural(d)))


def load_shard(folder: Path) -> RunReport:
    """A shard's report.json; unreadable is a ValueError naming the file (fail closed: a
    merged report that silently lacks a slice would call its hosts INCOMPLETE)."""
    data = read_json(folder / REPORT_JSON)
    try:
        return RunReport.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"{folder / REPORT_JSON}: {exc}") from exc


def merge_reports(shards: Iterable[RunReport], *, run_id: str, run_dir: str) -> RunReport:
    """One report from the shards' reports, in the order the processes ran (see the module
    docstring for which shard each part of a host's record comes from)."""
    out = RunReport(run_id=run_id, run_dir=run_dir, started="")
    starts, ends = [], []
    for shard in shards:
        if shard.started:
            starts.append(shard.started)
        if shard.finished:
            ends.append(shard.finished)
        for name, rec in shard.hosts.items():
            merged = out.host(name)
            for phase, outcome in rec.phases.items():
                known = merged.phases.get(phase)
                if known is None:
                    merged.phases[phase] = PhaseOutcome(
                        **{k: getattr(outcome, k) for k in (*_OUTCOME_KEYS, "reason")}
                    )
                elif name == CONTROLLER:
                    for key in _OUTCOME_KEYS:
                        setattr(known, key, getattr(known, key) + getattr(outcome, key))
                    known.reason = known.reason or outcome.reason
            for key in ("quarantine_reason", "failed_phase", "failure_reason", "health_verdict",
                        "location"):  # fmt: skip
                value = getattr(rec, key)
                if value:
                    setattr(merged, key, value)
            if rec.health_reasons:
                merged.health_reasons = list(rec.health_reasons)
            merged.facts = rec.facts or merged.facts
            merged.maas = rec.maas or merged.maas
            for skip in rec.skips:
                out.skip(name, skip)
    out.started = min(starts, default="")
    out.finished = max(ends, default=None)
    return out


def golden_entries(
    shard_golden: Mapping[str, Mapping[str, Any]],
    report: RunReport,
    deployed: Iterable[str] = (),
) -> dict[str, dict[str, Any]]:
    """Host -> golden-set input over the whole run: each shard's judged entries (shard name ->
    its golden-set.json); and, as validate does in one process (racksmith.phases.validate.
    golden_inputs), ``{failure: why}`` for every other host that reached deployment
    (``deployed``: group maas_deployed) or was quarantined, from what the merged ``report``
    recorded about it. A host judged in two shards is a ValueError naming both."""
    entries: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for shard, golden in shard_golden.items():
        hosts = golden.get("hosts")
        if not isinstance(hosts, Mapping):
            raise ValueError(f"{shard}: golden-set.json has no hosts")
        for name, entry in hosts.items():
            if name in owner:
                raise ValueError(
                    f"golden set: {name} was judged in two shards ({owner[name]}, {shard}):"
                    " a host belongs to one slice"
                )
            owner[name] = shard
            entries[name] = dict(entry)
    others = set(deployed) | {r.name for r in report.machines() if r.quarantine_reason}
    for name in sorted(others - set(entries) - {CONTROLLER}):
        rec = report.hosts.get(name)
        why = rec and (rec.failure_reason or rec.quarantine_reason)
        entries[name] = {"failure": str(why or NO_RESULT).strip()}
    return entries


def merge_golden(
    run_dir: Path, shards: list[Path], report: RunReport, deployed: Iterable[str] = ()
) -> dict:
    """Write the run's golden set (golden-set.json/.md) from the shards'; return it."""
    shard_golden = {
        str(d.relative_to(run_dir)): read_json(d / GOLDEN_SET)
        for d in shards
        if (d / GOLDEN_SET).is_file()
    }
    golden = golden_mod.assemble(
        golden_entries(shard_golden, report, deployed), run_id=run_dir.name
    )
    golden_mod.write(golden, run_dir)
    return golden


def merge_fabric(run_dir: Path, shards: list[Path]) -> dict[str, dict[str, str]]:
    """Every shard's HCA ports in the run's fabric/hosts.json (a host in two shards is a
    ValueError); return them."""
    ports: dict[str, dict[str, str]] = {}
    owner: dict[str, str] = {}
    for d in shards:
        path = d / FABRIC_HOSTS
        if not path.is_file():
            continue
        for name, hcas in read_json(path).items():
            if name in owner:
                raise ValueError(f"{FABRIC_HOSTS}: {name} in two shards ({owner[name]}, {d.name})")
            owner[name] = d.name
            ports[name] = dict(hcas)
    target = run_dir / FABRIC_HOSTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(dict(sorted(ports.items())), indent=2) + "\n")
    return ports


def check_cabling(run_dir: Path, plan: str, topology: str) -> dict[str, Any]:
    """The cabling check over the whole run's hosts, as validate runs it in one process
    (``racksmith fabric cabling --json``); written to fabric/cabling.json."""
    from racksmith.fabric import cabling, hosts, wiring
    from racksmith.fabric import topology as topology_io

    owners = hosts.load(run_dir / FABRIC_HOSTS)
    report = cabling.check(topology_io.load(topology), wiring.load(plan), owners)
    data = report.as_dict()
    (run_dir / CABLING).write_text(json.dumps(data, indent=2) + "\n")
    return {"ok": report.ok, "findings": len(report.findings)}


def merge_run(
    run_dir: str | os.PathLike,
    *,
    deployed: Iterable[str] = (),
    plan: str = "",
    topology: str = "",
) -> dict:
    """Golden set and fabric of a sliced run from its shards; what was written, as a summary
    (with the run summary AWX gets, as summary.yml hands it in one process)."""
    folder = Path(run_dir).resolve()
    shards = shard_dirs(folder)
    if not shards:
        raise ValueError(f"{folder}: no shards ({SHARDS_DIR}/*/{REPORT_JSON}): nothing to merge")
    report = merge_reports([load_shard(d) for d in shards], run_id=folder.name, run_dir=str(folder))
    golden = merge_golden(folder, shards, report, deployed)
    ports = merge_fabric(folder, shards)
    cabling = check_cabling(folder, plan, topology) if plan and topology else None
    report.attach_golden(golden)
    return {
        "run_dir": str(folder),
        "shards": [d.name for d in shards],
        "hosts": len(golden["hosts"]),
        "golden": len(golden["golden"]),
        "hca_hosts": len(ports),
        "cabling": cabling,
        "summary": summary_of(report, str(folder)),
    }


def merged_report(run_dir: str | os.PathLike, own: RunReport | None = None) -> RunReport | None:
    """The run's report from its shards and, last, the merging process's own (its controller
    tasks); None when the run has no shards (a run of one process: its own report is it)."""
    folder = Path(run_dir)
    shards = shard_dirs(folder)
    if not shards:
        return None
    reports = [load_shard(d) for d in shards]
    if own is not None:
        reports.append(own)
    return merge_reports(reports, run_id=folder.name, run_dir=str(folder))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m racksmith.report.merge",
        description="Merge a sliced run's shards: golden set, fabric/hosts.json and cabling.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument(
        "--deployed", default="", metavar="HOSTS", help="group maas_deployed, comma-separated"
    )
    parser.add_argument("--fabric-plan", default="", metavar="CSV", help="the wiring plan")
    parser.add_argument(
        "--fabric-topology", default="", metavar="FILE", help="an ibnetdiscover dump"
    )
    args = parser.parse_args(argv)
    try:
        summary = merge_run(
            args.run_dir,
            deployed=[h for h in args.deployed.split(",") if h],
            plan=args.fabric_plan,
            topology=args.fabric_topology,
        )
    except (OSError, ValueError, UsageError) as exc:  # UsageError: a fabric input said why
        print(f"racksmith report merge: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, sort_keys=True))
    return 0 if not summary["cabling"] or summary["cabling"]["ok"] else 1


if __name__ == "__main__":  # pragma: no cover - the merge playbook's entry point
    sys.exit(main())
