"""The maas inventory plugin, in process, against the in-process simulator: hosts, groups,
SSH targets for deployed machines, credentials from a file, and errors that name the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

from racksmith.maas import lifecycle
from racksmith.maas.lifecycle import DeployOptions

PLUGIN = Path(__file__).resolve().parents[3] / "plugins" / "inventory" / "maas.py"


def load_plugin():
    """Through Ansible's loader, so its DOCUMENTATION defines the options, as in a real run."""
    inventory_loader.add_directory(str(PLUGIN.parent))
    plugin = inventory_loader.get("maas")
    assert plugin is not None and Path(plugin._original_path) == PLUGIN
    return plugin


def parse(path: Path) -> InventoryData:
    inventory = InventoryData()
    plugin = load_plugin()
    assert plugin.verify_file(str(path))
    plugin.parse(inventory, DataLoader(), str(path), cache=False)
    return inventory


def test_deployed_machines_become_ssh_targets(sim, client, policy, tmp_path, monkeypatch):
    sim.store.enlist_ready(3)
    first = next(m for m in sim.store.machines.values() if m.hostname == "sim-0001")
    from racksmith.maas.machines import read

    lifecycle.deploy(client, read(client, first.system_id), policy, DeployOptions())
    client.post("tags/", {"name": "h200"})
    client.post("tags/h200/", {"add": first.system_id}, op="update_nodes")
    creds = tmp_path / "maas.env"
    creds.write_text(f"MAAS_URL={sim.url}\nMAAS_API_KEY={sim.store.admin_key()}\n")
    creds.chmod(0o600)
    source = tmp_path / "lab.maas.yml"
    source.write_text(
        "plugin: maas\ncredentials_file: " + str(creds) + "\nprivate_key_file: ~/.ssh/id_lab\n"
    )
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    inventory = parse(source)
    assert [h.name for h in inventory.groups["maas_deployed"].hosts] == ["sim-0001"]
    host = inventory.get_host("sim-0001")
    assert host.vars["ansible_host"] == host.vars["maas_ip_addresses"][0]
    assert host.vars["ansible_user"] == "ubuntu"
    assert host.vars["ansible_ssh_private_key_file"].endswith("/.ssh/id_lab")
    assert host.vars["maas_status_name"] == "Deployed"
    ready = inventory.get_host("sim-0002")
    assert "ansible_host" not in ready.vars
    assert {h.name for h in inventory.groups["maas_status_ready"].hosts} == {"sim-0002", "sim-0003"}
    assert [h.name for h in inventory.groups["maas_tag_h200"].hosts] == ["sim-0001"]
    assert "maas_pool_default" in inventory.groups


def test_unreachable_or_unconfigured_maas_is_a_parse_error(tmp_path, monkeypatch):
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    source = tmp_path / "maas.yml"
    source.write_text("plugin: maas\n")
    with pytest.raises(AnsibleParserError, match="no MAAS URL"):
        parse(source)
    monkeypatch.setenv("MAAS_URL", "http://127.0.0.1:9/MAAS/")
    monkeypatch.setenv("MAAS_API_KEY", "aaaaaa:bbbbbb:cccccccccc")
    with pytest.raises(AnsibleParserError) as exc:
        parse(source)
    assert "cannot list MAAS machines" in str(exc.value)
    assert "cccccccccc" not in str(exc.value)
