"""Issue 22: a credentials file is read the way ssh reads a private key.

Before: a FIFO with no writer hung the CLI forever (BMC and MAAS alike), a 0600 character
device such as ``/dev/zero`` was read until MemoryError, the 0600 check followed symlinks and
ignored the owner and the directory (a file owned by another user, or in a world-writable
directory, was accepted and its secret sent), and a Latin-1 file failed with "'utf-8' codec
can't decode..." without the file's name.

Every case here goes through the one reader (:func:`racksmith.secrets.read_credentials_file`)
and through both CLIs, and must be refused within a second with the file named. The suite
runs as root in CI: another owner is made with ``os.chown``.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from racksmith import cli, secrets

GOOD = "RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD=file-pw-1234\n"
MAAS = "MAAS_URL=http://127.0.0.1:9/MAAS/\nMAAS_API_KEY=aaaa:bbbb:cccc\n"
FOREIGN_UID = 4242


def _private_dir(tmp_path: Path) -> Path:
    where = tmp_path / "private"
    where.mkdir(mode=0o700)
    return where


def _write(path: Path, text: str | bytes = GOOD + MAAS, mode: int = 0o600) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


def _fifo(tmp_path: Path) -> Path:
    path = _private_dir(tmp_path) / "creds.env"
    os.mkfifo(path, 0o600)  # no writer: opening it blocking would hang forever
    return path


def _device(tmp_path: Path) -> Path:
    """A 0600 character device reading like /dev/zero (mknod where root may; else /dev/zero
    itself, whose type is checked before its mode)."""
    path = _private_dir(tmp_path) / "creds.env"
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except OSError:
        return Path("/dev/zero")
    return path


def _symlink(tmp_path: Path) -> Path:
    where = _private_dir(tmp_path)
    real = _write(where / "real.env")
    link = where / "creds.env"
    link.symlink_to(real)
    return link


def _give_away(path: Path) -> None:
    if os.geteuid() != 0:  # CI runs as root; elsewhere a file cannot be given away
        pytest.skip("only root can make a file owned by another user")
    os.chown(path, FOREIGN_UID, FOREIGN_UID)


def _foreign_owner(tmp_path: Path) -> Path:
    path = _write(_private_dir(tmp_path) / "creds.env")
    _give_away(path)
    return path


def _world_writable_dir(tmp_path: Path) -> Path:
    where = tmp_path / "shared"
    where.mkdir()
    where.chmod(0o777)
    return _write(where / "creds.env")


def _sticky_world_writable_dir(tmp_path: Path) -> Path:
    where = tmp_path / "sticky"
    where.mkdir()
    where.chmod(0o1777)  # like /tmp: as ssh, a key directly in it is refused
    return _write(where / "creds.env")


def _group_writable_dir(tmp_path: Path) -> Path:
    where = tmp_path / "group"
    where.mkdir()
    where.chmod(0o770)
    return _write(where / "creds.env")


def _foreign_dir(tmp_path: Path) -> Path:
    where = _private_dir(tmp_path)
    path = _write(where / "creds.env")
    _give_away(where)
    return path


def _too_big(tmp_path: Path) -> Path:
    return _write(_private_dir(tmp_path) / "creds.env", "A=" + "x" * (1 << 20) + "\n")


def _latin1(tmp_path: Path) -> Path:
    text = "RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD=p\xe4sswort-1\n"
    return _write(_private_dir(tmp_path) / "creds.env", text.encode("latin-1"))


#: case -> (how to make it, a word the error must hold besides the file's name)
REFUSED = {
    "fifo": (_fifo, "FIFO"),
    "device": (_device, "device"),
    "symlink": (_symlink, "symbolic link"),
    "foreign_owner": (_foreign_owner, f"uid {FOREIGN_UID}"),
    "world_writable_dir": (_world_writable_dir, "chmod go-w"),
    "sticky_world_writable_dir": (_sticky_world_writable_dir, "chmod go-w"),
    "group_writable_dir": (_group_writable_dir, "chmod go-w"),
    "foreign_owned_dir": (_foreign_dir, f"uid {FOREIGN_UID}"),
    "too_big": (_too_big, "larger than"),
    "latin1": (_latin1, "not UTF-8"),
}


def _within_a_second(call):
    """Run ``call`` in a thread: the result (or exception) and the seconds it took; a call
    still blocked after 5 s fails the test instead of hanging the suite."""
    out: dict = {}

    def run():
        started = time.monotonic()
        try:
            out["value"] = call()
        except BaseException as exc:  # handed back to the test
            out["error"] = exc
        out["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "still blocked after 5 s"
    return out


@pytest.mark.parametrize("case", REFUSED)
def test_unsafe_credentials_file_is_refused_within_a_second_naming_it(case, tmp_path):
    make, word = REFUSED[case]
    path = make(tmp_path)
    out = _within_a_second(lambda: secrets.read_credentials_file(path))
    error = out.get("error")
    assert isinstance(error, secrets.SecretError), out
    assert out["seconds"] < 1.0
    assert str(path) in str(error) and word in str(error)
    assert "Fix:" in str(error)
    assert "file-pw-1234" not in str(error) and "p\xe4sswort" not in str(error)


@pytest.mark.parametrize("case", REFUSED)
def test_bmc_cli_exits_2_naming_the_unsafe_file(case, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RACKSMITH_BMC_PASSWORD", raising=False)
    monkeypatch.delenv("RACKSMITH_BMC_USERNAME", raising=False)
    path = REFUSED[case][0](tmp_path)
    argv = ["redfish", "discover", "--bmc", "127.0.0.1:9", "--credentials-file", str(path)]
    out = _within_a_second(lambda: cli.main(argv))
    assert out.get("value") == 2 and out["seconds"] < 1.0, out
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("case", REFUSED)
def test_maas_cli_exits_2_naming_the_unsafe_file(case, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    path = REFUSED[case][0](tmp_path)
    argv = ["maas", "machines", "--credentials-file", str(path)]
    out = _within_a_second(lambda: cli.main(argv))
    assert out.get("value") == 2 and out["seconds"] < 1.0, out
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_file_in_a_private_directory_is_read(tmp_path, mode):
    """The checks refuse only what they should: the lab's layout (a 0700 directory, a 0600
    file owned by the user) reads, below a sticky shared ancestor such as /tmp too."""
    path = _write(_private_dir(tmp_path) / "creds.env", mode=mode)
    values = secrets.read_credentials_file(path)
    assert values["RACKSMITH_BMC_PASSWORD"] == "file-pw-1234"
    assert values["MAAS_API_KEY"] == "aaaa:bbbb:cccc"


def test_a_root_owned_file_is_accepted_like_ssh_does(tmp_path):
    """ssh accepts keys owned by the user or root; so does racksmith (a vault agent running as
    root may write them). As root in CI both are uid 0: the check compares with the euid."""
    path = _write(_private_dir(tmp_path) / "creds.env")
    assert os.stat(path).st_uid in (0, os.geteuid())
    assert secrets.read_credentials_file(path)["RACKSMITH_BMC_USERNAME"] == "root"


def test_missing_file_names_the_file_not_its_directory(tmp_path):
    path = tmp_path / "absent" / "creds.env"
    with pytest.raises(secrets.SecretError, match=f"credentials file {path}"):
        secrets.read_credentials_file(path)
