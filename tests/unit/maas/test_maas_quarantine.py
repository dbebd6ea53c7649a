"""The run's quarantine as a MAAS tag (racksmith.maas.quarantine, module maas_quarantine_tag;
issue 25 item 3 for AWX job slices): the prepare job tags exactly the quarantined machines of
the run and untags the rest, leaves machines outside the run alone, and the maas inventory
plugin (quarantine_tag) puts tagged machines in group quarantine. Canonical's python-libmaas
reads the tags back: the simulator's answer is MAAS's, not only our client's."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

from racksmith.maas import quarantine
from racksmith.maas.errors import MaasConfigError

PLUGIN = Path(__file__).resolve().parents[3] / "plugins" / "inventory" / "maas.py"
TAG = quarantine.QUARANTINE_TAG


def libmaas_tags(sim) -> dict[str, set[str]]:
    """Each machine's tags as Canonical's client reads them."""
    maas_client = pytest.importorskip("maas.client")
    client = maas_client.connect(sim.url, apikey=sim.store.admin_key())
    return {m.hostname: {t.name for t in m.tags} for m in client.machines.list()}


def test_the_prepare_job_tags_exactly_the_quarantined_machines_of_the_run(sim, client):
    sim.store.enlist_ready(5)  # sim-0001 .. sim-0005; sim-0005 is outside the run
    client.post("tags/", {"name": TAG})
    outside = next(m for m in sim.store.machines.values() if m.hostname == "sim-0005")
    client.post(f"tags/{TAG}/", {"add": outside.system_id}, op="update_nodes")
    run = ["sim-0001", "sim-0002", "sim-0003", "sim-0004", "gone09"]

    first = quarantine.sync_tag(client, scope=run, quarantined=["sim-0002", "gone09"])
    assert first.actions == [f"tag {TAG} on sim-0002"]
    assert first.diff == {"before": {"tagged": []}, "after": {"tagged": ["sim-0002"]}}
    assert first.warnings == [f"not in MAAS, so not tagged {TAG} (never enlisted): gone09"]
    tags = libmaas_tags(sim)
    assert {h for h, t in tags.items() if TAG in t} == {"sim-0002", "sim-0005"}

    # The next run: sim-0002 was repaired, sim-0003 and sim-0004 are quarantined now.
    plan = quarantine.sync_tag(
        client, scope=run, quarantined=["sim-0003", "sim-0004"], check_mode=True
    )
    assert plan.actions == [
        f"would tag {TAG} on sim-0003, sim-0004",
        f"would take {TAG} off sim-0002",
    ]
    assert plan.diff["after"] == {"tagged": ["sim-0003", "sim-0004"]}
    assert {h for h, t in libmaas_tags(sim).items() if TAG in t} == {"sim-0002", "sim-0005"}
    second = quarantine.sync_tag(client, scope=run, quarantined=["sim-0003", "sim-0004"])
    assert second.changed and len(second.actions) == 2
    tagged = {h for h, t in libmaas_tags(sim).items() if TAG in t}
    assert tagged == {"sim-0003", "sim-0004", "sim-0005"}  # sim-0005: not the run's, untouched
    again = quarantine.sync_tag(client, scope=run, quarantined=["sim-0003", "sim-0004"])
    assert (again.changed, again.actions) == (False, [])


def test_the_tag_is_created_when_maas_lacks_it_and_bad_input_is_named(sim, client):
    sim.store.enlist_ready(1)
    done = quarantine.sync_tag(client, scope=["sim-0001"], quarantined=["sim-0001"])
    assert done.changed and TAG in {t["name"] for t in client.get("tags/")}
    with pytest.raises(MaasConfigError, match="outside the run's hosts: sim-0009"):
        quarantine.sync_tag(client, scope=["sim-0001"], quarantined=["sim-0009"])
    with pytest.raises(MaasConfigError, match="letters, digits"):
        quarantine.sync_tag(client, scope=["sim-0001"], quarantined=[], tag="no good")


def parse(source: Path) -> InventoryData:
    inventory_loader.add_directory(str(PLUGIN.parent))
    plugin = inventory_loader.get("maas")
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), str(source), cache=False)
    return inventory


def test_the_inventory_puts_tagged_machines_in_group_quarantine(sim, client, tmp_path, monkeypatch):
    sim.store.enlist_ready(3)
    quarantine.sync_tag(client, scope=["sim-0001", "sim-0002"], quarantined=["sim-0002"])
    creds = tmp_path / "maas.env"
    creds.write_text(f"MAAS_URL={sim.url}\nMAAS_API_KEY={sim.store.admin_key()}\n")
    creds.chmod(0o600)
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    plain = tmp_path / "plain.maas.yml"
    plain.write_text(f"plugin: maas\ncredentials_file: {creds}\n")
    assert "quarantine" not in parse(plain).groups  # the prepare job's view: decided afresh
    sliced = tmp_path / "slices.maas.yml"
    sliced.write_text(f"plugin: maas\ncredentials_file: {creds}\nquarantine_tag: {TAG}\n")
    inventory = parse(sliced)
    assert [h.name for h in inventory.groups["quarantine"].hosts] == ["sim-0002"]
    reason = inventory.get_host("sim-0002").vars["racksmith_quarantine_reason"]
    assert reason == f"quarantined by the run's prepare job (MAAS tag {TAG})"
    assert "racksmith_quarantine_reason" not in inventory.get_host("sim-0001").vars
    bad = tmp_path / "bad.maas.yml"
    bad.write_text(f"plugin: maas\ncredentials_file: {creds}\nquarantine_tag: 'a b'\n")
    with pytest.raises(AnsibleParserError, match="quarantine_tag 'a b'"):
        parse(bad)
