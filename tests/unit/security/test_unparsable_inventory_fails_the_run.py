"""Issue 9, case 5: an inventory source that cannot be parsed fails the run.

Before: a plain-text password, a missing credentials variable or broken YAML gave a warning,
an empty inventory and exit code 0 (Ansible's default ``unparsed_is_failed=False``), and
``site.yml`` then "succeeded" on no hosts. The plugins raise ``AnsibleParserError`` on every
configuration error; racksmith's ``ansible.cfg`` turns an unparsed source into a failure. These
tests run ``ansible-inventory`` with the repository's own ``ansible.cfg`` on an inventory
directory (like ``inventory/lab/``) where one source is broken and another is fine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

BROKEN = {
    "plain-text password": (
        "plugin: racksmith.core.redfish\ntargets: [127.0.0.1:9]\npassword: hunter22\n",
        "'password' is plain text",
    ),
    "missing credentials variable": (
        "plugin: racksmith.core.redfish\ntargets: [127.0.0.1:9]\n"
        "password_env: RACKSMITH_NO_SUCH_VAR\n",
        "RACKSMITH_NO_SUCH_VAR",
    ),
    "broken YAML": ("plugin: racksmith.core.redfish\ntargets: [127.0.0.1:9\n", "redfish.yml"),
    "bad target": ("plugin: racksmith.core.redfish\ntargets: [127.1]\n", "'127.1'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_source_fails_ansible_inventory(case, tmp_path):
    text, reason = BROKEN[case]
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "redfish.yml").write_text(text)
    (inventory / "hosts.yml").write_text("all:\n  hosts:\n    fine-host:\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_"))}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_INVENTORY_PLUGINS=str(REPO / "plugins" / "inventory"),
        HOME=str(tmp_path),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        RACKSMITH_BMC_USERNAME="root",
    )
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inventory), "--list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode != 0, f"{case}: exit 0 with an unparsed source\n{done.stderr}"
    assert reason in done.stderr
    assert "hunter22" not in done.stdout + done.stderr
