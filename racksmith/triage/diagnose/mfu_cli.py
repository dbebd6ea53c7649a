"""``racksmith diagnose mfu METRICS``: name the cause a per-step MFU curve points to.

The expected level is explicit: ``--expected-mfu`` (a fraction), or ``--baseline`` (a healthy
run of the same job on the same hardware: its load report, smoke test result or log, or its
metrics file). With the run's hosts (``--inventory``/``--limit`` or ``--hosts``) and the
racksmith run that last checked them (``--run-dir``), the health reports and the history are
joined to name the hosts to look at first. Exit 0 healthy, 1 a pattern or no known pattern
(or too few steps to judge), 2 bad input. ``--json`` prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.optionspec import count, positive_int
from racksmith.triage.diagnose import evidence, hostsel, metrics
from racksmith.triage.diagnose.mfu import HEALTHY, Diagnosis, diagnose

HELP = "classify a per-step MFU curve and name the hosts to look at first"
SCHEMA = "racksmith.diagnose.mfu/v1"

_EPILOG = """examples:
  racksmith diagnose mfu smoke-1gpu.log --baseline load-report.json
  racksmith diagnose mfu steps.jsonl --expected-mfu 0.45 --checkpoint-every 500 --json
  racksmith diagnose mfu steps.csv --expected-mfu 0.42 -i inventory/site -l job42 \\
      --run-dir runs/20261130-064537-demo --ufm ufm-triage.jsonl
metrics file: JSON lines or CSV with step and mfu (a fraction), or step, tokens and seconds
(or time); the result (smoke-<N>gpu.json) and log of the smoke test are read as they are.
"""


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give MFU as a fraction of peak (0.45)")
    return value


def _steps(text: str) -> list[int]:
    try:
        out = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give step numbers, comma-separated") from None
    if not out or min(out) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give step numbers, comma-separated")
    return out


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n", 1)[1].split("\n\n")[0]
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("metrics", metavar="METRICS", help="per-step metrics file")
    expect = parser.add_mutually_exclusive_group(required=True)
    expect.add_argument(
        "--expected-mfu",
        type=_fraction,
        metavar="FRACTION",
        help="the MFU a healthy run of this job reaches on this hardware",
    )
    expect.add_argument(
        "--baseline",
        metavar="FILE",
        help="a healthy run's load report, smoke test result or metrics file",
    )
    parser.add_argument(
        "--warmup",
        type=count,
        metavar="N",
        help="leading steps left out (default: the smoke test's own warm-up "
        "for its files, 0 for others)",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=positive_int,
        metavar="N",
        help="the job's checkpoint interval in steps",
    )
    parser.add_argument(
        "--eval-every",
        type=positive_int,
        metavar="N",
        help="the job's evaluation interval in steps",
    )
    parser.add_argument(
        "--restart-at",
        type=_steps,
        default=[],
        metavar="STEP,...",
        help="steps where the job restarted (a step number that goes back is one already)",
    )
    hostsel.add_options(parser, "the run's hosts")
    parser.add_argument(
        "--run-dir",
        metavar="RUN_DIR",
        help="the racksmith run that last checked the hosts (health reports)",
    )
    parser.add_argument(
        "--history", metavar="FILE", help="health history (default: RUN_DIR/../history.jsonl)"
    )
    parser.add_argument(
        "--ufm",
        metavar="FILE",
        help="UFM event triage: racksmith fabric ufm EVENT_LOG --hosts hosts.json --json "
        "> FILE 2>&1 (the summary line on stderr says what needs attention)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(func=run)


def _history(args: argparse.Namespace):
    from racksmith.triage import history

    if args.history:
        path = Path(args.history)
        if not path.is_file():
            raise UsageError(f"--history {path}: no such file")
    elif args.run_dir:
        path = history.default_path(args.run_dir)
    else:
        return None, None
    try:
        return (history.read(path) if path.is_file() else None), path
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    try:
        curve = metrics.read(args.metrics)
        if args.baseline:
            expected, unit, expected_from = metrics.baseline(args.baseline)
        else:
            expected, unit, expected_from = args.expected_mfu, metrics.MFU, "--expected-mfu"
    except metrics.MetricsError as exc:
        raise UsageError(str(exc)) from exc
    if unit != curve.unit:
        raise UsageError(
            f"{args.metrics} is in {curve.unit}, the expectation ({expected_from}) in {unit}: "
            "give a baseline in the same unit"
        )
    if args.run_dir and not Path(args.run_dir).is_dir():
        raise UsageError(f"--run-dir {args.run_dir}: not a directory")
    hosts = [t.name for t in hostsel.targets(args, required=False)]
    records, history_path = _history(args) if hosts else (None, None)
    warmup = curve.warmup if args.warmup is None else args.warmup
    try:
        result = diagnose(
            curve.judged(warmup),
            expected,
            checkpoint_every=args.checkpoint_every,
            eval_every=args.eval_every,
            restarts=args.restart_at,
            unit=curve.unit,
        )
    except ValueError as exc:
        raise UsageError(f"{args.metrics}: {exc}") from exc
    ufm = None
    if args.ufm:
        try:
            ufm = evidence.read_ufm(args.ufm)
        except ValueError as exc:
            raise UsageError(f"--ufm {exc}") from exc
    joined = evidence.join(hosts, result.matches, args.run_dir, records, ufm) if hosts else []
    fabric_wide = any("ufm" in m.pattern.look_at for m in result.matches)
    doc = {
        "schema": SCHEMA,
        "metrics": str(args.metrics),
        "source": curve.source,
        "unit": curve.unit,
        "warmup": warmup,
        "expected": expected,
        "expected_from": expected_from,
        **result.to_dict(),
        "hosts": [e.to_dict() for e in joined],
        "history": str(history_path) if history_path else None,
        "suspect_hosts": [e.host for e in joined if e.score > 0],
        "fabric": list(ufm.fabric) if ufm and fabric_wide else [],
    }
    if args.json:
        json.dump(doc, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(text(doc, result))
    return 0 if result.verdict == HEALTHY else 1


def text(doc: dict, result: Diagnosis) -> str:
    """The human summary of ``doc`` (what ``--json`` prints, as lines)."""
    lines = [
        f"{doc['metrics']} ({doc['source']}, {doc['warmup']} warm-up steps left out): "
        f"{result.verdict.upper()}"
    ]
    shown = (
        f"{100 * doc['expected']:.1f}% MFU"
        if doc["unit"] == metrics.MFU
        else f"{doc['expected']:,.0f} {doc['unit']}"
    )
    lines.append(f"  expected {shown} ({doc['expected_from']})")
    fig = result.figures
    if fig:
        lines.append(
            f"  figures: {fig.steps} steps in {fig.segments} segment(s); level {fig.level:.0%} "
            f"of expected; noise {fig.noise:.1%}; dips {len(fig.dips)}"
            + (f" every {fig.dip_period} steps" if fig.dip_period else "")
            + f"; low episodes {len(fig.episodes)}; trend "
            + ", ".join(f"{t:.0%}" for t in fig.trend)
        )
    for m in result.matches:
        head = f"  pattern: {m.pattern.title} [{m.pattern.name}]"
        lines.append(head + ("" if m.confirmed else " (not confirmed)"))
        lines += [f"    evidence: {e}" for e in m.evidence]
        lines += [f"    cause: {c}" for c in m.pattern.causes]
    lines += [f"  unexplained: {u}" for u in result.unexplained]
    lines += [f"  note: {n}" for n in result.notes]
    lines += [f"  fabric: {f}" for f in doc["fabric"]]
    hosts = doc["hosts"]
    if hosts:
        named = [h for h in hosts if h["score"] > 0]
        lines.append(
            "  hosts to look at first: "
            + (", ".join(h["host"] for h in named) or "none named by the evidence")
        )
        for h in hosts:
            for f in h["findings"]:
                lines.append(f"    {h['host']}: {f['kind']} {f['status']}: {f['detail']}")
        gaps = [(h["host"], m) for h in hosts for m in h["missing"]]
        for host, gap in gaps[:20]:
            lines.append(f"    {host}: missing evidence: {gap}")
        if len(gaps) > 20:
            lines.append(f"    ... {len(gaps) - 20} more missing (see --json)")
    return "\n".join(lines)
