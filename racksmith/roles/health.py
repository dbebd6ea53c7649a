"""Role health's reading of the quick checks' run: the agent's report, or why there is none.

Why here: the role used to read the report with a ``set_fact`` whose ``from_json`` failure fell
into a rescue. Folding that task away (each task costs the controller 35-68 ms per host) needs
a reading that cannot raise: output that is not the agent's JSON report is an error with a
reason, and the verdict (racksmith.health.golden.judge, through filter health_fit) makes the
host NOT FIT for it, never healthy. Pure; a run that exited outside 0-2 still fails its task
(``failed_when``) and the role's rescue says why, as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["quick_outcome"]

PREFIX = "health agent did not run: "


def quick_outcome(run: Mapping[str, Any] | None) -> dict[str, Any]:
    """The registered result of the agent's run -> ``{quick: report or {}, error: '' or why}``.

    No run at all (the quick checks' tag skipped) gives no report and no error, as before: the
    verdict then says the quick checks gave no report."""
    if not run or "stdout" not in run:
        return {"quick": {}, "error": ""}
    stdout = str(run.get("stdout") or "")
    try:
        report = json.loads(stdout)
    except ValueError as exc:
        why = f"its output is not a JSON report ({exc})"
    else:
        if isinstance(report, dict):
            return {"quick": report, "error": ""}
        why = f"its output is not a JSON report (a {type(report).__name__})"
    stderr = str(run.get("stderr") or "").strip()[-300:]
    return {"quick": {}, "error": PREFIX + (stderr or why)}
