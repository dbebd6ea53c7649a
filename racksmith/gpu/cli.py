"""``python3 -m racksmith.gpu run``: the load checks and the smoke test, one verdict.

Order (reference, section 10): counters and clock state are read, the stress test runs on
every GPU at once while clock events are sampled, the counters are read again, then NVLink
peer bandwidth, the NCCL all-reduce, per-HCA ib_write_bw, and the training smoke test. The
report has the host agent's schema (kind "load") plus headline figures; exit codes are the
agent's: 0 fit, 1 not fit, 2 could not decide (and bad input, refused before anything runs).

Machine output: stdout carries the report and nothing else (``--json``: exactly one JSON
document). torchrun's and NCCL's output goes to log files in ``--out`` (``smoke-<n>gpu.log``,
``nccl-torchrun.log``, ``nccl-debug.log``), this run's progress to ``gpu-run.log``, and with
``-v`` both to stderr as they come. While the checks run, file descriptor 1 itself points at
``gpu-run.log``, so not even a library writing to it directly (CUDA, NCCL, C++ warnings) can
put a line in front of the report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from racksmith import __version__
from racksmith.health import commands
from racksmith.health import profile as profiles
from racksmith.health.checks import requirements
from racksmith.health.cli import integer_at_least, positive_number, usage_error
from racksmith.health.outcome import CheckResult, skipped, unknown
from racksmith.health.parsers import ParseError, nvlink, smi_xml
from racksmith.health.parsers.sysfs import PCI_LINK_ATTRS, pci_link
from racksmith.health.report import Report

from . import rules
from .sku import Sku, UnknownSku, lookup
from .smoke import Config as SmokeConfig

PARTS = ("stress", "nvlink", "nccl", "ib", "smoke")
PROG = "python3 -m racksmith.gpu"
#: The smoke rule needs 10 timed steps after the warm-up.
MIN_SMOKE_STEPS = SmokeConfig.warmup + 10

EXAMPLES = f"""examples:
  {PROG} run --profile h200-x2-vm --out /var/lib/racksmith/load
  {PROG} run --json --out load/ > load.json           # stdout: one JSON document only
  {PROG} run -v --only stress,nvlink --stress-seconds 60   # progress and torchrun output on stderr
  {PROG} run --smoke-gpus 1,8 --smoke-steps 300

exit status: 0 fit, 1 not fit, 2 could not decide or bad input (both not fit)
"""


def parts_list(text: str) -> list[str]:
    """argparse type for ``--only``: a comma-separated subset of ``PARTS``, none unknown."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown_parts = [p for p in parts if p not in PARTS]
    if unknown_parts or not parts:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(map(repr, unknown_parts)) or '(none given)'}; "
            f"choose from {','.join(PARTS)}"
        )
    return parts


def gpu_counts(text: str) -> list[int]:
    """argparse type for ``--smoke-gpus``: comma-separated GPU counts, each at least 1."""
    counts = []
    for item in (c.strip() for c in text.split(",")):
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise argparse.ArgumentTypeError(f"{item!r} is not a GPU count (an integer >= 1)")
        counts.append(int(item))
    return counts


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.splitlines()[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run",
        help="run the load checks and the smoke test",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--profile", default=profiles.DEFAULT_PROFILE, help="host-type profile")
    run.add_argument(
        "--only", type=parts_list, default=list(PARTS), help=f"subset of {','.join(PARTS)}"
    )
    run.add_argument(
        "--gpus", type=integer_at_least(0), default=0, help="GPUs to use (default: all visible)"
    )
    run.add_argument("--stress-seconds", type=positive_number, default=30.0)
    run.add_argument(
        "--smoke-steps",
        type=integer_at_least(MIN_SMOKE_STEPS),
        default=300,
        help=f"training steps (at least {MIN_SMOKE_STEPS}: {SmokeConfig.warmup} warm-up + 10)",
    )
    run.add_argument(
        "--smoke-gpus",
        type=gpu_counts,
        default=[],
        help="comma-separated GPU counts (default: all)",
    )
    run.add_argument("--no-compile", action="store_true", help="smoke test without torch.compile")
    run.add_argument("--out", default="load-checks", help="directory for logs and the report")
    run.add_argument("--json", action="store_true", help="print only the JSON report on stdout")
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="progress, torchrun/NCCL output and the figures on stderr as they come",
    )
    return parser


def _smi(timeout: float = 30.0):
    result = commands.run(("nvidia-smi", "-q", "-x"), timeout)
    if not result.ok:
        raise ParseError(result.describe_failure())
    return smi_xml.parse(result.stdout)


def gpus_free(profile: profiles.Profile) -> CheckResult | None:
    """The quick check's leftover-process rule, run before anything touches a GPU: a host
    where a process outside the profile's allow-list holds a GPU, or more memory is in use than
    the profile allows, gets no load checks and no smoke test (a test that fits in what is left
    would call a host fit whose next job runs out of memory). None when the GPUs are free."""
    from racksmith.health.checks.gpu import (
        DEFAULT_MAX_USED_MIB,
        DEFAULT_PROCESS_ALLOW,
        leftover_findings,
    )

    title = "No leftover processes or memory in use on the GPUs (before the load checks)"
    try:
        log = _smi()
    except ParseError as exc:
        return CheckResult(
            "gpu_processes", title, (unknown(f"cannot tell whether the GPUs are free: {exc}"),)
        )
    findings = leftover_findings(
        log,
        tuple(profile.get("gpu.processes.allow", DEFAULT_PROCESS_ALLOW)),
        profile.get("gpu.processes.max_used_mib", DEFAULT_MAX_USED_MIB),
    )
    if not findings:
        return None
    return CheckResult("gpu_processes", title, tuple(findings))


def _nvlink_errors():
    result = commands.run(("nvidia-smi", "nvlink", "-e"), 30.0)
    if not result.ok:
        return None
    try:
        return nvlink.parse_errors(result.stdout)
    except ParseError:
        return None


def _guard(name: str, title: str, func) -> CheckResult:
    """A part that raises is UNKNOWN with the error, never a pass."""
    try:
        return func()
    except Exception as exc:
        return CheckResult(name, title, (unknown(f"{type(exc).__name__}: {str(exc)[:1500]}"),))


Echo = Callable[[str], None]


def _quiet(line: str) -> None:
    """Child output without ``-v``: it is in its log file only."""


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Console:
    """Where the run's own progress lines and its children's output go: progress into
    ``log`` (``gpu-run.log``) always, both to stderr with ``-v``; never to stdout."""

    log: TextIO | None = None
    verbose: bool = False

    def progress(self, line: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {line}"
        if self.log is not None:
            self.log.write(line + "\n")
            self.log.flush()
        if self.verbose:
            _to_stderr(line)

    def child(self, label: str) -> Echo:
        """The echo for one child's output lines (already in its own log file)."""
        if not self.verbose:
            return _quiet
        return lambda line: _to_stderr(f"[{label}] {line}")


def run(args: argparse.Namespace, console: Console | None = None) -> Report:
    """Run the selected parts, saying what runs through ``console``."""
    console = console or Console()
    echo = console.progress
    started_wall, started = time.time(), time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = list(args.only)
    results: list[CheckResult] = []
    figures: dict = {}
    notes: list[str] = []

    def finish(profile_name: str = args.profile, source: str = "") -> Report:
        report = Report(
            "load",
            profile_name,
            source,
            results,
            started_wall,
            time.monotonic() - started,
            notes=notes,
            figures=figures,
        )
        (out / "load-report.json").write_text(report.to_json() + "\n")
        return report

    try:
        profile = profiles.load(args.profile, requirements())
    except profiles.ProfileError as exc:
        results.append(CheckResult("profile", "Host-type profile", (unknown(str(exc)),)))
        return finish()
    refusal = gpus_free(profile)
    if refusal is not None:
        results.append(refusal)
        notes.append(
            "load checks and smoke test not started: a GPU is held or its state could not be "
            "read (see gpu_processes)"
        )
        echo(f"[gpu] refusing to start: {refusal.findings[0].reason}")
        return finish(profile.name, profile.source)
    try:
        import torch
    except ImportError:
        results.append(
            CheckResult(
                "torch",
                "PyTorch",
                (
                    unknown(
                        "PyTorch is not installed: the load checks could not run",
                        "Run them in the site's PyTorch container (docker --gpus all) "
                        "or a venv with torch.",
                    ),
                ),
            )
        )
        return finish(profile.name, profile.source)
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    expected = profile.get("gpu.count")
    count = args.gpus or visible
    if visible == 0 or count > visible:
        results.append(
            CheckResult(
                "gpus",
                "GPUs visible to PyTorch",
                (
                    unknown(
                        f"PyTorch sees {visible} GPUs, {count or 'some'} needed: no load checks ran"
                    ),
                ),
            )
        )
        return finish(profile.name, profile.source)
    if expected is not None and count != expected:
        notes.append(f"using {count} GPUs; the profile expects {expected}")
    name = torch.cuda.get_device_name(0)
    try:
        sku = lookup(name)
    except UnknownSku as exc:
        results.append(CheckResult("sku", "GPU SKU", (unknown(str(exc)),)))
        return finish(profile.name, profile.source)
    gpus = list(range(count))
    figures.update(
        {"gpu": name, "gpus": count, "torch": torch.__version__, "cuda": torch.version.cuda}
    )

    if "stress" in parts:
        echo(f"[gpu] stress: {count} GPU(s) for {args.stress_seconds:g} s")
        results += _stress_parts(gpus, sku, args.stress_seconds, figures)
        torch.cuda.empty_cache()
    if "nvlink" in parts:
        if not profile.has("gpu.nvlink"):
            results.append(
                skipped("nvlink_p2p", "NVLink peer bandwidth", "no NVLink on this host type")
            )
        else:
            echo(f"[gpu] nvlink: topology, peer copies between {count} GPU(s)")
            figures["nvlink_topology"] = _topology()
            results.append(
                _guard("nvlink_p2p", "NVLink peer bandwidth", lambda: _p2p(gpus, sku, figures))
            )
            torch.cuda.empty_cache()
    if "nccl" in parts:
        echo(f"[gpu] nccl: all-reduce on {count} GPU(s), log {out / 'nccl-torchrun.log'}")
        results.append(
            _guard(
                "nccl_allreduce",
                "NCCL all-reduce",
                lambda: _nccl(count, sku, out, figures, console.child("nccl")),
            )
        )
    if "ib" in parts:
        results.append(_ib(profile, sku, figures))
    if "smoke" in parts:
        for n in args.smoke_gpus or [count]:
            label = "smoke" if n == count else f"smoke_{n}gpu"
            echo(f"[gpu] {label}: {n} GPU(s), {args.smoke_steps} steps, log smoke-{n}gpu.log")
            results.append(
                _guard(
                    label,
                    f"Training smoke test on {n} GPU(s)",
                    lambda n=n, label=label: _smoke(
                        n, label, sku, args, out, figures, console.child(label)
                    ),
                )
            )
    return finish(profile.name, profile.source)


def _stress_parts(gpus: list[int], sku: Sku, seconds: float, figures: dict) -> list[CheckResult]:
    from . import stress

    title = "GPU stress: bf16 matmul and HBM copy on random data"
    try:
        before, nvl_before = _smi(), _nvlink_errors()
    except ParseError as exc:
        before, nvl_before = None, None
        figures["after_load_note"] = f"counters not read before load: {exc}"
    samples: list = []
    stop = threading.Event()

    t0 = time.monotonic()

    def sampler() -> None:
        """Read clock events twice while the burn runs (it starts after a few seconds of
        reference timings): at about half and at about 85 % of it."""
        for share in (0.5, 0.85):
            if stop.wait(timeout=max(0.0, t0 + 5 + share * seconds - time.monotonic())):
                return
            try:
                samples.append(_smi())
            except ParseError:
                pass

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    try:
        measured = stress.run(gpus, seconds)
    except Exception as exc:
        stop.set()
        return [CheckResult("stress", title, (unknown(f"{type(exc).__name__}: {exc}"),))]
    stop.set()
    thread.join(timeout=60)
    result = rules.stress(measured, sku, seconds)
    if len(measured) != len(gpus):
        result = CheckResult(
            "stress",
            title,
            (*result.findings, unknown(f"{len(measured)} of {len(gpus)} GPUs reported")),
            metrics=result.metrics,
        )
    figures["stress"] = {
        "seconds": seconds,
        "per_gpu": [g.__dict__ for g in measured],
        "sustained_over_burst_min": min(g.tflops / g.ref_tflops for g in measured),
        "stress_over_steady_min": min(g.tflops / g.steady_tflops for g in measured),
        "copy_over_best_min": min(g.copy_tbs / g.ref_copy_tbs for g in measured),
    }
    out = [result]
    try:
        after = _smi()
    except ParseError as exc:
        out.append(CheckResult("after_load", "Counters after load", (unknown(str(exc)),)))
        return out
    if before is None:
        out.append(
            CheckResult(
                "after_load",
                "Counters after load",
                (unknown("counters could not be read before the load"),),
            )
        )
    else:
        result = rules.after_load(before, after, samples, nvl_before, _nvlink_errors())
        figures["under_load"] = [
            {
                "gpu": g.index,
                "sm_mhz": g.sm_clock_mhz,
                "temp_c": g.temperature_c,
                "clock_events": sorted(g.clock_events),
            }
            for s in samples
            for g in s.gpus
        ]
        out.append(result)
    return out


def _topology() -> dict:
    """How the GPUs are joined (``topology.classify``): recorded in the figures, no verdict
    of its own (the quick checks judge link state and Fabric Manager, the copies judge speed)."""
    from racksmith.health.host import Host

    from . import topology

    texts = {}
    for args in (("topo", "-m"), ("nvlink", "-R")):
        result = commands.run(("nvidia-smi", *args), 30.0)
        if not result.ok:
            return {"error": result.describe_failure()}
        texts[args[0]] = result.stdout
    host = Host()
    root = host.sys("bus/pci/devices")
    try:
        pci = [pci_link(d.name, host.read_attrs(d, PCI_LINK_ATTRS)) for d in sorted(root.iterdir())]
        fabric = topology.classify(
            topology.parse_topo_matrix(texts["topo"]),
            topology.parse_remote_links(texts["nvlink"]),
            pci,
        )
    except (OSError, ParseError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return fabric.to_dict()


def _p2p(gpus: list[int], sku: Sku, figures: dict) -> CheckResult:
    from . import p2p

    pairs = p2p.run(gpus) if len(gpus) > 1 else []
    if pairs:
        figures["nvlink_p2p_gbs"] = {f"{p.src}->{p.dst}": round(p.gbs, 1) for p in pairs}
    return rules.nvlink_p2p(pairs, sku, len(gpus))


def _nccl(count: int, sku: Sku, out: Path, figures: dict, echo: Echo) -> CheckResult:
    if count < 2:
        return rules.nccl_allreduce([], count, sku, rules.NcclInfo())
    from . import nccl

    points, ranks, info, per_size, log = nccl.launch(count, out, echo=echo)
    measured = {p.nbytes for p in points}
    per_size = {n: algo for n, algo in per_size.items() if n in measured}
    figures["nccl"] = {
        "ranks": ranks,
        "version": info.version,
        "transports": list(info.transports),
        "algorithms": per_size,
        "nvls": info.nvls,
        "busbw_gbs": {str(p.nbytes): round(p.busbw(ranks), 1) for p in points},
        "log": str(log),
    }
    return rules.nccl_allreduce(points, ranks, sku, info)


def _ib(profile, sku: Sku, figures: dict) -> CheckResult:
    title = "InfiniBand per-HCA write bandwidth with GPUDirect"
    expected = profile.get("hcas.count")
    if not expected:
        reason = profile.skips.get("ib_ports", "the profile expects no InfiniBand HCA")
        return skipped("ib_write_bw", title, reason)
    from . import ib

    results = ib.run(ib.hcas())
    figures["ib_gbps"] = {r.hca: r.gbps for r in results}
    return rules.ib_write_bw(results, sku, expected)


def _smoke(n: int, label: str, sku: Sku, args, out: Path, figures: dict, echo: Echo) -> CheckResult:
    from . import smoke

    cfg = smoke.Config(steps=args.smoke_steps, compile=not args.no_compile)
    data = smoke.launch(n, out, cfg, echo=echo)
    run = rules.SmokeRun(
        steps=[rules.Step(s["step"], s["loss"], s["seconds"]) for s in data["steps"]],
        tokens_per_step=data["tokens_per_step"],
        flops_per_token=data["flops_per_token"],
        gpus=data["gpus"],
        peak_tflops=data["peak_tflops"],
        warmup=cfg.warmup,
    )
    result = rules.smoke(run, sku)
    result = CheckResult(
        label, result.title + f" on {n} GPU(s)", result.findings, metrics=result.metrics
    )
    mfus = [run.mfu_of(s) for s in run.timed()]
    figures[label] = {
        "gpus": n,
        "n_params": data["n_params"],
        "flops_per_token": data["flops_per_token"],
        "tokens_per_step": data["tokens_per_step"],
        "mfu_median": statistics.median(mfus),
        "mfu_p10": sorted(mfus)[len(mfus) // 10],
        "mfu_max": max(mfus),
        **result.metrics,
    }
    return result


@contextlib.contextmanager
def stdout_into(path: Path) -> Iterator[None]:
    """Point file descriptor 1 at ``path`` (appending) for the duration, then restore it.

    At the descriptor, not ``sys.stdout``: CUDA, NCCL, cuBLAS and PyTorch's C++ side write to
    fd 1 directly, and so does any child that inherits it; all of it lands in the log."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    log_path = out / "gpu-run.log"
    try:
        out.mkdir(parents=True, exist_ok=True)
        log_path.write_text("")
        # Appending, like the descriptor-1 redirect below: both land at the end, in order.
        log = open(log_path, "a", encoding="utf-8")
    except OSError as exc:
        return usage_error(f"{PROG} run", f"--out {args.out}: {exc.strerror or exc}")
    with log, stdout_into(log_path):
        console = Console(log, args.verbose)
        console.progress(f"{PROG} {' '.join(sys.argv[1:] if argv is None else argv)}")
        report = run(args, console)
        console.progress(f"verdict {report.verdict.value}, exit {report.exit_code}")
    print(report.to_json() if args.json else report.to_text(), flush=True)
    if args.verbose and report.figures:
        _to_stderr(json.dumps(report.figures, indent=1, default=str)[:4000])
    return report.exit_code
