"""Find the rank that is somewhere else: the analysis of ``racksmith diagnose hang``.

When one rank of a data-parallel job stops (a host wedged, a GPU fell off the bus, a process
stuck in I/O), every other rank waits in the same collective until ``NCCL_TIMEOUT`` and logs
the same watchdog line, so the logs do not say who. The processes do: the waiting ranks share
one Python stack (inside the collective) and one position in the collective sequence; the
stuck rank shows another stack, or is a collective behind. This module groups the ranks by
stack signature and by their flight recorder's collective sequence numbers, and names the ranks
outside the majority, with their host and GPU, and every host that did not answer.

Pure: the probe's documents (racksmith.triage.diagnose.probe, one per host) in, a
:class:`HangReport` out. Fail closed: a host that did not answer, a process whose stacks
could not be read, a rank the job has that no host showed, or a split with no majority is
said as such, never dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "racksmith.diagnose.hang/v1"
#: How many innermost Python frames make a stack's signature. The ranks that wait share the
#: whole stack; deep enough to tell two different collectives apart, short enough that a
#: long-running job's different outer frames (a first and a later epoch) do not split them.
SIGNATURE_DEPTH = 12

#: Kernel-log lines worth quoting for a suspect host (the health agent's checks judge them).
_KERNEL_PATTERNS = re.compile(
    r"NVRM: Xid|\bXid\b|NVRM:.*(fallen off|GPU has fallen|error)|mlx5.*(error|fatal|down|timeout)"
    r"|\bAER\b|PCIe Bus Error|Link is Down|link down|blocked for more than|hung_task"
    r"|Out of memory|oom-kill|segfault|soft lockup|hard LOCKUP|watchdog|Machine check|\bMCE\b"
    r"|ib\w*: .*(error|down)|nvidia-nvswitch|nvlink.*(error|down)",
    re.IGNORECASE,
)


class ProbeError(ValueError):
    """A probe document that is not what racksmith.triage.diagnose.probe prints."""


@dataclass(frozen=True)
class Frame:
    name: str
    filename: str
    line: int
    native: bool  # a C/C++ frame (py-spy --native), not Python code

    def text(self) -> str:
        return f"{self.name} ({self.filename}:{self.line})"


@dataclass(frozen=True)
class Collectives:
    """One rank's place in the collective sequence of one process group (flight recorder)."""

    group: str
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None
    last_op: str = ""  # the last recorded entry's profiling name (``nccl:all_reduce``)
    last_op_state: str = ""

    def key(self) -> tuple[int | None, int | None]:
        return (self.last_enqueued, self.last_completed)


@dataclass(frozen=True)
class Rank:
    """One training process as one host showed it."""

    host: str
    pid: int
    rank: int | None
    local_rank: int | None
    world_size: int | None
    gpu: str | None  # the CUDA device (CUDA_VISIBLE_DEVICES[LOCAL_RANK], else LOCAL_RANK)
    cmdline: str
    frames: tuple[Frame, ...] = ()  # the main thread, innermost first
    native: bool = False
    stack_error: str = ""
    notes: tuple[str, ...] = ()
    collectives: tuple[Collectives, ...] = ()
    flight_path: str = ""
    flight_error: str = ""

    @property
    def label(self) -> str:
        rank = "?" if self.rank is None else str(self.rank)
        gpu = f", GPU {self.gpu}" if self.gpu is not None else ""
        return f"rank {rank} ({self.host}, pid {self.pid}{gpu})"

    def signature(self) -> tuple[str, ...]:
        python = [f for f in self.frames if not f.native]
        return tuple(f.text() for f in python[:SIGNATURE_DEPTH])


@dataclass(frozen=True)
class HostProbe:
    """What one host answered (or why it did not)."""

    host: str
    answered: bool
    error: str = ""
    ranks: tuple[Rank, ...] = ()
    kernel_lines: tuple[str, ...] = ()
    kernel_source: str = ""
    kernel_error: str = ""
    unreadable: tuple[str, ...] = ()
    seconds: float | None = None


@dataclass(frozen=True)
class Group:
    key: str  # a stack's innermost frame, or ``pg 0: enqueued 41, completed 40``
    ranks: tuple[Rank, ...]
    detail: tuple[str, ...] = ()  # the whole signature, for the report

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "ranks": [r.rank for r in self.ranks],
            "hosts": sorted({r.host for r in self.ranks}),
            "detail": list(self.detail),
        }


@dataclass(frozen=True)
class Suspect:
    rank: Rank
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        r = self.rank
        return {
            "host": r.host,
            "rank": r.rank,
            "local_rank": r.local_rank,
            "gpu": r.gpu,
            "pid": r.pid,
            "why": "; ".join(self.reasons),
            "reasons": list(self.reasons),
            "stack": [f.text() for f in r.frames],
            "native_frames": r.native,
        }


@dataclass(frozen=True)
class HangReport:
    hosts: tuple[HostProbe, ...]
    ranks: tuple[Rank, ...]
    stack_groups: tuple[Group, ...]
    collective_groups: tuple[Group, ...]
    suspects: tuple[Suspect, ...]
    unanswered: tuple[HostProbe, ...]
    unread: tuple[Rank, ...]  # processes whose stacks could not be read
    missing_ranks: tuple[int, ...]  # ranks of the job no answering host showed
    undecided: tuple[str, ...]  # why the grouping could not name a majority
    world_size: int | None
    kernel: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # suspect host -> lines

    @property
    def suspect_hosts(self) -> tuple[str, ...]:
        return tuple(sorted({s.rank.host for s in self.suspects}))

    @property
    def named_hosts(self) -> tuple[str, ...]:
        """Every host the report asks someone to look at: suspects, the silent, the unread."""
        named = set(self.suspect_hosts) | {h.host for h in self.unanswered}
        named |= {r.host for r in self.unread}
        return tuple(sorted(named))

    def named_reasons(self) -> list[tuple[str, str]]:
        """(host, why) for every named host: what restart-plan prints for a host it drops."""
        why: dict[str, list[str]] = {}
        for s in self.suspects:
            why.setdefault(s.rank.host, []).append(f"{s.rank.label}: {'; '.join(s.reasons)}")
        for h in self.unanswered:
            why.setdefault(h.host, []).append(f"did not answer diagnose hang: {h.error}")
        for r in self.unread:
            why.setdefault(r.host, []).append(f"{r.label}: stacks unreadable: {r.stack_error}")
        return [(host, " | ".join(why[host])) for host in sorted(why)]

    @property
    def decided(self) -> bool:
        """Whether the report stands on complete evidence: every host answered, every rank was
        read and found, and the groups had a majority."""
        return not (self.unanswered or self.unread or self.missing_ranks or self.undecided)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "decided": self.decided,
            "world_size": self.world_size,
            "hosts": [h.host for h in self.hosts],
            "ranks_seen": len(self.ranks),
            "suspects": [s.to_dict() for s in self.suspects],
            "suspect_hosts": list(self.suspect_hosts),
            "named_hosts": [{"host": h, "why": why} for h, why in self.named_reasons()],
            "unanswered_hosts": [{"host": h.host, "error": h.error} for h in self.unanswered],
            "unread_ranks": [
                {"host": r.host, "rank": r.rank, "pid": r.pid, "error": r.stack_error}
                for r in self.unread
            ],
            "missing_ranks": list(self.missing_ranks),
            "undecided": list(self.undecided),
            "stack_groups": [g.to_dict() for g in self.stack_groups],
            "collective_groups": [g.to_dict() for g in self.collective_groups],
            "kernel": {host: list(lines) for host, lines in self.kernel.items()},
            "probe_seconds": {h.host: h.seconds for h in self.hosts},
        }


# --- reading the probe's document ----------------------------------------------------------


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def parse_py_spy(threads: Any) -> tuple[tuple[Frame, ...], str]:
    """The main thread's frames from ``py-spy dump --json`` (a list of threads, each with
    ``frames`` innermost first), and an error when there is no usable thread. The main thread
    is the one named ``MainThread``, else the one whose OS thread id is the process id."""
    if not isinstance(threads, list) or not threads:
        return (), "py-spy reported no threads"
    main = next(
        (t for t in threads if isinstance(t, dict) and t.get("thread_name") == "MainThread"), None
    )
    if main is None:
        main = next(
            (t for t in threads if isinstance(t, dict) and t.get("os_thread_id") == t.get("pid")),
            threads[0],
        )
    if not isinstance(main, dict) or not isinstance(main.get("frames"), list):
        return (), "py-spy's main thread has no frame list"
    frames = []
    for raw in main["frames"]:
        if not isinstance(raw, dict):
            return (), f"py-spy frame is not an object: {raw!r:.80}"
        filename = str(raw.get("short_filename") or raw.get("filename") or "?")
        full = str(raw.get("filename") or filename)
        native = not full.endswith((".py", ".pyx", ".pyi")) and not full.startswith("<")
        frames.append(
            Frame(str(raw.get("name") or "?"), filename, _int(raw.get("line")) or 0, native)
        )
    if not frames:
        return (), "py-spy's main thread has no frames"
    return tuple(frames), ""


def parse_flight_recorder(dump: Any) -> tuple[Collectives, ...]:
    """Per process group, the last enqueued/started/completed collective sequence numbers of a
    PyTorch flight-recorder dump (``pg_status``), and the last entry's operation. Raises
    :class:`ProbeError` on a dump without them."""
    if not isinstance(dump, Mapping):
        raise ProbeError("flight recorder dump is not a mapping")
    status = dump.get("pg_status")
    entries = dump.get("entries") or []
    if not isinstance(entries, list):
        raise ProbeError("flight recorder 'entries' is not a list")
    last_by_pg: dict[str, Mapping] = {}
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("collective_seq_id"):
            last_by_pg[str(entry.get("pg_id", "0"))] = entry
    out = []
    if isinstance(status, Mapping) and status:
        for pg, values in sorted(status.items(), key=lambda kv: str(kv[0])):
            if not isinstance(values, Mapping):
                raise ProbeError(f"flight recorder pg_status[{pg}] is not a mapping")
            last = last_by_pg.get(str(pg), {})
            out.append(
                Collectives(
                    group=str(pg),
                    last_enqueued=_int(values.get("last_enqueued_collective")),
                    last_started=_int(values.get("last_started_collective")),
                    last_completed=_int(values.get("last_completed_collective")),
                    last_op=str(last.get("profiling_name") or ""),
                    last_op_state=str(last.get("state") or ""),
                )
            )
    elif last_by_pg:  # older dumps: no pg_status, derive from the entries' states
        for pg, last in sorted(last_by_pg.items()):
            seqs = {
                state: max(
                    (
                        _int(e.get("collective_seq_id")) or 0
                        for e in entries
                        if isinstance(e, Mapping)
                        and str(e.get("pg_id", "0")) == pg
                        and e.get("state") in states
                    ),
                    default=None,
                )
                for state, states in (
                    ("enq", ("scheduled", "started", "completed")),
                    ("start", ("started", "completed")),
                    ("done", ("completed",)),
                )
            }
            out.append(
                Collectives(
                    pg,
                    seqs["enq"],
                    seqs["start"],
                    seqs["done"],
                    str(last.get("profiling_name") or ""),
                    str(last.get("state") or ""),
                )
            )
    else:
        raise ProbeError("flight recorder dump has neither pg_status nor collective entries")
    return tuple(out)


def _gpu(env: Mapping[str, str], uses_cuda: bool) -> str | None:
    local = env.get("LOCAL_RANK")
    visible = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    index = _int(local)
    if visible and index is not None and 0 <= index < len(visible):
        return visible[index]
    if uses_cuda and index is not None:
        return str(index)  # torchrun's convention: device = LOCAL_RANK
    return None


def parse_probe(host: str, doc: Any) -> HostProbe:
    """One host's probe document as a :class:`HostProbe`; a document that is not the probe's
    is a host that did not answer, with the reason."""
    if not isinstance(doc, Mapping) or not str(doc.get("schema", "")).startswith(
        "racksmith.diagnose.probe/"
    ):
        return HostProbe(host, False, "the probe printed something that is not its report")
    if doc.get("error"):
        return HostProbe(host, False, str(doc["error"]))
    ranks = []
    for raw in doc.get("ranks") or []:
        env = raw.get("env") or {}
        stacks = raw.get("stacks") or {}
        frames: tuple[Frame, ...] = ()
        error = str(stacks.get("error") or "")
        if not error:
            frames, error = parse_py_spy(stacks.get("threads"))
        fr = raw.get("flight_recorder") or {}
        collectives: tuple[Collectives, ...] = ()
        fr_error = str(fr.get("error") or "")
        if fr.get("dump") is not None:
            try:
                collectives = parse_flight_recorder(fr["dump"])
            except ProbeError as exc:
                fr_error = str(exc)
        ranks.append(
            Rank(
                host=host,
                pid=int(raw.get("pid") or 0),
                rank=_int(env.get("RANK")),
                local_rank=_int(env.get("LOCAL_RANK")),
                world_size=_int(env.get("WORLD_SIZE")),
                gpu=_gpu(env, bool(raw.get("uses_cuda"))),
                cmdline=str(raw.get("cmdline") or ""),
                frames=frames,
                native=bool(stacks.get("native")) and not error,
                stack_error=error,
                notes=tuple(str(n) for n in stacks.get("notes") or ()),
                collectives=collectives,
                flight_path=str(fr.get("path") or ""),
                flight_error=fr_error,
            )
        )
    kernel = doc.get("kernel") or {}
    return HostProbe(
        host=host,
        answered=True,
        ranks=tuple(ranks),
        kernel_lines=tuple(str(x) for x in kernel.get("lines") or ()),
        kernel_source=str(kernel.get("source") or ""),
        kernel_error=str(kernel.get("error") or ""),
        unreadable=tuple(str(x) for x in doc.get("unreadable") or ()),
        seconds=doc.get("seconds"),
    )


def unanswered(host: str, reason: str) -> HostProbe:
    return HostProbe(host, False, reason)


# --- the analysis --------------------------------------------------------------------------


def _majority(groups: Sequence[Group], total: int, what: str) -> tuple[Group | None, str]:
    """The group holding more than half of the ranks, or why there is none."""
    if not groups:
        return None, ""
    top = groups[0]
    if 2 * len(top.ranks) > total:
        return top, ""
    sizes = ", ".join(str(len(g.ranks)) for g in groups)
    return None, f"no {what} holds a majority of the {total} ranks (groups of {sizes})"


def _group(ranks: Iterable[Rank], keyof, describe) -> list[Group]:
    by_key: dict[Any, list[Rank]] = {}
    for r in ranks:
        by_key.setdefault(keyof(r), []).append(r)
    groups = [
        Group(describe(key)[0], tuple(sorted(rs, key=_order)), describe(key)[1])
        for key, rs in by_key.items()
    ]
    return sorted(groups, key=lambda g: (-len(g.ranks), _order(g.ranks[0])))


def _order(r: Rank) -> tuple:
    return (r.rank is None, r.rank if r.rank is not None else 0, r.host, r.pid)


def _stack_key(signature: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    return (signature[0] if signature else "(no Python frames)"), signature


def _collective_key(r: Rank) -> tuple:
    return tuple((c.group, *c.key()) for c in r.collectives)


def _describe_collectives(key: tuple) -> tuple[str, tuple[str, ...]]:
    parts = [f"pg {g}: enqueued {e}, completed {c}" for g, e, c in key]
    return ("; ".join(parts) or "(no flight recorder)"), ()


def interesting_kernel_lines(lines: Iterable[str]) -> tuple[str, ...]:
    return tuple(line for line in lines if _KERNEL_PATTERNS.search(line))


def analyse(probes: Sequence[HostProbe]) -> HangReport:
    """Group the ranks every answering host showed; name who differs and who is silent."""
    answered = [p for p in probes if p.answered]
    silent = tuple(p for p in probes if not p.answered)
    ranks = tuple(sorted((r for p in answered for r in p.ranks), key=_order))
    unread = tuple(r for r in ranks if r.stack_error)
    readable = [r for r in ranks if not r.stack_error]
    undecided: list[str] = []

    sizes = Counter(r.world_size for r in ranks if r.world_size)
    world = sizes.most_common(1)[0][0] if sizes else None
    if len(sizes) > 1:
        undecided.append(f"processes disagree on WORLD_SIZE: {dict(sizes)} (more than one job?)")
    seen = Counter(r.rank for r in ranks if r.rank is not None)
    dupes = sorted(k for k, n in seen.items() if n > 1)
    if dupes:
        undecided.append(
            f"rank(s) {', '.join(map(str, dupes))} seen in more than one process "
            "(more than one job on these hosts? narrow it with --match)"
        )
    missing = tuple(i for i in range(world or 0) if i not in seen)
    if not ranks and answered:
        undecided.append(
            "no training process (RANK and WORLD_SIZE in its environment) on any host that answered"
        )

    reasons: dict[tuple, list[str]] = {}

    def blame(r: Rank, why: str) -> None:
        reasons.setdefault((r.host, r.pid), []).append(why)

    def judge(groups: Sequence[Group], total: int, what: str, why_of) -> None:
        """Blame every rank outside the majority group, or say there is no majority."""
        top, why = _majority(groups, total, what)
        if why:
            undecided.append(why)
        for g in groups if top is not None else ():
            for r in g.ranks if g is not top else ():
                blame(r, why_of(top, g))

    stack_groups = _group(readable, Rank.signature, _stack_key)
    judge(
        stack_groups,
        len(readable),
        "stack",
        lambda top, g: (
            f"its stack differs from the {len(top.ranks)} ranks in {top.key}: it is in {g.key}"
        ),
    )
    with_fr = [r for r in ranks if r.collectives]
    collective_groups = _group(with_fr, _collective_key, _describe_collectives)
    judge(
        collective_groups,
        len(with_fr),
        "collective position",
        lambda top, g: f"flight recorder: {g.key}, the other {len(top.ranks)} ranks: {top.key}",
    )
    for r in ranks:
        if r.flight_error:
            undecided.append(f"{r.label}: flight recorder dump {r.flight_path}: {r.flight_error}")

    by_id = {(r.host, r.pid): r for r in ranks}
    suspects = tuple(
        sorted(
            (Suspect(by_id[k], tuple(v)) for k, v in reasons.items()), key=lambda s: _order(s.rank)
        )
    )
    named = {s.rank.host for s in suspects} | {r.host for r in unread}
    kernel = {
        p.host: interesting_kernel_lines(p.kernel_lines)
        or ((f"kernel log unreadable: {p.kernel_error}",) if p.kernel_error else ())
        for p in answered
        if p.host in named
    }
    return HangReport(
        hosts=tuple(probes),
        ranks=ranks,
        stack_groups=tuple(stack_groups),
        collective_groups=tuple(collective_groups),
        suspects=suspects,
        unanswered=silent,
        unread=unread,
        missing_ranks=missing,
        undecided=tuple(undecided),
        world_size=world,
        kernel=kernel,
    )


def summary(report: HangReport, health: Mapping[str, Sequence[str]] | None = None) -> str:
    """The text the command prints: the verdict first, then the groups behind it."""
    lines = []
    n_hosts = len(report.hosts)
    lines.append(
        f"diagnose hang: {n_hosts} host(s), {len(report.ranks)} rank(s) seen"
        + (f" of {report.world_size}" if report.world_size else "")
    )
    if report.suspects:
        lines.append("suspects:")
        for s in report.suspects:
            lines.append(f"  {s.rank.label}")
            lines += [f"    - {why}" for why in s.reasons]
            inner = [f.text() for f in s.rank.frames if not f.name.startswith("0x")][:6]
            lines += [f"      at {text}" for text in inner]
    for h in report.unanswered:
        lines.append(f"  host {h.host} did not answer: {h.error}")
    for r in report.unread:
        lines.append(f"  {r.label}: stacks could not be read: {r.stack_error}")
    if report.missing_ranks:
        lines.append(
            f"  rank(s) {', '.join(map(str, report.missing_ranks))} of "
            f"{report.world_size} not seen on any host that answered"
        )
    for why in report.undecided:
        lines.append(f"  undecided: {why}")
    for host in report.named_hosts:
        for text in report.kernel.get(host, ()):
            lines.append(f"  {host}: kernel: {text}")
        for text in (health or {}).get(host, ()):
            lines.append(f"  {host}: health: {text}")
    lines.append("stack groups:")
    for g in report.stack_groups:
        lines.append(f"  {len(g.ranks)} rank(s) {_ranks(g)} in {g.key}")
    if report.collective_groups:
        lines.append("collective groups (flight recorder):")
        for g in report.collective_groups:
            lines.append(f"  {len(g.ranks)} rank(s) {_ranks(g)}: {g.key}")
    verdict = (
        "named: " + ", ".join(report.named_hosts)
        if report.named_hosts
        else "no rank differs from the others"
    )
    lines.append(verdict + ("" if report.decided else "  (evidence incomplete: see above)"))
    return "\n".join(lines)


def _ranks(g: Group) -> str:
    shown = [str(r.rank) if r.rank is not None else f"pid {r.pid}" for r in g.ranks]
    return "[" + ", ".join(shown[:16]) + (f", +{len(shown) - 16}" if len(shown) > 16 else "") + "]"
