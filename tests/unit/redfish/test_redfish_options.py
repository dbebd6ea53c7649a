"""Issue 8 item 4: one definition of the Redfish options. The module argument spec, the doc
fragment, the CLI and the inventory plugin's documentation must agree on every name, type,
default and choice (they once had three different deadline defaults)."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from racksmith.optionspec import doc_fragment, doc_options
from racksmith.redfish import cli, options
from racksmith.redfish.ansible_support import COMMON_ARGUMENTS
from racksmith.redfish.discover import DiscoveryOptions
from racksmith.testing.plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]


_load = load_plugin


def test_doc_fragment_is_the_generated_text():
    fragment = _load(REPO / "plugins" / "doc_fragments" / "racksmith_redfish.py")
    assert fragment.ModuleDocFragment.DOCUMENTATION == doc_fragment(options.MODULE), (
        "regenerate plugins/doc_fragments/racksmith_redfish.py: python -m racksmith.redfish.options"
    )


def test_argument_spec_matches_the_documentation():
    documented = yaml.safe_load(doc_fragment(options.MODULE))["options"]
    assert set(COMMON_ARGUMENTS) == set(documented)
    for name, spec in COMMON_ARGUMENTS.items():
        for key in ("type", "default", "choices", "required", "aliases"):
            assert spec.get(key) == documented[name].get(key), (name, key)


def _cli_defaults(command: str = "discover") -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args([command, "--bmc", "127.0.0.1"])


def test_cli_offers_every_option_by_its_one_name_and_default():
    args = _cli_defaults()
    for option in (*options.CLI_CONNECTION, *options.DISCOVERY):
        assert hasattr(args, option.name), option.name
        expected = option.default if option.type != "list" else None  # lists: append
        assert getattr(args, option.name) == expected, option.name


def test_inventory_documents_the_same_options():
    plugin_doc = yaml.safe_load(_load(REPO / "plugins" / "inventory" / "redfish.py").DOCUMENTATION)
    inventory = plugin_doc["options"]
    shared = doc_options(o for o in (*options.MODULE, *options.DISCOVERY) if o.name in inventory)
    assert {"deadline", "credentials_file", "connect_timeout", "allow_names"} <= set(shared)
    for name, doc in shared.items():
        theirs = inventory[name]
        assert {doc["type"], theirs["type"]} <= {"path", "str"} or doc["type"] == theirs["type"]
        assert theirs.get("default") == doc.get("default"), name
        assert theirs.get("choices") == doc.get("choices"), name
        assert theirs.get("aliases") == doc.get("aliases"), name


def test_library_defaults_are_the_option_defaults():
    assert DiscoveryOptions().deadline == options.DEADLINE.default == 120
    assert DiscoveryOptions().concurrency == options.CONCURRENCY.default


def test_old_spellings_still_work_on_the_command_line(tmp_path):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["discover", "--bmc", "127.0.0.1", "--env-file", "f", "--insecure", "--extra", "pcie"]
    )
    assert args.credentials_file == "f" and args.validate_certs is False
    assert args.extras == ["pcie"]
