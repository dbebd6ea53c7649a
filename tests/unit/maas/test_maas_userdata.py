"""Deploy-phase user data rendered from data: hostile values survive the round trip."""

from __future__ import annotations

import json

import pytest
import yaml

from racksmith.maas.userdata import user_data

NASTY_KEYS = [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB ops: the on-call key",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC alice #laptop",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ \"quoted\" 'single' key",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID jürgen@rechenzentrum \u2013 ☃",
    "- ssh-ed25519 AAAA looks-like-a-list-item",
]


def _load(text: str) -> dict:
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


@pytest.mark.parametrize("key", NASTY_KEYS)
def test_each_nasty_key_comes_back_unchanged(key):
    doc = _load(user_data("h1", ssh_authorized_keys=[key]))
    assert doc["ssh_authorized_keys"] == [key]


def test_all_fields_round_trip():
    text = user_data(
        "l69f9f1",
        service_tag="69F9F1: #x",
        pxe_mac="02:5a:00:01:01:00",
        apt_proxy="http://192.168.250.1:3142",
        ssh_authorized_keys=NASTY_KEYS,
    )
    doc = _load(text)
    assert doc["apt"] == {
        "http_proxy": "http://192.168.250.1:3142",
        "https_proxy": "http://192.168.250.1:3142",
    }
    assert doc["ssh_authorized_keys"] == NASTY_KEYS
    (record_file,) = doc["write_files"]
    assert record_file["path"] == "/etc/racksmith/provisioned.json"
    assert json.loads(record_file["content"]) == {
        "hostname": "l69f9f1",
        "service_tag": "69F9F1: #x",
        "pxe_mac": "02:5a:00:01:01:00",
        "provisioned_by": "racksmith",
    }


def test_empty_inputs_leave_their_sections_out():
    doc = _load(user_data("h1", ssh_authorized_keys=["", "  "]))
    assert "apt" not in doc and "ssh_authorized_keys" not in doc


def test_site_extra_keys_merge_and_write_files_append():
    extra = {"write_files": [{"path": "/etc/site", "content": "a: b # c\n"}], "timezone": "UTC"}
    doc = _load(user_data("h1", extra=extra))
    assert [f["path"] for f in doc["write_files"]] == [
        "/etc/racksmith/provisioned.json",
        "/etc/site",
    ]
    assert doc["write_files"][1]["content"] == "a: b # c\n" and doc["timezone"] == "UTC"


def test_string_subclasses_from_ansible_are_rendered_as_plain_text():
    class Tagged(str):  # what Ansible hands a filter: str subclasses (unsafe/tagged values)
        pass

    doc = _load(user_data(Tagged("h1"), apt_proxy=Tagged("http://p:3142"),
                          ssh_authorized_keys=[Tagged("ssh-ed25519 AAAA k: v")]))  # fmt: skip
    assert doc["apt"]["http_proxy"] == "http://p:3142"
    assert doc["ssh_authorized_keys"] == ["ssh-ed25519 AAAA k: v"]
