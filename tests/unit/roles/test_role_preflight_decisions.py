"""racksmith.roles.preflight: when the one preflight task gathers facts and reads the PCI bus."""

from __future__ import annotations

from racksmith.roles.preflight import missing_facts, pci_reusable


def test_missing_facts_are_listed_in_order() -> None:
    facts = {"os_family": "Debian", "kernel": "6.1.0"}
    assert missing_facts(facts, ["os_family", "kernel"]) == []
    assert missing_facts(facts, ["virtualization_type", "os_family", "distribution"]) == [
        "virtualization_type",
        "distribution",
    ]
    assert missing_facts({}, ["os_family"]) == ["os_family"]


def test_counts_are_reused_only_for_the_same_root_and_shape() -> None:
    counts = {"gpu": 8, "nvswitch": 4, "hca": 10, "nvme": 9, "functions": 50, "root": "/sys"}
    assert pci_reusable(counts, "/sys")
    assert not pci_reusable(counts, "/srv/fixture-sys")  # another tree: read again
    assert not pci_reusable(None, "/sys")  # no earlier role counted
    assert not pci_reusable({"root": "/sys"}, "/sys")  # not counts: never trusted
    assert not pci_reusable("gpu=8", "/sys")
