"""The enlist/deploy batches built once from every host's variables (racksmith.maas.entries,
filter racksmith.core.maas_fleet_batch), and each host's outcome as its one task result
(action racksmith.core.maas_outcome)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from racksmith.maas.entries import fleet_batch
from racksmith.maas.userdata import user_data
from racksmith.testing.plugins import load_plugin

host_outcome = load_plugin("plugins/action/maas_outcome.py").host_outcome

DISK = {"model": "DELLBOSS*"}
ROLE_DEFAULTS = {"racksmith_ssh_authorized_keys": [], "racksmith_maas_user_data_extra": {}}


def server(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "redfish_pxe_mac": f"aa:bb:cc:00:00:0{n}",
        "redfish_bmc": f"10.1.0.{n}",
        "redfish_service_tag": f"TAG{n}",
        "racksmith_maas_boot_disk": DISK,
        **extra,
    }


class Lazy(Mapping[str, Any]):
    """Like Ansible's hostvars[h]: values computed on access; records which were read."""

    def __init__(self, data: dict[str, Any]):
        self.data, self.read = data, set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_enlist_batch_keeps_the_order_and_the_credentials_variables():
    hostvars = {
        "h2": server(2, redfish_connection={"username_env": "BMC_U", "password_env": "BMC_P"}),
        "h1": server(1),
    }
    batch = fleet_batch(["h2", "h1"], hostvars, "enlist")
    assert batch.problems == {}
    assert [e["name"] for e in batch.entries] == ["h2", "h1"]
    assert batch.entries[0] == {
        "name": "h2",
        "pxe_mac": "aa:bb:cc:00:00:02",
        "power_address": "10.1.0.2",
        "power_user_env": "BMC_U",
        "power_pass_env": "BMC_P",
        "power_credentials_file": "",
    }
    assert batch.entries[1]["power_user_env"] == ""  # '': the module's default


@pytest.mark.parametrize(
    "broken",
    [
        {"redfish_pxe_mac": ""},
        {"redfish_pxe_mac": None},
        {"redfish_bmc": ""},
        {"racksmith_maas_boot_disk": "DELLBOSS*"},
        {"racksmith_maas_boot_disk": None},
    ],
)
def test_a_host_without_an_enlist_input_is_left_out_with_the_assert_wording(broken):
    hostvars = {"ok": server(1), "bad": server(2, **broken)}
    batch = fleet_batch(["ok", "bad"], hostvars, "enlist")
    assert [e["name"] for e in batch.entries] == ["ok"]
    assert batch.problems == {
        "bad": "bad: enlisting needs redfish_pxe_mac and redfish_bmc (Redfish inventory) and "
        'racksmith_maas_boot_disk (e.g. {model: "DELLBOSS*"}) in group_vars'
    }


def test_a_missing_variable_counts_like_an_empty_one():
    data = server(1)
    del data["redfish_bmc"]
    batch = fleet_batch(["h1"], {"h1": data}, "enlist")
    assert batch.entries == [] and "enlisting needs" in batch.problems["h1"]


def test_a_host_without_variables_is_a_problem_not_a_crash():
    batch = fleet_batch(["ghost"], {}, "deploy", ROLE_DEFAULTS)
    assert batch.problems == {"ghost": "ghost: no host variables"}


def test_deploy_user_data_is_what_cloud_config_renders_from_the_hosts_own_variables():
    keys = ["ssh-ed25519 AAAA ops: on-call #1"]
    hostvars = {
        "h1": server(1, base_apt_proxy="http://cache:3142", racksmith_ssh_authorized_keys=keys),
        "h2": server(2, racksmith_maas_user_data_extra={"timezone": "UTC"}),
    }
    batch = fleet_batch(["h1", "h2"], hostvars, "deploy", ROLE_DEFAULTS)
    assert batch.problems == {}
    first, second = batch.entries
    assert first == {
        "name": "h1",
        "pxe_mac": "aa:bb:cc:00:00:01",
        "user_data": user_data(
            "h1",
            service_tag="TAG1",
            pxe_mac="aa:bb:cc:00:00:01",
            apt_proxy="http://cache:3142",
            ssh_authorized_keys=keys,
            extra={},
        ),
    }
    # per-host group_vars apply: h2 has no keys of h1's, and its own extra keys
    doc = yaml.safe_load(second["user_data"])
    assert "ssh_authorized_keys" not in doc or doc["ssh_authorized_keys"] == []
    assert doc["timezone"] == "UTC"


def test_a_knob_the_host_lacks_takes_the_role_default_not_another_hosts_value():
    keys = ["ssh-ed25519 AAAA site"]
    hostvars = {"h1": server(1, racksmith_ssh_authorized_keys=["ssh-ed25519 BBBB h1-only"])}
    hostvars["h2"] = server(2)
    defaults = {**ROLE_DEFAULTS, "racksmith_ssh_authorized_keys": keys}
    batch = fleet_batch(["h1", "h2"], hostvars, "deploy", defaults)
    docs = [yaml.safe_load(e["user_data"]) for e in batch.entries]
    assert docs[0]["ssh_authorized_keys"] == ["ssh-ed25519 BBBB h1-only"]
    assert docs[1]["ssh_authorized_keys"] == keys


def test_whole_user_data_given_is_used_as_is():
    hostvars = {"h1": server(1, racksmith_maas_user_data="#cloud-config\n{}\n")}
    batch = fleet_batch(["h1"], hostvars, "deploy", ROLE_DEFAULTS)
    assert batch.entries[0]["user_data"] == "#cloud-config\n{}\n"


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        ({"redfish_pxe_mac": ""}, "deploying needs redfish_pxe_mac"),
        ({"racksmith_ssh_authorized_keys": "ssh-ed25519 AAAA"}, "must be a list"),
        ({"racksmith_maas_user_data_extra": ["x"]}, "must be a mapping"),
    ],
)
def test_a_host_that_cannot_be_deployed_is_left_out_with_its_problem(broken, words):
    hostvars = {"ok": server(1), "bad": server(2, **broken)}
    batch = fleet_batch(["ok", "bad"], hostvars, "deploy", ROLE_DEFAULTS)
    assert [e["name"] for e in batch.entries] == ["ok"]
    assert batch.problems["bad"].startswith("bad: ") and words in batch.problems["bad"]


def test_only_the_variables_an_entry_needs_are_read():
    """hostvars template each value on access: the rest (a probe's output...) stays untouched."""
    lazy = Lazy(server(1, racksmith_health_verdict="golden", redfish_gpus=[1, 2]))
    fleet_batch(["h1"], {"h1": lazy}, "enlist")
    assert "racksmith_health_verdict" not in lazy.read and "redfish_gpus" not in lazy.read


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of enlist, deploy"):
        fleet_batch(["h1"], {"h1": server(1)}, "reprovision")


def test_outcome_of_an_unchanged_host_says_nothing_to_do_in_one_line():
    outcome = host_outcome({"failed": False, "changed": False, "actions": [], "msg": ""})
    assert outcome == {"msg": "nothing to do"}


def test_outcome_of_a_changed_host_lists_its_actions():
    result = {"failed": False, "changed": True, "actions": ["created", "commissioned"]}
    assert host_outcome(result) == {"msg": "created; commissioned", "changed": True}


def test_outcome_of_a_failed_host_is_maas_cause_with_its_triage():
    triage = {"cause": "curtin: no space", "status_name": "Failed deployment", "events": []}
    result = {"failed": True, "changed": False, "msg": "deploy failed", "cause": "curtin: no space"}
    out = host_outcome({**result, "triage": triage})
    assert out == {"msg": "curtin: no space", "failed": True, "triage": triage}
    # no cause named: MAAS's message
    assert host_outcome({**result, "cause": None}) == {"msg": "deploy failed", "failed": True}


def test_outcome_of_a_host_left_out_is_its_problem():
    out = host_outcome(None, "h1: enlisting needs\n  redfish_pxe_mac")
    assert out == {"msg": "h1: enlisting needs redfish_pxe_mac", "failed": True}


def test_outcome_without_result_or_problem_fails_closed():
    out = host_outcome(None)
    assert out["failed"] is True and "no result" in out["msg"]
