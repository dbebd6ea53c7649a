"""The run's quarantine as a MAAS tag, for processes that share no run directory.

Why: a run sliced as AWX job slices (docs/awx.md §8) decides its quarantine in the prepare job
(discover's triage, the firmware baseline, BMC health, BMC clocks), but each slice job starts
afresh from the inventory. ``racksmith run --slices`` hands its slices the quarantine as an
inventory file in the run directory; AWX slices have no such file. So the prepare job writes
the quarantine where every job reads it: a manual MAAS tag (:data:`QUARANTINE_TAG`) on each
quarantined machine, taken off every other machine of the run, and the ``maas`` inventory
plugin (option ``quarantine_tag``) puts tagged machines in group ``quarantine``.

The tag is *synchronised*, not only added: after the prepare job the tagged machines among the
run's hosts are exactly those it quarantined, so a host repaired since the last run goes on.
Machines outside the run (another rack, a ``--limit``) are never touched. A quarantined host
MAAS does not know (quarantined before enlist) has nothing to tag and is said so.
"""

from __future__ import annotations

from collections.abc import Iterable

from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasBadRequest, MaasConfigError
from racksmith.maas.machines import _TAG, Outcome
from racksmith.maas.model import parse_machines

#: The tag's default name (the modules', the playbooks' and the inventory plugin's).
QUARANTINE_TAG = "racksmith-quarantine"
_COMMENT = "racksmith: quarantined by the run's prepare job (docs/awx.md section 8)"


def sync_tag(
    client: MaasClient,
    *,
    scope: Iterable[str],
    quarantined: Iterable[str],
    tag: str = QUARANTINE_TAG,
    check_mode: bool = False,
) -> Outcome:
    """Tag the ``quarantined`` machines and untag the rest of ``scope`` (hostnames: the run's
    hosts), with one listing and at most one tag update; check mode says what it would do."""
    if not _TAG.match(tag or ""):
        raise MaasConfigError(f"quarantine tag {tag!r}: letters, digits, '-' and '_' only")
    bad = sorted(set(quarantined) - set(scope))
    if bad:
        raise MaasConfigError(f"quarantined hosts outside the run's hosts: {', '.join(bad)}")
    wanted = set(quarantined)
    names = sorted(set(scope))
    outcome = Outcome()
    if not names:
        return outcome
    found = {m.hostname: m for m in parse_machines(client.get("machines/", {"hostname": names}))}
    add = sorted(found[n].system_id for n in wanted if n in found and tag not in found[n].tag_names)
    remove = sorted(m.system_id for n, m in found.items() if n not in wanted and tag in m.tag_names)
    unknown = sorted(wanted - set(found))
    if unknown:
        outcome.warnings.append(
            f"not in MAAS, so not tagged {tag} (never enlisted): {', '.join(unknown)}"
        )
    label = {m.system_id: m.hostname for m in found.values()}
    before = sorted(n for n, m in found.items() if tag in m.tag_names)
    after = sorted((set(before) | {label[s] for s in add}) - {label[s] for s in remove})
    outcome.diff = {"before": {"tagged": before}, "after": {"tagged": after}}
    said = []
    if add:
        said.append(f"tag {tag} on {', '.join(sorted(label[s] for s in add))}")
    if remove:
        said.append(f"take {tag} off {', '.join(sorted(label[s] for s in remove))}")
    if not said:
        return outcome
    if check_mode:
        for line in said:
            outcome.did(f"would {line}")
        return outcome
    _ensure_tag(client, tag)
    client.post(
        f"tags/{tag}/",
        [*(("add", s) for s in add), *(("remove", s) for s in remove)],
        op="update_nodes",
        idempotent=True,  # adding a tag a machine has, or removing one it lacks, is a no-op
    )
    for line in said:
        outcome.did(line)
    return outcome


def _ensure_tag(client: MaasClient, tag: str) -> None:
    """Create the manual tag (no definition) unless MAAS has it."""
    if any(t.get("name") == tag for t in client.get("tags/") or []):
        return
    try:
        client.post("tags/", {"name": tag, "comment": _COMMENT, "definition": ""})
    except MaasBadRequest as exc:
        if "already exists" not in exc.summary:
            raise
