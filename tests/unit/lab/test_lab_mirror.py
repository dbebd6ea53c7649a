"""The lab's Debian mirror comes from the machine's apt sources or a setting, never the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from racksmith.lab import mirror
from racksmith.lab.errors import LabError

DEB822 = """\
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def _apt(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_deb822_sources(tmp_path):
    apt = _apt(tmp_path, {"sources.list.d/debian.sources": DEB822})
    assert mirror.debian_mirror({}, apt) == "http://mirror.example/debian"
    assert mirror.security_mirror({}, apt) == "http://mirror.example/debian-security"


def test_one_line_sources_with_options_and_disabled_files(tmp_path):
    apt = _apt(
        tmp_path,
        {
            "sources.list": "# deb http://old.example/debian bookworm main\n"
            "deb-src http://src.example/debian bookworm main\n"
            "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian/ bookworm main contrib\n",
            "sources.list.d/vendor.list.disabled-by-farm": "deb http://x.example/ y main\n",
        },
    )
    assert mirror.debian_mirror({}, apt) == "http://one.example/debian"
    assert mirror.security_mirror({}, apt) == "http://one.example/debian-security"


def test_setting_wins(tmp_path):
    apt = _apt(tmp_path, {"sources.list.d/debian.sources": DEB822})
    env = {mirror.ENV_MIRROR: "http://site/debian/", mirror.ENV_SECURITY: "http://site/sec/"}
    assert mirror.debian_mirror(env, apt) == "http://site/debian"
    assert mirror.security_mirror(env, apt) == "http://site/sec"


def test_no_archive_is_a_clear_error(tmp_path):
    apt = _apt(tmp_path, {"sources.list.d/node.sources": "Types: deb\nURIs: https://n.example\n"
                          "Suites: nodistro\nComponents: other\n"})  # fmt: skip
    with pytest.raises(LabError, match="RACKSMITH_DEBIAN_MIRROR"):
        mirror.debian_mirror({}, apt)


def test_disabled_deb822_stanza_is_skipped(tmp_path):
    text = "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: b\nComponents: main\n"
    apt = _apt(tmp_path, {"sources.list.d/a.sources": text + "\n" + DEB822})
    assert mirror.debian_mirror({}, apt) == "http://mirror.example/debian"
