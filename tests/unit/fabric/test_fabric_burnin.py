"""The burn-in planner: every stage is a valid schedule (no link or HCA twice, minimal
routes), full coverage, the stage count against the lower bound, determinism, and the
commands, play and counter diff it emits."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from racksmith.fabric import burnin, counters, ibnetdiscover, triage
from racksmith.fabric.model import HCA
from racksmith.lab import fabricgen


def _assert_valid(topo, plan):
    level = plan.levels
    for pairs in plan.stages:
        assert max(Counter(i for p in pairs for i in p.links).values()) == 1  # no link shared
        assert max(Counter(g for p in pairs for g in (p.client, p.server)).values()) == 1
        for p in pairs:
            assert topo.nodes[p.client].kind == HCA and topo.nodes[p.server].kind == HCA
            cur, seen = p.client, [p.client]
            for i in p.links:  # a walk from client to server...
                link = topo.links[i]
                assert cur in (link.a.guid, link.b.guid)
                cur = link.b.guid if link.a.guid == cur else link.a.guid
                seen.append(cur)
            assert cur == p.server
            peak = max(level[g] for g in seen)  # ...up then down, turning once at the top
            assert len(p.links) == 2 * peak and level[p.top] == peak
            ups = [level[g] for g in seen]
            assert ups == list(range(peak + 1)) + list(range(peak - 1, -1, -1))


@pytest.mark.parametrize(
    ("hcas", "tiers", "radix", "per_host"),
    [(32, 2, 8, 4), (64, 3, 8, 4), (60, 3, 8, 4), (128, 3, 16, 8), (100, 2, 16, 4)],
)
def test_plans_are_valid_and_cover_every_link(hcas, tiers, radix, per_host):
    fabric = fabricgen.generate(hcas, tiers, seed=1, radix=radix, hcas_per_host=per_host)
    plan = burnin.plan(fabric.topology, seed=5)
    _assert_valid(fabric.topology, plan)
    assert plan.uncovered == [] and plan.coverage == 1.0
    assert plan.covered_hca == plan.hca_links == hcas
    assert (
        plan.lower_bound <= len(plan.stages) <= max(plan.lower_bound, int(1.2 * plan.lower_bound))
    )


def test_lower_bound_counts_uplinks_per_reachable_hca():
    # a 2-tier radix-8 tree with 5 HCAs on 4-rail hosts: the second unit's leaves each hold
    # one HCA and have four uplinks, so one stage cannot load them: the bound is 4
    fabric = fabricgen.generate(5, 2, seed=1, radix=8, hcas_per_host=4)
    plan = burnin.plan(fabric.topology, seed=1)
    assert plan.lower_bound == 4
    _assert_valid(fabric.topology, plan)


def test_full_tree_needs_one_stage():
    fabric = fabricgen.generate(64, 3, seed=3, radix=8, hcas_per_host=4)
    plan = burnin.plan(fabric.topology, seed=9)
    assert (plan.lower_bound, len(plan.stages)) == (1, 1)
    assert len(plan.stages[0]) == 32  # every HCA busy


def test_deterministic_under_a_seed():
    topo = fabricgen.generate(60, 3, seed=2, radix=8, hcas_per_host=4).topology

    def shape(p):
        return [[(x.client, x.server, tuple(x.links)) for x in s] for s in p.stages]

    assert shape(burnin.plan(topo, seed=4)) == shape(burnin.plan(topo, seed=4))
    assert shape(burnin.plan(topo, seed=4)) != shape(burnin.plan(topo, seed=5))


def test_links_no_minimal_route_can_load_are_listed():
    fabric = fabricgen.generate(64, 3, seed=1, radix=8, hcas_per_host=4)
    topo = fabric.topology
    spines = [n for n in topo.switches() if n.name.startswith("ib-spine")]
    from racksmith.fabric.model import Link, PortRef

    topo.add_link(Link(PortRef(spines[0].guid, 40), PortRef(spines[1].guid, 40), 4, "NDR"))
    plan = burnin.plan(topo, seed=1)
    assert len(plan.uncovered) == 1 and plan.coverage < 1.0
    _assert_valid(topo, plan)


def test_commands_scripts_and_play(tmp_path):
    fabric = fabricgen.generate(32, 2, seed=1, radix=8, hcas_per_host=4)
    topo = fabric.topology
    plan = burnin.plan(topo, seed=2)
    ends = burnin.endpoints(topo)
    cmds = burnin.stage_commands(plan.stages[0], ends, 1, duration=60)
    servers = [c for c in cmds if c.role == "server"]
    ports = Counter((c.host, c.argv[c.argv.index("-p") + 1]) for c in servers)
    assert max(ports.values()) == 1  # no TCP port twice on one host
    client = next(c for c in cmds if c.role == "client")
    assert client.argv[:2] == ["ib_write_bw", "-F"] and "--use_cuda=" in " ".join(client.argv)
    assert client.argv[-1].startswith("gpu")  # the server's host name
    for host in sorted({c.host for c in cmds}):
        script = tmp_path / f"{host}.sh"
        script.write_text(burnin.host_script(host, cmds, 1, 1, 2))
        subprocess.run(["bash", "-n", str(script)], check=True)
    assert "--use_cuda" not in " ".join(
        burnin.stage_commands(plan.stages[0], burnin.endpoints(topo, gdr=False), 1)[0].argv
    )
    play = burnin.play(1, [sorted({c.host for c in cmds})], 2)
    import yaml

    doc = yaml.safe_load(play)
    tasks = {t["name"]: t for t in doc[0]["tasks"]}
    start = tasks["Start burn-in stage 1 of 1"]
    assert start["async"] > 60 and start["poll"] == 0
    assert tasks["Wait for burn-in stage 1 of 1"]["ansible.builtin.async_status"]["jid"]
    copy = tasks["Copy this host's stage scripts"]["ansible.builtin.copy"]
    assert "{{ inventory_hostname }}.sh" in copy["src"]
    text = burnin.counters_script(topo)
    assert sum(line.startswith("perfquery ") for line in text.splitlines()) == sum(
        (topo.nodes[k.a.guid].kind != HCA) + (topo.nodes[k.b.guid].kind != HCA) for k in topo.links
    )


def test_counter_diff_feeds_the_triage(fixture_text):
    topo = ibnetdiscover.parse(fixture_text("small-ibnetdiscover.txt"))
    before = counters.parse(fixture_text("perfquery-before.txt"), "before")
    after = counters.parse(fixture_text("perfquery-after.txt"), "after")
    diff = counters.diff(before, after, topo, seconds=1800)
    assert diff.unreadable == ["ib-leaf-02/34: not read before the burn"]
    codes = sorted((e.code, e.location().name, e.location().port) for e in diff.events)
    # 2 symbol errors on leaf-01/33 stay under 400e9 * 1800 * 1e-14 = 7.2
    assert codes == [(110, "ib-leaf-01", 34), (112, "ib-leaf-01", 34), (113, "ib-leaf-02", 33)]
    result = triage.triage(diff.events, topo, burst_count=10**9)
    assert sorted(str(a.end) for a in result.isolate) == [
        "ib-leaf-01/34",
        "ib-leaf-02/33",
        "ib-spine-01/2",
        "ib-spine-01/3",
    ]
    with pytest.raises(Exception, match=r"bad:2: not perfquery output"):
        counters.parse("# Port counters: Lid 1 port 1 (CapMask: 0x0)\nhello world\n", "bad")
    reset = counters.parse(
        fixture_text("perfquery-before.txt").replace(
            "LinkDownedCounter:...............1", "LinkDownedCounter:...............9"
        ),
        "b2",
    )
    assert any("went from 9 to 1" in u for u in counters.diff(reset, after, topo, 1800).unreadable)


STUB = r"""#!/usr/bin/env bash
# stand-in for ib_write_bw: a server marks its port as listening and waits for its client;
# a client fails with perftest's "Couldn't connect" until its server listens
port=""; prev=""
for arg in "$@"; do [ "$prev" = "-p" ] && port="$arg"; prev="$arg"; done
last="${*: -1}"
case "$last" in
  node*)
    echo try >>"$STUB_DIR/tries-$last-$port"
    [ -e "$STUB_DIR/listen-$last-$port" ] || { echo "Couldn't connect to $last:$port"; exit 1; }
    touch "$STUB_DIR/done-$last-$port"
    [ -e "$STUB_DIR/fail-$last-$port" ] && { echo "bandwidth below limit"; exit 1; }
    echo "BW average 390 Gb/s"; exit 0 ;;
  *)
    touch "$STUB_DIR/listen-$STUB_HOST-$port"
    for _ in $(seq 1 100); do [ -e "$STUB_DIR/done-$STUB_HOST-$port" ] && exit 0; sleep 0.05; done
    exit 1 ;;
esac
"""


def _run_stage(tmp_path, fixture_path, fail: str | None = None) -> dict[str, int]:
    """Run every host's stage-1 script of the sample fabric here, with a stand-in
    ib_write_bw; the client hosts start first, so their clients must retry."""
    import os
    import time

    from racksmith.fabric import hosts as hosts_mod

    topo = ibnetdiscover.parse(fixture_path("small-ibnetdiscover.txt").read_text())
    owners = hosts_mod.load(fixture_path("small-hosts.json"))
    plan = burnin.plan(topo, seed=1)
    ends = burnin.endpoints(topo, owners)
    cmds = burnin.stage_commands(plan.stages[0], ends, 1, duration=5)
    stub_dir = tmp_path / "stub"
    (stub_dir / "bin").mkdir(parents=True)
    stub = stub_dir / "bin" / "ib_write_bw"
    stub.write_text(STUB)
    stub.chmod(0o755)
    if fail:
        (stub_dir / f"fail-{fail}").touch()
    order = sorted(
        {c.host for c in cmds},
        key=lambda h: not any(c.host == h and c.role == "client" for c in cmds),
    )
    procs = {}
    for host in order:
        script = tmp_path / f"{host}.sh"
        script.write_text(burnin.host_script(host, cmds, 1, 1, 1, duration=5))
        env = dict(
            os.environ,
            PATH=f"{stub_dir / 'bin'}:{os.environ['PATH']}",
            STUB_DIR=str(stub_dir),
            STUB_HOST=host,
            RACKSMITH_BURNIN_LOGS=str(tmp_path / "logs"),
            RACKSMITH_BURNIN_RETRY_SECONDS="0.2",
        )
        procs[host] = subprocess.Popen(["bash", str(script)], env=env)
        time.sleep(0.3)
    return {host: p.wait(timeout=60) for host, p in procs.items()}


def test_stage_scripts_run_and_retry_until_servers_listen(tmp_path, fixture_path):
    codes = _run_stage(tmp_path, fixture_path)
    assert set(codes.values()) == {0}, codes
    logs = sorted((tmp_path / "logs").glob("*-client.log"))
    assert len(logs) == 2 and all("390 Gb/s" in p.read_text() for p in logs)
    tries = [len(p.read_text().split()) for p in (tmp_path / "stub").glob("tries-*")]
    assert len(tries) == 2 and max(tries) > 1  # a client started before its server retried


def test_a_failed_test_fails_its_host(tmp_path, fixture_path):
    topo = ibnetdiscover.parse(fixture_path("small-ibnetdiscover.txt").read_text())
    first = burnin.plan(topo, seed=1).stages[0][0]
    from racksmith.fabric import hosts as hosts_mod

    ends = burnin.endpoints(topo, hosts_mod.load(fixture_path("small-hosts.json")))
    server = ends[first.server].host
    codes = _run_stage(tmp_path, fixture_path, fail=f"{server}-{burnin.BASE_PORT}")
    client = ends[first.client].host
    assert codes[client] == 1 and codes[server] == 0
