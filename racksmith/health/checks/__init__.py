"""The check registry, and the context a check runs in.

A check is a function ``(ctx) -> list[Finding]`` registered with ``@check(name, title,
requires=...)``; ``requires`` names the profile key that holds its expectations, so the
profile either configures it or skips it with a reason. Checks read the host only through
``ctx`` (``ctx.smi()``, ``ctx.kernel_log()``...), which parses each source once per run,
records what was read, and raises SourceError (the check's result becomes UNKNOWN) when a
source cannot be read or parsed.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..host import Host
from ..outcome import Finding, Source
from ..profile import Profile


class SourceError(Exception):
    """A source a check needs could not be read or parsed; the message names it."""


@dataclass(frozen=True)
class CheckSpec:
    name: str
    title: str
    requires: str | None
    func: Callable[[CheckContext], list[Finding]]


REGISTRY: dict[str, CheckSpec] = {}

#: Check modules in the order their checks appear in reports: GPUs first, host basics last.
REPORT_ORDER = ("gpu", "firmware", "links", "kernel", "infiniband", "host_checks")


def check(name: str, title: str, *, requires: str | None):
    def register(func: Callable[[CheckContext], list[Finding]]):
        if name in REGISTRY:
            raise ValueError(f"check {name!r} registered twice")
        REGISTRY[name] = CheckSpec(name, title, requires, func)
        return func

    return register


def all_checks() -> dict[str, CheckSpec]:
    """Every check, in report order (importing the modules registers them)."""
    for module in REPORT_ORDER:
        importlib.import_module(f"{__name__}.{module}")
    return dict(REGISTRY)


def requirements() -> dict[str, str | None]:
    return {name: spec.requires for name, spec in all_checks().items()}


class Facts:
    """Parsed sources shared by all checks of one run; each is computed at most once, even
    when several checks ask for it at the same time."""

    def __init__(self, host: Host, profile: Profile) -> None:
        self.host = host
        self.profile = profile
        self._values: dict[str, tuple[Any, Source, SourceError | None]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: str, compute: Callable[[], tuple[Any, Source]]) -> tuple[Any, Source]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._values:
                try:
                    value, source = compute()
                    self._values[key] = (value, source, None)
                except SourceError as exc:
                    self._values[key] = (None, Source(key, error=str(exc)), exc)
            value, source, error = self._values[key]
        if error is not None:
            raise SourceError(str(error))
        return value, source


class CheckContext:
    """What one check sees: the profile, and source accessors that record what was read."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.profile = facts.profile
        self.host = facts.host
        self.sources: list[Source] = []
        self.metrics: dict[str, float] = {}

    def fact(self, key: str, compute: Callable[[], tuple[Any, Source]]) -> Any:
        try:
            value, source = self.facts.get(key, compute)
        except SourceError:
            self.sources.append(self.facts._values[key][1])
            raise
        if source not in self.sources:
            self.sources.append(source)
        return value
