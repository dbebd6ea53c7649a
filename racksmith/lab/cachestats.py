"""Is the lab's apt cache doing its job? Bytes from upstream vs bytes served, from its log.

The product claim behind racksmith.lab.aptcache is that each package crosses the site's
uplink once, however many hosts install it. apt-cacher-ng's transfer log
(``<lab>/apt-cacher-ng/log/apt-cacher.log``) is the evidence: one line per transfer,

    <unix time>|<kind>|<bytes>|<client address>|<path or error text>

where kind ``I`` is a download *into* the cache from upstream (a miss, triggered by that
client's request), ``O`` is a response sent *out* to a client (bytes include the response
headers, so a cached file's ``O`` is a few bytes larger than its ``I``) and ``E`` is an error
response. With ``VerboseLog: 0`` the last two fields are absent (only time, kind and bytes).
This format is read from the running lab's log (tests/fixtures/aptcache/README.md), not from a
published specification: a line that does not fit it is an error naming the line, never
skipped, so a changed format cannot quietly produce wrong figures.

Parsing (:func:`parse`) is pure and separate from reading the file; :func:`summarize` turns
transfers into :class:`CacheStats`. Hits and misses are counted per path: a path fetched from
upstream F times and served S times had F misses and S - F hits.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab import paths

KINDS = {"I": "upstream", "O": "served", "E": "error"}
LOG_NAME = "apt-cacher.log"


class LogFormatError(ValueError):
    """A line of the transfer log that is not in apt-cacher-ng's format (names file:line)."""


@dataclass(frozen=True)
class Transfer:
    """One line of the log."""

    time: int
    kind: str  # "I" (from upstream), "O" (to a client), "E" (error response)
    size: int  # bytes
    client: str | None = None  # absent when VerboseLog is 0
    path: str | None = None  # the archive path; an error's text for kind "E"


def parse_line(line: str, *, source: str = "<log>", lineno: int = 0) -> Transfer:
    """One log line -> :class:`Transfer`; raises :class:`LogFormatError` naming the line."""
    where = f"{source}:{lineno}"
    fields = line.rstrip("\r\n").split("|", 4)
    if len(fields) not in (3, 5):
        raise LogFormatError(
            f"{where}: expected 'time|kind|bytes' or 'time|kind|bytes|client|path', "
            f"got {len(fields)} field(s): {line.strip()[:120]!r}"
        )
    stamp, kind, size = fields[:3]
    if kind not in KINDS:
        raise LogFormatError(f"{where}: unknown transfer kind {kind!r} (known: I, O, E)")
    if not (stamp.isdigit() and size.isdigit()):
        raise LogFormatError(f"{where}: time and bytes must be whole numbers: {line.strip()!r}")
    client = path = None
    if len(fields) == 5:
        client, path = fields[3].strip() or None, fields[4].strip() or None
    return Transfer(int(stamp), kind, int(size), client, path)


def parse(text: str, *, source: str = "<log>") -> list[Transfer]:
    """Every non-blank line of a transfer log, in order."""
    return [
        parse_line(line, source=source, lineno=n)
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


@dataclass(frozen=True)
class CacheStats:
    """What the cache did, in bytes and transfers."""

    upstream_bytes: int  # fetched from the archive (I)
    served_bytes: int  # sent to hosts (O)
    upstream_transfers: int
    served_transfers: int
    errors: int  # E lines
    hits: int  # served transfers answered from the cache
    misses: int  # served transfers that needed an upstream fetch
    clients: int  # distinct host addresses (0 without VerboseLog)
    packages: int  # distinct .deb files served
    packages_refetched: tuple[str, ...]  # .deb files fetched from upstream more than once
    first: int | None  # unix time of the first and last line
    last: int | None

    @property
    def hit_ratio(self) -> float | None:
        """Share of served transfers answered from the cache (None: nothing served)."""
        return self.hits / self.served_transfers if self.served_transfers else None

    @property
    def byte_saving(self) -> float | None:
        """Share of served bytes that did not cross the uplink (None: nothing served)."""
        if not self.served_bytes:
            return None
        return max(0.0, 1.0 - self.upstream_bytes / self.served_bytes)

    def to_dict(self) -> dict:
        return {
            "upstream_bytes": self.upstream_bytes,
            "served_bytes": self.served_bytes,
            "upstream_transfers": self.upstream_transfers,
            "served_transfers": self.served_transfers,
            "errors": self.errors,
            "hits": self.hits,
            "misses": self.misses,
            "hit_ratio": self.hit_ratio,
            "byte_saving": self.byte_saving,
            "clients": self.clients,
            "packages": self.packages,
            "packages_refetched": list(self.packages_refetched),
            "first": self.first,
            "last": self.last,
        }


def summarize(transfers: Iterable[Transfer]) -> CacheStats:
    """Totals, and hits/misses per path (without paths, every upstream fetch is one miss)."""
    items = list(transfers)
    fetched: Counter[str | None] = Counter(t.path for t in items if t.kind == "I")
    served: Counter[str | None] = Counter(t.path for t in items if t.kind == "O")
    misses = sum(min(n, fetched.get(path, 0)) for path, n in served.items())
    debs = {p for p in served if p and p.endswith(".deb")}
    refetched = sorted(p for p, n in fetched.items() if p and p.endswith(".deb") and n > 1)
    served_transfers = sum(served.values())
    return CacheStats(
        upstream_bytes=sum(t.size for t in items if t.kind == "I"),
        served_bytes=sum(t.size for t in items if t.kind == "O"),
        upstream_transfers=sum(fetched.values()),
        served_transfers=served_transfers,
        errors=sum(1 for t in items if t.kind == "E"),
        hits=served_transfers - misses,
        misses=misses,
        clients=len({t.client for t in items if t.client}),
        packages=len(debs),
        packages_refetched=tuple(refetched),
        first=min((t.time for t in items), default=None),
        last=max((t.time for t in items), default=None),
    )


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def _share(value: float | None) -> str:
    return "n/a (nothing served)" if value is None else f"{value:.1%}"


def format_text(stats: CacheStats, source: str) -> str:
    """The few lines a person reads (``racksmith lab cache-stats``, the bench)."""
    lines = [
        f"apt cache ({source}):",
        f"  from upstream : {_size(stats.upstream_bytes)} in {stats.upstream_transfers} transfers",
        f"  served to hosts: {_size(stats.served_bytes)} in {stats.served_transfers} transfers"
        f" to {stats.clients} host(s)",
        f"  hits {stats.hits}, misses {stats.misses}: hit ratio {_share(stats.hit_ratio)};"
        f" bytes kept off the uplink {_share(stats.byte_saving)}",
        f"  packages: {stats.packages} .deb served, {len(stats.packages_refetched)} fetched"
        " from upstream more than once" + (f" ({', '.join(stats.packages_refetched[:5])})"
                                           if stats.packages_refetched else ""),
    ]
    if stats.errors:
        lines.append(f"  error responses: {stats.errors} (E lines; see the log)")
    return "\n".join(lines)


def log_path(lab_dir: Path | None) -> Path:
    """Where the lab's cache writes its transfer log (racksmith.lab.aptcache's LogDir)."""
    return paths.LabPaths(paths.lab_dir(lab_dir)).acng / "log" / LOG_NAME


def read_stats(log: Path) -> CacheStats:
    """Read and summarise one log file; OSError and LogFormatError propagate, named."""
    return summarize(parse(log.read_text(errors="replace"), source=str(log)))


def _cmd(args: argparse.Namespace) -> int:
    log = args.log or log_path(args.lab_dir)
    try:
        stats = read_stats(log)
    except FileNotFoundError:
        print(f"cache-stats: no apt-cacher-ng log at {log} (is the lab up?)", file=sys.stderr)
        return 2
    except (OSError, LogFormatError) as exc:
        print(f"cache-stats: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"log": str(log), **stats.to_dict()}))
    else:
        print(format_text(stats, str(log)))
    return 0


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    paths.add_lab_arguments(parser)
    parser.add_argument(
        "--log", type=Path, help=f"a transfer log (default: <lab dir>/apt-cacher-ng/log/{LOG_NAME})"
    )
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.set_defaults(func=_cmd)
