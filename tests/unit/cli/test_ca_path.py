"""``ca_path`` beside ``ca_bundle`` everywhere (issue 27 item 6): most Ansible collections call
the CA file ``ca_path``; racksmith's name is ``ca_bundle``. One definition
(:func:`racksmith.optionspec.ca_bundle_option`) gives the modules' argument specs, the doc
fragments and the command line the alias; the inventory plugins document it, and Ansible's own
config manager resolves it (shown here with a real ``ansible-inventory`` run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from racksmith import cli
from racksmith.maas import options as maas_options
from racksmith.maas.ansible import CONNECTION_ARGS
from racksmith.optionspec import argument_spec
from racksmith.redfish import options as redfish_options

REPO = Path(__file__).resolve().parents[3]


def test_module_argument_specs_take_ca_path():
    assert argument_spec(redfish_options.MODULE)["ca_bundle"]["aliases"] == ["ca_path"]
    assert CONNECTION_ARGS["ca_bundle"]["aliases"] == ["ca_path"]
    assert maas_options.CA_BUNDLE.name == redfish_options.CA_BUNDLE.name == "ca_bundle"


def test_the_command_line_takes_ca_path():
    for argv in (
        ["redfish", "discover", "--bmc", "10.0.0.1", "--ca-path", "ca.pem"],
        ["maas", "machines", "--ca-path", "ca.pem"],
        ["fabric", "ufm", "event.log", "--ca-path", "ca.pem"],
    ):
        assert cli.build_parser(argv[0]).parse_args(argv).ca_bundle == "ca.pem", argv


def test_an_inventory_file_with_ca_path_is_read_as_ca_bundle(tmp_path):
    source = tmp_path / "redfish.yml"
    missing = tmp_path / "no-such-ca.pem"
    source.write_text(
        f"plugin: racksmith.core.redfish\ntargets: [127.0.0.1:1]\nca_path: {missing}\ndeadline: 2\n"
    )
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "RACKSMITH_BMC_USERNAME": "u",
        "RACKSMITH_BMC_PASSWORD": "p",
    }
    done = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-inventory")), "-i", str(source), "--list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
        check=False,
    )
    # the plugin took the path given as ca_path for its ca_bundle, and checked it
    assert f"ca_bundle {missing}: No such file or directory" in done.stderr, done.stderr
