"""Issue 8 item 4: one definition of the MAAS options, agreeing across the module argument
spec, the doc fragment, the CLI and the inventory plugin."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from racksmith.maas import cli, options
from racksmith.maas.ansible import CONNECTION_ARGS, SELECTOR_ARGS, WAIT_ARGS
from racksmith.optionspec import doc_fragment, doc_options
from racksmith.testing.plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]


_load = load_plugin


def test_doc_fragments_are_the_generated_text():
    fragment = _load(REPO / "plugins" / "doc_fragments" / "racksmith_maas.py").ModuleDocFragment
    for attribute, opts in options.FRAGMENTS.items():
        assert getattr(fragment, attribute) == doc_fragment(opts), attribute


def test_argument_specs_match_the_documentation():
    documented = yaml.safe_load(doc_fragment(options.CONNECTION + options.WAIT))["options"]
    spec = {**CONNECTION_ARGS, **WAIT_ARGS}
    assert set(spec) == set(documented)
    for name, entry in spec.items():
        for key in ("type", "default", "choices", "aliases"):
            assert entry.get(key) == documented[name].get(key), (name, key)
    assert set(SELECTOR_ARGS) == {"pxe_mac", "system_id", "hostname"}


def test_cli_uses_the_same_names_and_defaults():
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["machines"])
    for option in options.CONNECTION + options.WAIT:
        if option.cli:
            assert getattr(args, option.name) == option.default, option.name
    old = parser.parse_args(["machines", "--credentials", "f", "--insecure"])
    assert old.credentials_file == "f" and old.validate_certs is False


def test_inventory_documents_the_same_options():
    inventory = yaml.safe_load(_load(REPO / "plugins" / "inventory" / "maas.py").DOCUMENTATION)
    theirs = inventory["options"]
    shared = doc_options(o for o in options.CONNECTION if o.name in theirs)
    assert {"credentials_file", "read_timeout", "deadline", "validate_certs"} <= set(shared)
    for name, doc in shared.items():
        assert {doc["type"], theirs[name]["type"]} <= {"path", "str"} or (
            doc["type"] == theirs[name]["type"]
        )
        assert theirs[name].get("default") == doc.get("default"), name
    # the other spellings an inventory file may use (issue 27: ca_path beside ca_bundle)
    assert theirs["ca_bundle"]["aliases"] == ["ca_path"] == shared["ca_bundle"]["aliases"][:1]
    assert theirs["read_timeout"]["aliases"] == ["timeout"] == shared["read_timeout"]["aliases"]
