"""One credentials resolver for every surface (issue 24).

The bug it fixes: the Redfish modules, the inventory plugin, the CLI and MAAS's power parameters
each resolved BMC credentials their own way. A ``redfish_*`` module given ``password`` with
``RACKSMITH_BMC_USERNAME`` set failed with "no BMC password", because its copy looked the user
name up through a function that insisted on finding a password too.
"""

from __future__ import annotations

import argparse

import pytest

from racksmith import credentials
from racksmith.maas.ansible import POWER_ARGS, power_parameters
from racksmith.maas.auth import resolve_credentials
from racksmith.maas.errors import MaasConfigError
from racksmith.optionspec import add_arguments
from racksmith.redfish import options
from racksmith.redfish.ansible_support import COMMON_ARGUMENTS, client_from_params
from racksmith.redfish.client import ClientOptions

ENV_NAMES = ("RACKSMITH_BMC_USERNAME", "RACKSMITH_BMC_PASSWORD", "MAAS_URL", "MAAS_API_KEY")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)


def _module_params(**given):
    """What Ansible hands a redfish_* module: every option, defaults filled in."""
    params = {name: spec.get("default") for name, spec in COMMON_ARGUMENTS.items()}
    params.update(bmc="127.0.0.1:8443", **given)
    return params


def _file(tmp_path, text):
    path = tmp_path / "bmc.env"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_module_password_with_user_name_from_the_environment(monkeypatch):
    """The reported bug: failed with CredentialsError 'no BMC password' before issue 24."""
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    client = client_from_params(_module_params(password="s3cret"))
    assert client._credentials.username == "root"
    assert client._credentials.password_value() == "s3cret"


def test_module_password_with_user_name_from_the_file(tmp_path):
    path = _file(tmp_path, "RACKSMITH_BMC_USERNAME=filer\n")
    client = client_from_params(_module_params(password="s3cret", credentials_file=str(path)))
    assert client._credentials.username == "filer"


@pytest.mark.parametrize(
    ("given", "environ", "in_file", "expected"),
    [
        # explicit wins over environment and file, per field
        (
            {"username": "u1", "password": "p1xx"},
            {"U": "u2", "P": "p2xx"},
            "U=u3\nP=p3xx\n",
            ("u1", "p1xx"),
        ),
        ({"password": "p1xx"}, {"U": "u2"}, "U=u3\nP=p3xx\n", ("u2", "p1xx")),
        ({"username": "u1"}, {}, "U=u3\nP=p3xx\n", ("u1", "p3xx")),
        ({}, {"P": "p2xx"}, "U=u3\nP=p3xx\n", ("u3", "p2xx")),
        ({}, {"U": "u2", "P": "p2xx"}, None, ("u2", "p2xx")),
    ],
)
def test_each_field_resolves_on_its_own(tmp_path, given, environ, in_file, expected):
    path = _file(tmp_path, in_file) if in_file else None
    found = credentials.bmc(
        **given, username_env="U", password_env="P", credentials_file=path, environ=environ
    )
    assert (found.username, found.password_value()) == expected


def test_every_surface_gives_the_same_answer(tmp_path, monkeypatch):
    """Module params, CLI options and MAAS power parameters: one resolver, one answer."""
    path = _file(tmp_path, "RACKSMITH_BMC_PASSWORD=from-file-pw\n")
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "envuser")
    module = client_from_params(_module_params(credentials_file=str(path)))._credentials

    parser = argparse.ArgumentParser()
    add_arguments(parser, options.CLI_CONNECTION)
    cli = credentials.bmc_from_params(vars(parser.parse_args(["--credentials-file", str(path)])))

    power_params = {name: spec.get("default") for name, spec in POWER_ARGS.items()}
    power_params.update(power_address="10.0.0.1", power_credentials_file=str(path))
    power = power_parameters(power_params)

    assert (module.username, module.password_value()) == ("envuser", "from-file-pw")
    assert (cli.username, cli.password_value()) == ("envuser", "from-file-pw")
    assert (power["power_user"], power["power_pass"]) == ("envuser", "from-file-pw")


def test_power_password_given_takes_the_user_name_from_the_environment(monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    params = {name: spec.get("default") for name, spec in POWER_ARGS.items()}
    params.update(power_address="10.0.0.1", power_pass="s3cret")
    assert power_parameters(params)["power_user"] == "root"


def test_missing_password_names_every_source_and_no_value(tmp_path):
    path = _file(tmp_path, "RACKSMITH_BMC_USERNAME=secret-user-name\n")
    with pytest.raises(credentials.CredentialsError) as err:
        credentials.bmc(credentials_file=path, environ={})
    message = str(err.value)
    assert "no BMC password" in message and "RACKSMITH_BMC_PASSWORD" in message
    assert str(path) in message and "secret-user-name" not in message


def test_the_file_is_read_only_when_a_field_is_missing(tmp_path):
    """An unneeded file is not opened: the environment has both values."""
    missing = tmp_path / "absent.env"
    found = credentials.bmc(
        credentials_file=missing,
        environ={"RACKSMITH_BMC_USERNAME": "root", "RACKSMITH_BMC_PASSWORD": "envpass"},
    )
    assert found.password_value() == "envpass"
    with pytest.raises(credentials.CredentialsError, match=str(missing)):
        credentials.bmc(credentials_file=missing, environ={"RACKSMITH_BMC_USERNAME": "root"})


def test_file_path_expands_variables(tmp_path, monkeypatch):
    _file(tmp_path, "RACKSMITH_BMC_USERNAME=root\nRACKSMITH_BMC_PASSWORD=filepass\n")
    monkeypatch.setenv("CREDS_DIR", str(tmp_path))
    found = credentials.bmc(credentials_file="${CREDS_DIR:-/nowhere}/bmc.env", environ={})
    assert found.password_value() == "filepass"


def test_maas_key_resolves_through_the_same_order(tmp_path):
    path = tmp_path / "maas.env"
    path.write_text("MAAS_URL=http://file:5240/MAAS/\nMAAS_API_KEY=aaaa:bbbb:cccc\n")
    path.chmod(0o600)
    creds = resolve_credentials(
        credentials_file=path, environ={"MAAS_URL": "http://env:5240/MAAS/"}
    )
    assert creds.url == "http://env:5240/MAAS/" and creds.key.token_secret == "cccc"
    with pytest.raises(MaasConfigError, match=f"MAAS_URL in {path}"):
        path.write_text("MAAS_URL=ftp://file/\nMAAS_API_KEY=aaaa:bbbb:cccc\n")
        resolve_credentials(credentials_file=path, environ={})


def test_client_options_from_module_params_and_text():
    """One ClientOptions.from_params: module params, and inventory options given as text."""
    params = _module_params(connect_timeout="2.5", retries="0", validate_certs=False)
    opts = ClientOptions.from_params(params)
    assert (opts.connect_timeout, opts.retries, opts.verify) == (2.5, 0, False)
    assert opts.read_timeout == options.READ_TIMEOUT.default
    with pytest.raises(ValueError, match="scheme"):
        ClientOptions.from_params({**params, "scheme": "ftp"})
