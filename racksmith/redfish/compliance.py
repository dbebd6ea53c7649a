"""``racksmith redfish compliance``: discover with the firmware and BIOS extras, judge every host
against the site's baseline (:mod:`racksmith.redfish.baseline`), print the verdicts.

Read-only: nothing is changed on any BMC. Exit status 0 only when every host is COMPLIANT or
PENDING; a DRIFT or UNKNOWN host makes it 1 (fail closed: unread is never compliant).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TextIO

from racksmith.redfish import baseline as bl
from racksmith.redfish.discover import DiscoveryOptions, discover

EXTRAS = frozenset({"firmware", "bios"})
_OK = {bl.COMPLIANT, bl.PENDING}


def options_for(discovery: DiscoveryOptions) -> DiscoveryOptions:
    """The discovery options with the extras a compliance check needs added."""
    return replace(discovery, extras=frozenset(discovery.extras) | EXTRAS)


def render(report: dict[str, Any], out: TextIO) -> None:
    """A table for people: one line per host, then one per finding that needs something."""
    for host in report["hosts"]:
        flag = " QUARANTINED" if host["quarantined"] else ""
        print(f"{host['host']:<20} {host['host_type'] or '-':<16} {host['status']}{flag}", file=out)
        for finding in host["findings"]:
            if finding["status"] == bl.COMPLIANT and not finding["action"]:
                continue
            action = finding["action"] or "-"
            print(
                f"    {finding['what']:<8} {finding['name']:<28} {finding['status']:<9} "
                f"{finding['current']!s} -> {finding['wanted']!s} "
                f"({action}, {finding['activation'] or '-'}) {finding['reason']}",
                file=out,
            )
        for reason in host["reasons"]:
            print(f"    {reason}", file=out)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(report["summary"].items()))
    print(f"{summary or 'no hosts'}", file=out)


def run(
    targets: Sequence[Any],
    credentials: Any,
    discovery: DiscoveryOptions,
    baseline_path: str,
    *,
    as_json: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Discover ``targets``, judge them, print (``as_json``: one pure JSON document)."""
    baseline = bl.load_baseline(baseline_path)  # a bad file fails before any BMC is asked
    results = discover(targets, credentials, options_for(discovery))
    report = bl.report([r.as_dict() for r in results], baseline)
    if as_json:
        print(json.dumps(report), file=out, flush=True)
    else:
        render(report, out)
    bad = [h for h in report["hosts"] if h["status"] not in _OK]
    return 1 if bad else 0
