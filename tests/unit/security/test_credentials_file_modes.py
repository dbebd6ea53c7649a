"""Issue 9, case 6: credentials files must be 0600 or stricter, with a message naming the file
and the fix. Before: ``--env-file`` and the inventory's ``credentials_file`` read any file."""

from __future__ import annotations

import pytest

from racksmith import cli
from racksmith.maas.auth import resolve_credentials
from racksmith.maas.errors import MaasConfigError
from racksmith.redfish.credentials import CredentialsError, from_env


@pytest.fixture
def env_file(tmp_path):
    path = tmp_path / "bmc.env"
    path.write_text(
        "RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD=file-pw-123\n"
        "MAAS_URL=http://127.0.0.1:1/MAAS/\nMAAS_API_KEY=aaaa:bbbb:cccc\n"
    )
    return path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o660])
def test_group_or_world_access_is_refused(env_file, mode, monkeypatch):
    monkeypatch.delenv("RACKSMITH_BMC_PASSWORD", raising=False)
    monkeypatch.delenv("RACKSMITH_BMC_USERNAME", raising=False)
    env_file.chmod(mode)
    with pytest.raises(CredentialsError) as err:
        from_env(env_file=env_file)
    assert str(env_file) in str(err.value) and f"chmod 600 {env_file}" in str(err.value)
    with pytest.raises(MaasConfigError, match="chmod 600"):
        resolve_credentials(credentials_file=env_file, environ={})


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_owner_only_is_accepted(env_file, mode, monkeypatch):
    monkeypatch.delenv("RACKSMITH_BMC_PASSWORD", raising=False)
    env_file.chmod(mode)
    assert from_env(env_file=env_file).password_value() == "file-pw-123"


@pytest.mark.parametrize("flag", ["--credentials-file", "--env-file"])
def test_cli_exits_2_naming_the_file(env_file, flag, monkeypatch, capsys):
    monkeypatch.delenv("RACKSMITH_BMC_PASSWORD", raising=False)
    env_file.chmod(0o644)
    assert cli.main(["redfish", "discover", "--bmc", "127.0.0.1:9", flag, str(env_file)]) == 2
    err = capsys.readouterr().err
    assert str(env_file) in err and "0644" in err and "file-pw-123" not in err
