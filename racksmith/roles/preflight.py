"""What a role's one preflight task (``racksmith.core.role_preflight``) decides before it reads
the host: whether the facts the role decides on are there, and whether an earlier role of the
run already counted the PCI bus under the same sysfs root. Pure, so it is unit-tested here and
the action plugin stays an adapter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["missing_facts", "pci_reusable"]


def missing_facts(facts: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """The fact names in ``names`` that ``facts`` (a host's ``ansible_facts``) lacks, in order.
    Non-empty means the role must gather: it never decides on a fact it does not have."""
    return [name for name in names if name not in facts]


def pci_reusable(counts: Any, root: str) -> bool:
    """Whether ``counts`` (``ansible_facts.racksmith_pci_counts`` left by an earlier role) were
    read under ``root``: counts from another sysfs root (a test tree, a lab stand-in) or in any
    other shape are read again, never trusted."""
    return isinstance(counts, Mapping) and counts.get("root") == root and "gpu" in counts
