"""Pure parts: the boot-disk rule, wait options, failure classification, MAAS JSON parsing."""

from __future__ import annotations

import pytest

from racksmith.maas.errors import BootDiskError, MaasConfigError
from racksmith.maas.lifecycle import WaitPolicy
from racksmith.maas.model import BlockDevice, Event, Machine, NodeStatus
from racksmith.maas.storage import BootDiskRule, parse_size
from racksmith.maas.triage import classify, log_error_lines


def disk(i, model, serial, size, id_path=None, type_="physical"):
    return BlockDevice(
        id=i,
        name=f"d{i}",
        path="",
        id_path=id_path or f"/dev/disk/by-id/x-{serial}",
        model=model,
        serial=serial,
        size=size,
        type=type_,
        tags=(),
        partitions=0,
        used_for="",
    )


DISKS = [
    disk(7, "Dell Ent NVMe CM6 RI 3.84TB", "S6B", 3_840_755_982_336),
    disk(8, "DELLBOSS VD", "5d4c", 480_103_981_056, "/dev/disk/by-id/ata-DELLBOSS_VD_5d4c"),
    disk(9, "Dell Ent NVMe CM6 RI 3.84TB", "S6A", 3_840_755_982_336),
    disk(10, "DELLBOSS VD", "vvvv", 480_103_981_056, type_="virtual"),
]


@pytest.mark.parametrize(
    "rule",
    [
        {"model": "DELLBOSS*"},
        {"serial": "5d4c"},
        {"id_path": "*ata-DELLBOSS*"},
        {"size": "480G"},
        {"max_size": "1T"},
        {"model": "DELLBOSS VD", "min_size": "400GB"},
    ],
)
def test_rule_picks_the_boss_volume_by_any_stable_identity(rule):
    assert BootDiskRule.from_dict(rule).pick(DISKS).id == 8


def test_rule_refuses_to_guess():
    with pytest.raises(BootDiskError, match="2 disks match") as exc:
        BootDiskRule.from_dict({"min_size": "1T"}).pick(DISKS, where="gpu01")
    assert "gpu01" in str(exc.value) and "S6A" in str(exc.value)
    assert (
        BootDiskRule.from_dict({"min_size": "1T", "tie_break": "serial"}).pick(DISKS).serial
        == "S6A"
    )
    with pytest.raises(BootDiskError, match="no disk matches"):
        BootDiskRule.from_dict({"model": "Samsung*"}).pick(DISKS)


@pytest.mark.parametrize(
    "bad,match",
    [
        ({}, "empty"),
        ({"modle": "x"}, "unknown key"),
        ({"size": "big"}, "not a size"),
        ({"size": "1T", "min_size": "1G"}, "not both"),
        ({"model": "x", "tie_break": "random"}, "tie_break"),
    ],
)
def test_rule_input_errors_name_the_field(bad, match):
    with pytest.raises(MaasConfigError, match=match):
        BootDiskRule.from_dict(bad)


def test_sizes():
    assert parse_size("480G", field="size") == 480 * 10**9
    assert parse_size("447GiB", field="size") == 447 * 2**30
    assert parse_size("3.84TB", field="size") == 3_840_000_000_000
    assert parse_size(1024, field="size") == 1024


def test_wait_policy_options():
    policy = WaitPolicy.build(poll_interval=4, budget_minutes={"deploying": 90})
    assert policy.poll_interval == (3.0, 5.0)
    assert policy.budget(NodeStatus.DEPLOYING) == 5400
    assert policy.budget(NodeStatus.COMMISSIONING) == 45 * 60
    assert all(3.0 <= policy.next_poll() <= 5.0 for _ in range(50))
    with pytest.raises(MaasConfigError, match="no wait budget"):
        WaitPolicy.build(budget_minutes={"deployed": 1})


def ev(i, level, type_, desc=""):
    return Event(id=i, level=level, created="", type=type_, description=desc)


def test_classify_prefers_the_most_specific_evidence():
    revert = [
        ev(3, "INFO", "Node changed status", "From 'Commissioning' to 'New'"),
        ev(
            2,
            "ERROR",
            "Failed to query node's BMC",
            "(admin) - Aborting COMMISSIONING and reverting to NEW. Unable to power control",
        ),
    ]
    cause = classify("commissioning", NodeStatus.NEW, revert, reverted_to=NodeStatus.NEW)
    assert cause.startswith("commissioning reverted to New") and "Aborting COMMISSIONING" in cause
    silent = classify("commissioning", NodeStatus.NEW, [], reverted_to=NodeStatus.NEW)
    assert "no event explains it" in silent
    timeout = [
        ev(
            5,
            "ERROR",
            "Node operation timed out",
            "Node operation 'Deploying' timed out after 30 minutes.",
        )
    ]
    assert "timed out after 30 minutes" in classify("deploy", NodeStatus.FAILED_DEPLOYMENT, timeout)
    log = "start: curthooks\ngrub-install: error: disk `hd0,gpt1' not found.\nfinish: FAIL\n"
    install = [ev(9, "ERROR", "Node installation failure", "'curtin' curtin command install")]
    cause = classify("deploy", NodeStatus.FAILED_DEPLOYMENT, install, log_text=log)
    assert cause == (
        "Node installation failure - 'curtin' curtin command install: "
        "grub-install: error: disk `hd0,gpt1' not found."
    )
    assert log_error_lines(log + "Command failed.\n") == [
        "grub-install: error: disk `hd0,gpt1' not found.",
        "Command failed.",
    ]
    echoed = [
        ev(
            9,
            "ERROR",
            "Node installation failure",
            "'curtin' curtin command install: grub-install: error: disk `hd0,gpt1' not found.",
        )
    ]
    assert classify("deploy", NodeStatus.FAILED_DEPLOYMENT, echoed, log_text=log) == echoed[0].text
    bare = classify("deploy", NodeStatus.FAILED_DEPLOYMENT, [], error_description="")
    assert "recorded no error event" in bare


def test_machine_json_parsing_keeps_what_racksmith_needs():
    data = {
        "system_id": "abc123",
        "hostname": "l7k2x9q",
        "status": 6,
        "status_name": "Deployed",
        "interface_set": [
            {"mac_address": "02:5A:00:01:01:00"},
            {"mac_address": "02:5a:00:01:02:00"},
        ],
        "boot_interface": {"mac_address": "02:5a:00:01:01:00"},
        "ip_addresses": ["10.0.0.5"],
        "tag_names": ["h200"],
        "pool": {"name": "gpu"},
        "zone": {"name": "rack-a"},
        "boot_disk": {
            "id": 4,
            "model": "DELLBOSS VD",
            "serial": "s",
            "size": 1,
            "partitions": [{}],
        },
    }
    m = Machine.from_json(data)
    assert m.status is NodeStatus.DEPLOYED and m.macs[0] == "02:5a:00:01:01:00"
    assert (m.pool, m.zone, m.boot_disk.partitions) == ("gpu", "rack-a", 1)
    assert m.summary()["boot_disk"]["model"] == "DELLBOSS VD"
    assert NodeStatus.RELEASING_FAILED.display == "Releasing failed"
    assert NodeStatus.FAILED_DEPLOYMENT.filter_name == "failed_deployment"
