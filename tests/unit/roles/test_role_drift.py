"""racksmith.roles.drift: the generic verify-first comparison, and its probe run for real on
this machine (the snippets are shell: they must print what the parser reads)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from racksmith import hostprobe
from racksmith.roles import drift

SHA1_X1 = hashlib.new("sha1", b"x = 1\n", usedforsecurity=False).hexdigest()


def read(want: dict) -> dict[str, str]:
    """Run the probe the role would run, here, and split its sections."""
    argv = hostprobe.probe_argv(drift.probe_sections(want))
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return hostprobe.parse_sections(out, drift.SECTIONS)


def test_nothing_drifted_on_what_this_machine_has(tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("x = 1\n")
    conf.chmod(0o640)
    me = subprocess.run(["stat", "-c", "%U %G", str(tmp_path)], capture_output=True, text=True)
    owner, group = me.stdout.split()
    version = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "bash"], capture_output=True, text=True
    ).stdout
    mode = f"{tmp_path.stat().st_mode & 0o7777:o}"
    hostname = Path("/proc/sys/kernel/hostname").read_text().strip()
    want = {
        "packages": [f"bash={version}", "coreutils"],
        "files": [
            {"path": str(conf), "sha1": SHA1_X1, "mode": "640",
             "owner": owner, "group": group},
            {"path": str(tmp_path), "directory": True, "mode": mode,
             "owner": owner, "group": group},
        ],
        "sysctl": {"kernel.hostname": hostname},
    }  # fmt: skip
    assert drift.drift(read(want), want) == []


def test_every_difference_is_named(tmp_path: Path) -> None:
    conf = tmp_path / "a.conf"
    conf.write_text("x = 2\n")
    want = {
        "packages": ["bash=0.0-not-this", "racksmith-no-such-package"],
        "hold": ["bash"],
        "files": [
            {"path": str(conf), "sha1": SHA1_X1, "mode": "600",
             "owner": "root", "group": "root"},
            {"path": str(tmp_path / "absent"), "sha1": "", "mode": "644", "owner": "root",
             "group": "root"},
            {"path": str(conf), "directory": True, "mode": "600", "owner": "root", "group": "root"},
            {"path": str(conf), "absent": True},
            {"path": str(tmp_path / "absent"), "absent": True},
        ],
        "services": [
            "racksmith-no-such.service", {"name": "racksmith-other.service", "active": False}
        ],
        "sysctl": {"kernel.hostname": "not-this-host", "racksmith.no.such": "1"},
    }  # fmt: skip
    reasons = drift.drift(read(want), want)
    assert any(
        r.startswith("bash: version ") and r.endswith("wanted 0.0-not-this") for r in reasons
    )
    assert "bash: not held" in reasons  # hold names the packages that must be held
    assert "racksmith-no-such-package: not installed" in reasons
    assert f"{conf}: content differs" in reasons
    assert any(r.startswith(f"{conf}: mode ") for r in reasons)
    assert f"{tmp_path / 'absent'}: missing" in reasons
    assert f"{conf}: not a directory" in reasons
    assert any(
        r.startswith("racksmith-no-such.service: ") and r.endswith("wanted active enabled")
        for r in reasons
    )
    assert any(r.startswith("sysctl kernel.hostname: ") for r in reasons)
    assert f"{conf}: present, wanted absent" in reasons
    assert not any(r.startswith(f"{tmp_path / 'absent'}: present") for r in reasons)
    assert any(
        r.startswith("racksmith-other.service: ") and r.endswith("wanted enabled") for r in reasons
    )
    assert "sysctl racksmith.no.such: -, wanted 1" in reasons


def test_a_section_the_probe_did_not_print_is_drift() -> None:
    want = {
        "files": [
            {"path": "/etc/hostname", "sha1": "", "mode": "644", "owner": "root", "group": "root"}
        ]
    }
    assert drift.drift({"packages": ""}, want) == ["the probe did not read files"]
    # a part the role does not want needs no section
    assert drift.drift({"files": "- - - - /etc/hostname\n"}, want) == ["/etc/hostname: missing"]


@pytest.mark.parametrize(
    "want",
    [
        {"packages": ["two words"]},
        {"files": [{"path": "relative/path"}]},
        {"services": ["a b"]},
        {"sysctl": {"a b": "1"}},
    ],
)
def test_bad_names_are_refused_before_any_shell_is_written(want: dict) -> None:
    with pytest.raises(ValueError, match="must be"):
        drift.probe_sections(want)
