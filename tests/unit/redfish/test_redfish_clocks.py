"""Every BMC clock of a rack from one process (racksmith.redfish.clocks, the library of
racksmith.core.redfish_clock_fleet; issue 25): each server's result as the single-host module
reports it, its failures its own, check mode sending nothing, the BMCs read concurrently."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from racksmith.redfish import clocks
from racksmith.redfish.client import RedfishClient

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def four(rack, server):
    """An on-time BMC, one 3 h ahead, one ahead that refuses DateTime PATCHes, one that is
    ahead but only checked in check mode."""
    return rack(
        [
            server(1),
            server(2, faults=("bmc_clock_skew",)),
            server(3, faults=("bmc_clock_locked",)),
            server(4, faults=("bmc_clock_skew",)),
        ]
    )


def bmcs(lab, *names):
    return {name: f"127.0.0.1:{lab.bmc(name).port}" for name in names}


def reach(lab_dir, ca_bundle, **extra):
    """An inventory's redfish_connection: references only (an empty value is left out)."""
    return {
        "scheme": "https",
        "ca_bundle": ca_bundle,
        "credentials_file": str(lab_dir / "secrets" / "bmc.env"),
        "username_env": "",
        "password_env": None,
        **extra,
    }


def test_each_server_gets_its_own_result_and_its_own_failure(four, lab_dir, ca_bundle):
    names = ("gpu01", "gpu02", "gpu03")
    targets = {**bmcs(four, *names), "dead09": "127.0.0.1:1", "pw10": "127.0.0.1:2"}
    conn = {n: reach(lab_dir, ca_bundle) for n in (*names, "dead09")}
    conn["pw10"] = reach(lab_dir, ca_bundle, password="hunter2")
    got = clocks.check_all(targets, conn, max_skew=5, correct=True)
    assert list(got) == [*names, "dead09", "pw10"]  # the order asked
    ok, fixed, locked, dead, pw = (got[n] for n in got)
    assert (ok["failed"], ok["changed"], ok["skewed"]) == (False, False, False)
    assert "within 5s" in ok["msg"] and abs(ok["skew_seconds"]) <= 5
    assert fixed["changed"] and not fixed["skewed"] and abs(fixed["skew_seconds"]) <= 5
    assert fixed["before"]["skew_seconds"] > 3 * 3600 and "clock corrected" in fixed["msg"]
    assert four.bmc("gpu02").stats["clock_set"] == 1
    assert locked["failed"] and "HTTP 400" in locked["msg"] and "NTP" in locked["msg"]
    assert locked["error_kind"] == "unsupported"
    assert dead["failed"] and dead["error_kind"] == "unreachable"
    assert pw["failed"] and "pass credentials by reference" in pw["msg"]
    assert "hunter2" not in repr(got)
    assert clocks.count(got) == {"within": 1, "corrected": 1, "skewed": 0, "failed": 3}


def test_a_result_is_what_the_single_host_module_reports(
    four, lab_dir, ca_bundle, creds, client_options
):
    got = clocks.check_all(bmcs(four, "gpu04"), {"gpu04": reach(lab_dir, ca_bundle)}, max_skew=5)
    with RedfishClient(four.target("gpu04"), creds, client_options) as c:
        alone = clocks.clock_outcome(c, max_skew=5, correct=False, check_mode=False)
    batch = got["gpu04"]
    assert set(batch) == {"failed", "bmc", "msg", *alone.as_dict()} - {"message"}
    assert batch["skewed"] and not batch["changed"] and alone.details["skewed"]
    # the same words (the skew itself may tick by a second between the two reads)
    for msg in (batch["msg"], alone.message):
        assert re.fullmatch(r"skew \+118[12]\ds exceeds 5s \(not corrected\)", msg), msg


def test_check_mode_reads_every_clock_and_sends_nothing(four, lab_dir, ca_bundle):
    targets = bmcs(four, "gpu02", "gpu04")
    conn = {n: reach(lab_dir, ca_bundle) for n in targets}
    got = clocks.check_all(targets, conn, max_skew=5, correct=True, check_mode=True)
    for name in targets:
        assert got[name]["changed"] and got[name]["diff"]["after"]["skew_seconds"] == 0.0
        assert got[name]["diff"]["before"]["skew_seconds"] > 3 * 3600
        assert four.bmc(name).stats["clock_set"] == 0


def test_the_bmcs_are_read_concurrently_in_one_process(four, lab_dir, ca_bundle):
    threads: set[str] = set()
    inside = threading.Barrier(3, timeout=20)  # three reads in flight at the same moment

    def one(name, params, *rest):
        threads.add(threading.current_thread().name)
        inside.wait()
        return {"failed": False, "changed": False, "msg": name}

    targets = bmcs(four, "gpu01", "gpu02", "gpu03")
    clocks.check_all(targets, {}, concurrency=3, one=one)
    assert len(threads) == 3


def test_bad_input_is_named():
    with pytest.raises(clocks.ClockInputError, match="servers without a BMC: ghost"):
        clocks.check_all({"a": "127.0.0.1:1"}, {"ghost": {}})
    got = clocks.check_all({"a": "", "b": "127.0.0.1:1"}, {"b": {"colour": "red"}})
    assert "a: no BMC address" in got["a"]["msg"]
    assert "b: unknown connection setting(s) colour" in got["b"]["msg"]
    with pytest.raises(clocks.ClockInputError, match="concurrency"):
        clocks.check_all({}, concurrency=0)


def test_the_module_reports_every_server_and_a_diff_per_change(four, lab_dir, ca_bundle, tmp_path):
    """racksmith.core.redfish_clock_fleet run as Ansible runs a module (one process, its JSON
    arguments), in check mode and for real; a wrong input fails the task, named."""
    root = tmp_path / "collections"
    (root / "ansible_collections" / "racksmith").mkdir(parents=True)
    (root / "ansible_collections" / "racksmith" / "core").symlink_to(REPO)

    def run(check: bool, **args):
        path = tmp_path / "args.json"
        args = {**args, "_ansible_check_mode": check, "_ansible_diff": True}
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env["PYTHONPATH"] = str(root)
        module = REPO / "plugins" / "modules" / "redfish_clock_fleet.py"
        done = subprocess.run(
            [sys.executable, str(module), str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        return done.returncode, json.loads(done.stdout)

    targets = bmcs(four, "gpu01", "gpu02", "gpu03")
    conn = {n: reach(lab_dir, ca_bundle) for n in targets}
    rc, dry = run(True, bmcs=targets, connections=conn, correct=True)
    assert rc == 0 and dry["changed"] and four.bmc("gpu02").stats["clock_set"] == 0
    assert dry["counts"] == {"within": 1, "corrected": 2, "skewed": 0, "failed": 0}
    assert [d["before_header"] for d in dry["diff"]] == ["gpu02", "gpu03"]
    rc, done = run(False, bmcs=targets, connections=conn, correct=True)
    assert rc == 0 and done["counts"] == {"within": 1, "corrected": 1, "skewed": 0, "failed": 1}
    assert done["hosts"]["gpu03"]["failed"] and "HTTP 400" in done["hosts"]["gpu03"]["msg"]
    assert four.bmc("gpu02").stats["clock_set"] == 1
    rc, bad = run(False, bmcs=targets, connections={"ghost": {}})
    assert rc == 1 and bad["failed"] and "servers without a BMC: ghost" in bad["msg"]
    rc, bad = run(False, bmcs=targets, bmc="127.0.0.1:1")
    assert rc == 1 and "bmc is not used here" in bad["msg"]
    # the module's own connection options are every server's defaults (module_defaults)
    shared = {"ca_bundle": ca_bundle, "credentials_file": str(lab_dir / "secrets" / "bmc.env")}
    rc, done = run(False, bmcs=bmcs(four, "gpu01"), **shared)
    assert rc == 0 and done["counts"]["within"] == 1, done
