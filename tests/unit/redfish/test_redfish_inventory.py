"""The inventory plugin as Ansible runs it: ``ansible-inventory`` against emulated iDRACs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_BIN = Path(sys.executable).parent


def _ansible_env(tmp_path: Path, lab_dir: Path, **extra: str) -> dict[str, str]:
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(
        "[defaults]\n"
        f"inventory_plugins = {REPO / 'plugins' / 'inventory'}\n"
        "[inventory]\nenable_plugins = racksmith.core.redfish\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "RACKSMITH_BMC_"))}
    env.update(
        {
            "ANSIBLE_CONFIG": str(cfg),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
            "HOME": str(tmp_path),
        }
    )
    env.update(extra)
    return env


def _inventory(tmp_path: Path, lab, lab_dir: Path, **options) -> Path:
    config = {
        "plugin": "racksmith.core.redfish",
        "targets": [str(t) for t in lab.targets()],
        "credentials_file": str(lab_dir / "secrets" / "bmc.env"),
        "ca_bundle": str(lab_dir / "ca" / "ca.pem"),
        "connect_timeout": 2,
        "read_timeout": 2,
        "deadline": 4,
        **options,
    }
    path = tmp_path / "redfish.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ANSIBLE_BIN / args[0]), *args[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _unsafe_as_plain(obj: dict):
    """ansible-inventory --list writes untrusted strings as {"__ansible_unsafe": value}."""
    return obj["__ansible_unsafe"] if set(obj) == {"__ansible_unsafe"} else obj


def _list(path: Path, env: dict[str, str]) -> dict:
    done = _run(["ansible-inventory", "-i", str(path), "--list"], env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout, object_hook=_unsafe_as_plain)


def test_groups_facts_and_reasons(rack, server, lab_dir, tmp_path):
    lab = rack(
        [
            server(1),
            server(4, model="r750-h100pcie"),
            server(6, faults=("bmc_unreachable",)),
            server(7, faults=("bmc_auth_failed",)),
            server(8, faults=("bmc_malformed",)),
            server(9, faults=("bmc_hang",)),
        ]
    )
    path = _inventory(
        tmp_path,
        lab,
        lab_dir,
        keyed_groups=[
            {
                "key": "redfish_model | default('', true) | lower | regex_replace('[^a-z0-9]+', "
                "'_')",
                "prefix": "model",
            }
        ],
        compose={"gpu_count": "redfish_gpus | length"},
        groups={"eight_gpus": "redfish_gpus | length == 8"},
    )
    inv = _list(path, _ansible_env(tmp_path, lab_dir))
    hostvars = inv["_meta"]["hostvars"]
    s1 = lab.bmc("gpu01").server
    tag1 = s1.service_tag.lower()
    assert set(inv["bmc_ok"]["hosts"]) == {tag1, lab.bmc("gpu04").server.service_tag.lower()}
    v = hostvars[tag1]
    assert v["redfish_pxe_mac"] == s1.pxe_mac and v["redfish_bmc"] == str(lab.target("gpu01"))
    assert v["redfish_error"] is None and v["gpu_count"] == 8 and len(v["redfish_gpus"]) == 8
    assert {"id", "model", "serial", "firmware"} == set(v["redfish_gpus"][0])
    for key in (
        "service_tag",
        "serial",
        "model",
        "manufacturer",
        "uuid",
        "power_state",
        "health",
        "bios_version",
        "bmc_firmware",
        "nics",
        "pxe_rule",
    ):
        assert f"redfish_{key}" in v
    assert v["redfish_connection"]["ca_bundle"] == str(lab_dir / "ca" / "ca.pem")
    assert tag1 in inv["model_poweredge_xe9680"]["hosts"] and tag1 in inv["eight_gpus"]["hosts"]

    def only(group: str) -> dict:
        (host,) = inv[group]["hosts"]
        return hostvars[host]

    assert "Connection refused" in only("bmc_unreachable")["redfish_error"]
    assert "401" in only("bmc_auth_failed")["redfish_error"]
    assert only("bmc_malformed")["redfish_error_kind"] == "malformed"
    assert only("bmc_timeout")["redfish_error_kind"] == "timeout"
    assert inv["bmc_unreachable"]["hosts"][0] == f"bmc-127.0.0.1-{lab.bmc('gpu06').port}"


def test_duplicates_get_distinct_hosts_in_bmc_duplicate(rack, server, lab_dir, tmp_path):
    lab = rack([server(3, name="a"), server(3, name="b")])
    inv = _list(_inventory(tmp_path, lab, lab_dir), _ansible_env(tmp_path, lab_dir))
    hosts = inv["bmc_duplicate"]["hosts"]
    assert len(hosts) == 2
    assert not inv.get("bmc_ok", {}).get("hosts")  # neither of them goes on
    tag = lab.bmc("a").server.service_tag.lower()
    assert all(h.startswith(tag + "-127-0-0-1-") for h in hosts)
    assert all("duplicate identity" in inv["_meta"]["hostvars"][h]["redfish_error"] for h in hosts)


def test_cache_is_used_and_never_holds_a_secret(rack, server, lab_dir, tmp_path, creds):
    lab = rack([server(1), server(7, faults=("bmc_auth_failed",))])
    cache_dir = tmp_path / "cache"
    path = _inventory(
        tmp_path,
        lab,
        lab_dir,
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(cache_dir),
        cache_timeout=600,
    )
    env = _ansible_env(tmp_path, lab_dir)
    first = _list(path, env)
    lab.farm.stop()  # every BMC gone: only the cache can answer now
    second = _list(path, env)
    assert first["_meta"] == second["_meta"]
    files = list(cache_dir.rglob("*"))
    cached = [f.read_text() for f in files if f.is_file()]
    assert cached and lab.bmc("gpu01").server.service_tag in "".join(cached)  # the facts are there
    assert all(creds.password_value() not in text for text in cached)
    assert first["bmc_auth_failed"]["hosts"]


def test_plain_text_password_is_refused(rack, server, lab_dir, tmp_path):
    lab = rack([server(1)])
    path = _inventory(tmp_path, lab, lab_dir, password="hunter2-plain")
    env = _ansible_env(tmp_path, lab_dir, ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    done = _run(["ansible-inventory", "-i", str(path), "--list"], env)
    assert done.returncode != 0 and "plain text" in done.stderr
    assert "hunter2-plain" not in done.stderr + done.stdout


def test_vault_encrypted_password_is_accepted(rack, server, lab_dir, tmp_path, creds):
    lab = rack([server(1)])
    vault_pass = tmp_path / "vault-pass"
    vault_pass.write_text("correct horse battery staple\n")
    env = _ansible_env(tmp_path, lab_dir, ANSIBLE_VAULT_PASSWORD_FILE=str(vault_pass))
    encrypted = _run(
        ["ansible-vault", "encrypt_string", creds.password_value(), "--name", "password"], env
    )
    assert encrypted.returncode == 0, encrypted.stderr
    path = _inventory(tmp_path, lab, lab_dir, username="root")
    config = path.read_text().replace(f"credentials_file: {lab_dir / 'secrets' / 'bmc.env'}\n", "")
    path.write_text(config + encrypted.stdout)
    inv = _list(path, env)
    assert inv["bmc_ok"]["hosts"] == [lab.bmc("gpu01").server.service_tag.lower()]


def test_missing_credentials_name_the_variable(rack, server, lab_dir, tmp_path):
    lab = rack([server(1)])
    path = _inventory(tmp_path, lab, lab_dir)
    path.write_text(
        path.read_text().replace(f"credentials_file: {lab_dir / 'secrets' / 'bmc.env'}\n", "")
    )
    done = _run(
        ["ansible-inventory", "-i", str(path), "--list"],
        _ansible_env(tmp_path, lab_dir, ANSIBLE_INVENTORY_UNPARSED_FAILED="true"),
    )
    assert done.returncode != 0 and "RACKSMITH_BMC_USERNAME" in done.stderr
