"""racksmith.secrets: credentials by reference, files 0600 from birth, one redaction."""

from __future__ import annotations

import stat

import pytest

from racksmith import secrets
from racksmith.secrets import MASK, SecretError, read_env_file, redact, remember, write_secret


def test_redact_masks_remembered_env_and_credential_shaped_text(monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "s3cr3t-pw")
    monkeypatch.setenv("MAAS_API_KEY", "consumerAAA:tokenBBBBBB:secretCCCCCC")
    remember("remembered-value-42")
    text = (
        "login s3cr3t-pw failed; https://root:calvin@10.0.0.1/redfish; "
        'headers {"X-Auth-Token": "abc123"} Authorization: Basic cm9vdDpjYWx2aW4= '
        'oauth_token="tokenBBBBBB" sig secretCCCCCC and remembered-value-42'
    )
    out = redact(text)
    for secret in (
        "s3cr3t-pw", "calvin", "abc123", "cm9vdDpjYWx2aW4=", "tokenBBBBBB", "secretCCCCCC",
        "remembered-value-42",
    ):
        assert secret not in out, secret
    assert out.count(MASK) >= 6
    assert "10.0.0.1/redfish" in out  # what is not secret stays readable


def test_whole_maas_key_is_masked_before_its_parts():
    out = redact("key=aaaaaaa:bbbbbbb:ccccccc", environ={"MAAS_API_KEY": "aaaaaaa:bbbbbbb:ccccccc"})
    assert out == f"key={MASK}"


def test_read_env_file_parses_quotes_export_and_comments(tmp_path):
    path = tmp_path / "bmc.env"
    path.write_text("# lab\nexport A='x y'\nB=\"z\"\n\nC=plain\n")
    assert read_env_file(path) == {"A": "x y", "B": "z", "C": "plain"}


@pytest.mark.parametrize("line", ["no equals sign", "1BAD=x", "=x"])
def test_read_env_file_names_file_and_line_never_value(tmp_path, line):
    path = tmp_path / "maas.env"
    path.write_text(f"OK=hidden-value\n{line}\n")
    with pytest.raises(SecretError, match=rf"{path}:2: expected KEY=VALUE") as err:
        read_env_file(path)
    assert "hidden-value" not in str(err.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(SecretError, match="cannot read credentials file"):
        read_env_file(tmp_path / "absent.env")


def test_write_secret_is_private_and_atomic(tmp_path):
    path = tmp_path / "secrets" / "key"
    write_secret(path, "first")
    write_secret(path, b"second")
    assert path.read_bytes() == b"second"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not list(path.parent.glob("*.tmp"))


def test_expand_path_handles_defaults(monkeypatch):
    monkeypatch.delenv("RS_TEST_UNSET", raising=False)
    monkeypatch.setenv("RS_TEST_SET", "/a")
    assert str(secrets.expand_path("${RS_TEST_UNSET:-/d}/x")) == "/d/x"
    assert str(secrets.expand_path("${RS_TEST_SET:-/d}/x")) == "/a/x"


def test_too_short_values_are_not_remembered_so_words_stay_readable():
    remember("tok")
    assert redact("token for nobody") == "token for nobody"
