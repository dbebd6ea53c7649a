"""The lookups that compute a value once per process (issue 25): racksmith.core.yaml_file (a
YAML data file, parsed once per version of the file) and racksmith.core.package_dir (where a
package lives, without a process). Loaded from their files; real files, no mocks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleLookupError

import racksmith
from racksmith.testing.plugins import load_plugin

yaml_file = load_plugin("plugins/lookup/yaml_file.py")
package_dir = load_plugin("plugins/lookup/package_dir.py")


def test_yaml_file_parses_once_per_version_of_the_file(tmp_path):
    rack = tmp_path / "rack.yml"
    rack.write_text("network: {prefix: 192.168.236}\n")
    first = yaml_file.load(str(rack))
    assert first == {"network": {"prefix": "192.168.236"}}
    assert yaml_file.load(str(rack)) is first  # the same object: not parsed again
    rack.write_text("network: {prefix: 10.20.30, more: 1}\n")  # a new size (and mtime)
    os.utime(rack, ns=(1, 1))
    assert yaml_file.load(str(rack)) == {"network": {"prefix": "10.20.30", "more": 1}}


def test_yaml_file_is_data_only_and_fails_naming_the_file(tmp_path):
    tagged = tmp_path / "tagged.yml"
    tagged.write_text("x: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(AnsibleLookupError, match=f"{tagged} is not valid YAML"):
        yaml_file.load(str(tagged))
    missing = tmp_path / "nope.yml"
    with pytest.raises(AnsibleLookupError, match=f"cannot read {missing}"):
        yaml_file.load(str(missing))
    with pytest.raises(AnsibleLookupError, match="give one file, not 2"):
        yaml_file.LookupModule().run([str(tagged), str(missing)])


def test_package_dir_is_where_this_python_imports_the_package():
    assert package_dir.LookupModule().run(["racksmith"]) == [str(Path(racksmith.__file__).parent)]
    with pytest.raises(AnsibleLookupError, match=r"has no package 'no_such_pkg_rs'") as caught:
        package_dir.package_dir("no_such_pkg_rs")
    assert sys.executable in str(caught.value)  # which Python was asked
