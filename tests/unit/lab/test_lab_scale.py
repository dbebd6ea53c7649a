"""A lab of 64-284 servers: the address plan past one /24 (the first /24's blocks kept free),
veth names that stay unique, the kernel limits `lab up` raises (and says why), and the rack
generator (deterministic fault mix across BMC, MAAS and hardware)."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys

import pytest

from racksmith.lab import generate, hosts, limits, net
from racksmith.lab.errors import LabError
from racksmith.lab.spec import FAULT_KINDS, KNOWN_FAULTS, SpecError, load


def rack_file(tmp_path, servers: int, **kw):
    plan = generate.RackPlan(servers=servers, **kw)
    path = tmp_path / f"rack{servers}.yml"
    path.write_text(generate.render(plan))
    return load(path)


# -- address plan -------------------------------------------------------------------------------


def test_128_servers_leave_the_first_24s_blocks_free_and_get_unique_addresses(tmp_path):
    rack = rack_file(tmp_path, 128, prefix="192.168.250")
    ips = [ipaddress.IPv4Address(s.ip) for s in rack.servers]
    assert len(set(ips)) == 128
    assert rack.prefixlen == 23 and str(rack.network) == "192.168.250.0/23"
    assert all(ip in rack.network and ip != rack.network.broadcast_address for ip in ips)
    lower = ipaddress.IPv4Network("192.168.250.0/24")
    in_lower = sorted(int(str(ip).rsplit(".", 1)[1]) for ip in ips if ip in lower)
    assert in_lower == list(range(20, 50))  # servers 1..30: exactly as always
    assert rack.server("gpu031").ip == "192.168.251.1"
    assert rack.server("gpu128").ip == "192.168.251.98"
    ports = [s.bmc_port for s in rack.servers]
    assert len(set(ports)) == 128 and max(ports) == 9443 + 127
    macs = [s.pxe_mac for s in rack.servers]
    assert len(set(macs)) == 128


def test_a_rack_of_30_or_fewer_keeps_its_24(tmp_path):
    assert load().prefixlen == 24  # the demo rack
    rack = rack_file(tmp_path, 30, prefix="192.168.247")
    assert rack.prefixlen == 24 and str(rack.network) == "192.168.247.0/24"
    big = rack_file(tmp_path, 31, prefix="192.168.247")  # odd prefix: the /23 is 246-247
    assert str(big.network) == "192.168.246.0/23" and big.server("gpu31").ip == "192.168.246.1"


def test_bad_indexes_and_ports_are_named(tmp_path):
    path = tmp_path / "rack.yml"
    head = (
        "network: {bridge: rslab7, prefix: 192.168.247}\nbmc: {base_port: 9443}\n"
        "maas: {listen: '127.0.0.1:5247'}\nservers:\n"
    )
    path.write_text(head + "  - {index: 285, name: a, model: hgx-h200-8gpu}\n")
    with pytest.raises(SpecError, match=r"servers\[0\]\.index 285 is outside 1\.\.284"):
        load(path)
    path.write_text(head + "  - {index: 3, name: a, model: m}\n  - {index: 3, name: b, model: m}\n")
    with pytest.raises(SpecError, match=r"servers\[1\]\.index 3 is used twice"):
        load(path)
    path.write_text(head.replace("9443", "65400") + "  - {index: 1, name: a, model: m}\n")
    with pytest.raises(SpecError, match="base_port 65400"):
        load(path)


def test_veth_names_stay_unique_and_short_on_a_23(tmp_path):
    rack = rack_file(tmp_path, 284, prefix="192.168.250", bridge="rslab-big-lab15")
    veths = [hosts.rack_host(rack, s).veth for s in rack.servers]
    assert len(set(veths)) == 284 and max(map(len, veths)) <= 15
    # on a /24 the name is what it always was
    assert net.veth_name("rslab0", "192.168.250.20") == "rslab0-20"
    assert net.veth_name("rslab0", "192.168.251.20", 23) == "rslab0-276"


def test_hosts_get_the_racks_prefix_length_and_molecule_hosts_stay_off_servers(tmp_path):
    rack = rack_file(tmp_path, 64, prefix="192.168.247", bridge="rslab7")
    assert hosts.rack_host(rack, rack.servers[40]).prefixlen == 23
    hosts.check_free_standing(rack, "mol1", "192.168.247.55")
    with pytest.raises(LabError, match="clashes with rack server gpu31"):
        hosts.check_free_standing(rack, "mol1", "192.168.246.1")
    with pytest.raises(LabError, match="not a host address"):
        hosts.check_free_standing(rack, "mol1", "192.168.247.1")  # the controller


def test_stale_bridge_address_of_another_prefix_length_is_found():
    shown = json.dumps(
        [
            {
                "ifname": "rslab7",
                "addr_info": [
                    {"local": "192.168.247.1", "prefixlen": 24},
                    {"local": "192.168.247.1", "prefixlen": 23},
                    {"local": "fe80::1", "prefixlen": 64},
                ],
            }
        ]
    )
    assert net.stale_addresses(shown, "192.168.247.1", 23) == ["192.168.247.1/24"]
    assert net.stale_addresses("not json", "192.168.247.1", 23) == []


# -- kernel limits --------------------------------------------------------------------------------


class FakeSysctl:
    def __init__(self, values: dict[str, int], readonly: tuple[str, ...] = ()):
        self.values = dict(values)
        self.readonly = readonly

    def read(self, path: str) -> str:
        if path not in self.values:
            raise FileNotFoundError(path)
        return f"{self.values[path]}\n"

    def write(self, path: str, value: int) -> None:
        if path in self.readonly:
            raise PermissionError(13, "Read-only file system")
        self.values[path] = value


LOW = {
    "fs/inotify/max_user_instances": 128,
    "fs/inotify/max_user_watches": 8192,
    "kernel/pid_max": 32768,
    "kernel/threads-max": 10**6,
    "fs/file-max": 10**7,
}


def test_lab_up_raises_what_is_low_and_says_why():
    fake, said = FakeSysctl(LOW), []
    found = limits.ensure(64, read=fake.read, write=fake.write, say=said.append, rlimits=False)
    need = {f.limit: f.need for f in found}
    assert need["fs.inotify.max_user_instances"] >= 1024  # 80 hosts x the per-host share
    assert fake.values["fs/inotify/max_user_instances"] == need["fs.inotify.max_user_instances"]
    assert fake.values["kernel/threads-max"] == 10**6  # never lowered
    assert fake.values["fs/file-max"] == 10**7
    text = "\n".join(said)
    assert "raised fs.inotify.max_user_instances from 128 to" in text
    assert "Too many open files" in text  # the reason, not just the number
    assert len(said) == 3  # instances, watches, pid_max
    again = []
    limits.ensure(64, read=fake.read, write=fake.write, say=again.append, rlimits=False)
    assert again == []


def test_limits_that_cannot_be_raised_or_read_fail_naming_the_sysctl():
    fake = FakeSysctl(
        {k: v for k, v in LOW.items() if k != "kernel/pid_max"},
        readonly=("fs/inotify/max_user_instances",),
    )
    with pytest.raises(LabError) as exc:
        limits.ensure(64, read=fake.read, write=fake.write, say=lambda _: None, rlimits=False)
    text = str(exc.value)
    assert "fs.inotify.max_user_instances is 128 and cannot be raised" in text
    assert "kernel.pid_max is unreadable" in text
    assert "sysctl -w fs.inotify.max_user_instances=" in text and "kernel.pid_max=" in text
    assert "max_user_watches=" not in text  # that one was raised


# -- the generator --------------------------------------------------------------------------------


def test_generated_racks_are_deterministic_and_mix_fault_kinds(tmp_path):
    plan = generate.RackPlan(servers=64, faulty=generate.parse_faults("10%", 64), seed=7)
    assert plan.faulty == 6
    assert generate.render(plan) == generate.render(plan)
    faults = generate.plan_faults(plan)
    assert len(faults) == 6
    assert (
        sorted(FAULT_KINDS[f] for f in faults.values())
        == ["bmc"] * 2 + ["hardware"] * 2 + ["maas"] * 2
    )
    other = generate.plan_faults(generate.RackPlan(servers=64, faulty=6, seed=8))
    assert other != faults
    rack = rack_file(tmp_path, 64, faulty=6, seed=7)
    assert {s.index: next(iter(s.faults)) for s in rack.servers if s.faults} == faults
    only = generate.plan_faults(
        generate.RackPlan(servers=40, faulty=10, seed=1, kinds=("maas",), exclude={"create_504"})
    )
    assert {FAULT_KINDS[f] for f in only.values()} == {"maas"}
    assert "create_504" not in only.values()


def test_every_known_fault_has_a_kind_and_percentages_round_sensibly():
    assert set(FAULT_KINDS) == set(KNOWN_FAULTS)
    assert set(FAULT_KINDS.values()) == set(generate.KINDS)
    assert generate.parse_faults("10%", 64) == 6
    assert generate.parse_faults("1%", 30) == 1  # above 0%: at least one
    assert generate.parse_faults("0%", 30) == 0
    assert generate.parse_faults("5", 30) == 5
    with pytest.raises(ValueError, match="neither a percentage"):
        generate.parse_faults("lots", 30)
    with pytest.raises(ValueError, match="31 faulty of 30"):
        generate.RackPlan(servers=30, faulty=31)


def test_cli_prints_a_loadable_rack_and_exits_2_on_bad_input(tmp_path):
    def cli(*argv):
        return subprocess.run(
            [sys.executable, "-m", "racksmith", "lab", "rack", *argv],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    done = cli("--servers", "128", "--faults", "10%", "--seed", "3")
    assert done.returncode == 0, done.stderr
    (tmp_path / "r.yml").write_text(done.stdout)
    rack = load(tmp_path / "r.yml")
    assert len(rack.servers) == 128 and sum(1 for s in rack.servers if s.faults) == 13
    assert done.stdout.startswith("# Generated by: racksmith lab rack --servers 128 --faults 13")
    bad = cli("--servers", "8", "--model", "no-such-model")
    assert bad.returncode == 2 and "no-such-model" in bad.stderr and bad.stdout == ""
    assert cli("--servers", "8", "--prefix", "10.1").returncode == 2
