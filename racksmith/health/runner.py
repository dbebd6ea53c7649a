"""Run the checks in parallel under one deadline, and return exactly one result per check.

imbue's runner could hang (a validator raised, nothing was queued, the parent blocked on
``queue.get()`` forever) and silently dropped checks whose output was missing. Here each
check runs in a daemon thread; a check that raises becomes UNKNOWN with the exception; one
still running at the deadline becomes UNKNOWN "did not finish", and the agent returns anyway
(the threads are daemons, and every command they run has its own timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping

from .checks import CheckContext, CheckSpec, Facts, SourceError
from .host import Host
from .outcome import CheckResult, Finding, skipped, unknown
from .parsers.smi_xml import Unreadable
from .profile import Profile

DEFAULT_DEADLINE_S = 60.0
DEFAULT_WORKERS = 8


def run_checks(
    specs: Mapping[str, CheckSpec],
    profile: Profile,
    host: Host,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    workers: int = DEFAULT_WORKERS,
    only: Iterable[str] | None = None,
) -> list[CheckResult]:
    """Results in the order of ``specs``. Checks the profile skips are SKIPPED with its reason;
    checks not in ``only`` (when given) are left out entirely and say so in the report."""
    start = time.monotonic()
    host.deadline = start + deadline_s
    facts = Facts(host, profile)
    selected = [name for name in specs if only is None or name in set(only)]
    results: dict[str, CheckResult] = {}
    done = threading.Condition()
    slots = threading.BoundedSemaphore(max(1, workers))

    def worker(spec: CheckSpec) -> None:
        with slots:
            result = _run_one(spec, facts)
        with done:
            results[spec.name] = result
            done.notify_all()

    pending = []
    for name in selected:
        spec = specs[name]
        if name in profile.skips:
            results[name] = skipped(name, spec.title, profile.skips[name])
            continue
        pending.append(spec)
        threading.Thread(target=worker, args=(spec,), name=f"check-{name}", daemon=True).start()

    with done:
        done.wait_for(lambda: all(s.name in results for s in pending), timeout=deadline_s)
        final = dict(results)  # a late finisher cannot change what we report
    for spec in pending:
        if spec.name not in final:
            final[spec.name] = CheckResult(
                spec.name,
                spec.title,
                (unknown(f"did not finish within the {deadline_s:g} s deadline"),),
                duration_s=time.monotonic() - start,
            )
    return [final[name] for name in selected]


def _run_one(spec: CheckSpec, facts: Facts) -> CheckResult:
    ctx = CheckContext(facts)
    started = time.monotonic()
    try:
        findings: list[Finding] = list(spec.func(ctx))
    except SourceError as exc:
        findings = [unknown(str(exc))]
    except Unreadable as exc:  # a field the check needs could not be read: never OK
        from .checks.gpu import unreadable

        findings = [unreadable(exc)]
    except Exception as exc:  # a bug in a check must not make the host look healthy
        findings = [
            unknown(
                f"the check itself failed: {type(exc).__name__}: {exc}",
                "This is a racksmith bug: report it with the JSON report attached.",
            )
        ]
    if not findings:  # a check that says nothing has not shown the host is healthy
        findings = [unknown("the check produced no result")]
    return CheckResult(
        spec.name,
        spec.title,
        tuple(findings),
        time.monotonic() - started,
        tuple(ctx.sources),
        dict(ctx.metrics),
    )
