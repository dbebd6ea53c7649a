"""``racksmith run site --slices K``: one rack run as several ansible-playbook processes.

The controller's cost is per task result, in ansible-playbook's one main process (issue 25), so
a large rack is faster in more processes. The phases that act on the whole rack at once stay in
one: preflight, discover, enlist and deploy (one MAAS batch, one judgement of the fleet's
firmware). Configure and validate act on each host alone, so K processes share them, the hosts
dealt round-robin as AWX job slicing deals an inventory. A last process merges what needs every
host: the golden set, the fabric cabling check and the rack report (racksmith.report.merge).

    RUN_DIR/shards/prepare/   the deploy process (--tags preflight,discover,enlist,deploy)
    RUN_DIR/shards/slice-N/   slice N (--tags configure,validate, --limit its hosts)
    RUN_DIR/                  the merge (playbooks/merge.yml): golden set, cabling, report.*

What one process kept in memory, a slice gets from the deploy process's shard report: the
hosts quarantined there (group ``quarantine`` and their reasons, as an inventory source written
to ``RUN_DIR/carry.yml``: an inventory group, not ``group_by`` state) and the hosts that failed
there (dealt to no slice: they stopped, as they would in one process). The slices read the
inventory afresh, so MAAS's ``maas_deployed`` is the one deploy left (the deploy phase's
inventory refresh). ``carry.yml`` names ``localhost`` too, as Ansible's implicit localhost
(which a ``--limit`` leaves out), so that each slice's controller plays run. The pure decisions
are here (dealing, what is carried); :func:`execute_sliced` starts the processes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import yaml

from racksmith.report.merge import SHARD_ENV, SHARDS_DIR
from racksmith.report.model import CONTROLLER
from racksmith.run.runner import RunOutcome, RunRequest, execute

#: The phases of the one process before the slices, and those the slices share.
PREPARE_TAGS = "preflight,discover,enlist,deploy"
#: the slices' phases: skipped in prepare even where a role's task is tagged `always`
PREPARE_SKIP_TAGS = "configure,validate"
SLICE_TAGS = "configure,validate"
PREPARE = "prepare"
CARRY = "carry.yml"
#: The controller as an inventory host, with the connection Ansible gives its implicit localhost.
LOCALHOST_VARS = {
    "ansible_connection": "local",
    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
}
#: ansible-playbook's exit statuses after which the run goes on: 0, 2 (a host failed),
#: 4 (a host unreachable). Anything else (bad playbook or inventory, interrupted) ends it.
GOES_ON = (0, 2, 4)


def slice_name(number: int) -> str:
    return f"slice-{number}"


def deal(hosts: Sequence[str], slices: int) -> list[list[str]]:
    """Hosts dealt round-robin into ``slices`` lists (host i to slice i mod K), as AWX job
    slicing deals an inventory; a slice may be empty when there are fewer hosts than slices."""
    if slices < 1:
        raise ValueError(f"slices must be at least 1, got {slices}")
    out: list[list[str]] = [[] for _ in range(slices)]
    for i, host in enumerate(hosts):
        out[i % slices].append(host)
    return out


def after_prepare(report: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """From the deploy process's report.json: the hosts to deal (sorted; quarantined ones too,
    so that their slice's golden set accounts for them, as validate does in one process) and the
    inventory to carry (group ``quarantine`` with each host's reasons). Hosts that failed there
    are dealt to no slice: in one process they stop at their failure."""
    hosts = report.get("hosts")
    if not isinstance(hosts, Mapping):
        raise ValueError("the deploy process's report.json has no hosts")
    dealt: list[str] = []
    carried: dict[str, dict[str, str]] = {}
    for name, host in sorted(hosts.items()):
        if name == CONTROLLER:
            continue
        result = str(host.get("result") or "")
        if host.get("quarantine_reason"):
            carried[name] = {
                "racksmith_quarantine_reason": str(host["quarantine_reason"]),
                "racksmith_failed_phase": str(host.get("failed_phase") or "discover"),
                "racksmith_failure_reason": str(
                    host.get("failure_reason") or host["quarantine_reason"]
                ),
            }
            dealt.append(name)
        elif not result.startswith("FAILED"):
            dealt.append(name)
    inventory = {
        "all": {
            # explicit, as Ansible's implicit localhost is: a --limit leaves the implicit one out,
            # and the slices' and the merge's controller plays run on it
            "hosts": {CONTROLLER: LOCALHOST_VARS},
            "children": {"quarantine": {"hosts": carried}},
        }
    }
    return dealt, inventory


def _limit(hosts: Sequence[str]) -> str:
    # the controller too: validate's golden set and fabric plays run on localhost
    return ",".join([*hosts, CONTROLLER])


class _Prefixed:
    """A slice's lines, each prefixed with its name, on the shared output (one lock)."""

    def __init__(self, out: TextIO, prefix: str, lock: threading.Lock):
        self.out, self.prefix, self.lock = out, prefix, lock
        self._buf = ""

    def write(self, text: str) -> int:
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        if lines:
            with self.lock:
                for line in lines:
                    self.out.write(f"[{self.prefix}] {line}\n")
        return len(text)

    def flush(self) -> None:
        with self.lock:
            self.out.flush()


def execute_sliced(
    request: RunRequest,
    slices: int,
    out: TextIO,
    *,
    slice_playbook: Path | str | None = None,
    merge_playbook: Path | str,
) -> tuple[RunOutcome, dict[str, Any]]:
    """The deploy process, then ``slices`` slice processes at once, then the merge; return the
    merge's outcome (with the worst exit status of all) and what was dealt to whom."""
    from racksmith.report.publish import read_json

    run_dir = request.run_dir
    shards = run_dir / SHARDS_DIR
    shard_env = {**(request.env or {}), SHARD_ENV: "1"}
    prepare = execute(
        replace(
            request,
            run_dir=shards / PREPARE,
            tags=PREPARE_TAGS,
            skip_tags=PREPARE_SKIP_TAGS,
            env=shard_env,
        ),
        _Prefixed(out, PREPARE, threading.Lock()),
        tty=False,
    )
    rcs = [prepare.rc]
    plan: dict[str, Any] = {"prepare": prepare.rc, "slices": {}}
    if prepare.rc not in GOES_ON:
        return prepare, plan
    hosts, carried = after_prepare(read_json(shards / PREPARE / "report.json"))
    carry = run_dir / CARRY
    carry.write_text(
        "# what the deploy process of this sliced run knew about its hosts (racksmith.run.slices)\n"
        + yaml.safe_dump(carried, sort_keys=True)
    )
    lock = threading.Lock()
    outcomes: dict[str, RunOutcome] = {}
    threads = []
    for number, dealt in enumerate(deal(hosts, slices), start=1):
        name = slice_name(number)
        plan["slices"][name] = dealt
        if not dealt:
            continue  # more slices than hosts: nothing to run
        slice_request = replace(
            request,
            playbook=slice_playbook or request.playbook,
            run_dir=shards / name,
            tags=SLICE_TAGS,
            limit=_limit(dealt),
            inventories=(*request.inventories, str(carry)),
            extravars={**(request.extravars or {}), "racksmith_slices": slices},
            env=shard_env,
        )

        def one(req: RunRequest = slice_request, label: str = name) -> None:
            outcomes[label] = execute(req, _Prefixed(out, label, lock), tty=False)

        thread = threading.Thread(target=one, name=f"racksmith-{name}")
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    rcs += [o.rc for o in outcomes.values()]
    plan["slices_rc"] = {name: o.rc for name, o in sorted(outcomes.items())}
    merged = execute(
        replace(
            request,
            playbook=merge_playbook,
            limit=CONTROLLER,
            tags=None,
            inventories=(*request.inventories, str(carry)),
        ),
        _Prefixed(out, "merge", lock),
        tty=False,
    )
    rcs.append(merged.rc)
    plan["merge"] = merged.rc
    worst = max(rcs)
    return replace(merged, rc=worst, status=merged.status if worst == merged.rc else "failed"), plan
