"""node_exporter's verify-first step (racksmith.roles.node_exporter, filters in
plugins/filter/node_exporter.py): the probe runs here for real (dpkg-query on an installed
package of this Debian machine, sha1sum and stat of files the test writes, apt-cache policy),
with systemctl replaced by a command that answers as systemd does for a running, enabled unit
(this test machine runs no systemd)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from racksmith.roles import node_exporter
from racksmith.testing.plugins import plugin_filters

FLAGS = 'ARGS="--web.listen-address=:9100 --collector.textfile.directory=/x"\n'
SHA1 = hashlib.sha1(FLAGS.encode()).hexdigest()  # noqa: S324 (what sha1sum prints)

pytestmark = pytest.mark.skipif(
    not (shutil.which("dpkg-query") and shutil.which("apt-cache")) or os.geteuid() != 0,
    reason="needs dpkg-query and apt-cache (a Debian-family machine) and root (owners root)",
)


def _installed_package() -> str:
    """A package installed here (dpkg itself always is), with its version."""
    return "dpkg"


def _host(tmp_path, unit_state=("active", "enabled"), package=None):
    tmp_path.mkdir(exist_ok=True)
    flags = tmp_path / "flags"
    flags.write_text(FLAGS)
    flags.chmod(0o644)
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    textfile.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(
        '#!/bin/sh\ncase "$1" in is-active) echo {};; is-enabled) echo {};; esac\n'.format(
            *unit_state
        )
    )
    systemctl.chmod(0o755)
    argv = node_exporter.probe_argv(
        package=package or _installed_package(), unit="prometheus-node-exporter",
        flags_file=str(flags), textfile_dir=str(textfile),
    )  # fmt: skip
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return (
        flags,
        textfile,
        lambda: (
            subprocess.run(
                argv, env=env, capture_output=True, text=True, check=True, timeout=120
            ).stdout
        ),
    )


def _drift(text, **changes):
    options = dict(package=_installed_package(), flags_sha1=SHA1, hold=False)
    return node_exporter.drift(text, **{**options, **changes})


def test_a_host_as_the_role_left_it_has_not_drifted(tmp_path):
    _, _, probe = _host(tmp_path)
    text = probe()
    assert _drift(text) == []
    assert "Installed:" in node_exporter.policy(text)


def test_each_drift_is_named(tmp_path):
    flags, textfile, probe = _host(tmp_path, ("inactive", "disabled"))
    flags.write_text(FLAGS + "# edited\n")
    textfile.chmod(0o700)
    found = _drift(probe(), hold=True, version="0.0-not-this")
    assert found[0].startswith("dpkg is ") and found[0].endswith(", not 0.0-not-this")
    assert found[1:] == [
        "dpkg is not held",
        "the flags file differs from what the role writes",
        "the textfile directory is directory|root root 700",
        "the exporter is inactive and disabled",
    ]
    gone_flags, gone_dir, gone_probe = _host(tmp_path / "new", package="racksmith-no-such-package")
    gone_flags.unlink()
    shutil.rmtree(gone_dir)
    gone = _drift(gone_probe(), package="racksmith-no-such-package")
    assert gone[0].startswith("racksmith-no-such-package is not installed")
    assert "the textfile directory is absent" in gone


def test_the_release_method_is_never_read_ahead(tmp_path):
    _, _, probe = _host(tmp_path)
    assert _drift(probe(), method="release") == [
        "node_exporter_install_method release: its steps are not read ahead"
    ]


def test_output_that_is_not_the_probes_fails_closed():
    with pytest.raises(ValueError, match="lacks the status, policy, flags, textfile, unit part"):
        _drift("apt-cache: command not found\n")
    with pytest.raises(ValueError, match="must be an absolute path"):
        node_exporter.probe_argv(package="p", unit="u", flags_file="etc/x", textfile_dir="/d")
    filters = plugin_filters("plugins/filter/node_exporter.py")
    with pytest.raises(AnsibleFilterError, match="node_exporter_drift: probe output lacks"):
        filters["node_exporter_drift"]("", "p", SHA1)


def test_the_filters_are_thin_adapters(tmp_path):
    _, textfile, probe = _host(tmp_path)
    filters = plugin_filters("plugins/filter/node_exporter.py")
    text = probe()
    assert filters["node_exporter_drift"](text, "dpkg", SHA1, hold=False) == []
    assert filters["node_exporter_policy"](text) == node_exporter.policy(text)
    assert filters["node_exporter_probe_argv"]("p", "u", "/f", str(textfile))[:2] == [
        "/bin/sh",
        "-c",
    ]
