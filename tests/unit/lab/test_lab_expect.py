"""racksmith lab check-run: the demo passes when each server ends as its faults say."""

from __future__ import annotations

import json

from racksmith.lab import expect, spec


def _report(rack, overrides=None):
    hosts = {}
    for server in rack.servers:
        want = expect.expected_result(server)
        name = expect.report_names(rack, server)[1 if want == "FAILED:discover" else 0]
        outcomes = [
            expect.FAULT_OUTCOMES[f] for f in sorted(server.faults) if f in expect.FAULT_OUTCOMES
        ]
        why = [o.reason or "why" for o in outcomes] or ["why"]
        hosts[name] = {"result": want, "reasons": [] if want == "GOLDEN" else why}
        causes = [o.cause for o in outcomes]
        if causes:
            hosts[name]["triage"] = {"cause": causes[0], "ticket": f"tickets/{name}.md"}
    for name, value in (overrides or {}).items():
        hosts[name] = value
    return {"hosts": hosts}


def test_expected_results_follow_faults():
    rack = spec.load()
    results = {s.name: expect.expected_result(s) for s in rack.servers}
    assert results["gpu01"] == "GOLDEN"
    assert results["gpu05"] == results["gpu10"] == "QUARANTINED"
    assert results["gpu06"] == results["gpu07"] == "FAILED:discover"
    server = spec.Server(1, "x", "m", "10.0.0.1", 1, frozenset({"deploy_fails", "bmc_slow"}))
    assert expect.expected_result(server) == "FAILED:discover"  # the earliest phase wins
    absorbed = spec.Server(1, "x", "m", "10.0.0.1", 1, frozenset({"maas_busy", "create_504"}))
    assert expect.expected_result(absorbed) == "GOLDEN"


def test_a_matching_report_passes():
    rack = spec.load()
    assert not [row for row in expect.check(rack, _report(rack)) if row[3]]


def test_a_faulty_server_reported_golden_or_silent_failure_or_absence_fails():
    rack = spec.load()
    healthy, faulty = rack.server("gpu01"), rack.server("gpu05")
    golden_bad = {faulty.service_tag.lower(): {"result": "GOLDEN", "reasons": []}}
    silent = {faulty.service_tag.lower(): {"result": "QUARANTINED", "reasons": []}}
    for overrides, problem in ((golden_bad, "expected QUARANTINED"), (silent, "no reason given")):
        rows = {r[0].name: r[3] for r in expect.check(rack, _report(rack, overrides))}
        assert rows["gpu05"] == problem
    report = _report(rack)
    del report["hosts"][healthy.service_tag.lower()]
    rows = {r[0].name: r[3] for r in expect.check(rack, report)}
    assert rows["gpu01"] == "not in the report, expected GOLDEN"


def test_cli_exit_code_follows_the_check(tmp_path, capsys):
    from racksmith import cli

    rack = spec.load()
    good, bad = tmp_path / "20260101-000000-1", tmp_path / "20260101-000000-2"
    good.mkdir()
    bad.mkdir()
    (good / "report.json").write_text(json.dumps(_report(rack)))
    (good / "tickets").mkdir()
    for name, entry in _report(rack)["hosts"].items():
        if "triage" in entry:
            (good / "tickets" / f"{name}.md").write_text("ticket")
    broken = {rack.server("gpu09").service_tag.lower(): {"result": "GOLDEN", "reasons": []}}
    (bad / "report.json").write_text(json.dumps(_report(rack, broken)))
    assert cli.main(["lab", "check-run", str(good)]) == 0
    assert cli.main(["lab", "check-run", "--runs-root", str(tmp_path)]) == 1  # latest = bad
    assert "WRONG: expected FAILED:enlist" in capsys.readouterr().out


def test_a_quarantine_for_the_wrong_reason_fails():
    """gpu10's BMC clock refuses to be set: quarantined for anything else is wrong."""
    rack = spec.load()
    server = rack.server("gpu10")
    assert server.faults == {"bmc_clock_locked"}
    clock = {"cause": "clock_skew", "ticket": "t.md"}
    wrong = {
        server.service_tag.lower(): {
            "result": "QUARANTINED", "reasons": ["expected 8 GPUs"], "triage": clock,
        }
    }  # fmt: skip
    rows = {r[0].name: r[3] for r in expect.check(rack, _report(rack, wrong))}
    assert rows["gpu10"] == "reason should mention 'BMC clock'"
    right = {
        server.service_tag.lower(): {
            "result": "QUARANTINED", "reasons": ["BMC clock: x"], "triage": clock,
        }
    }  # fmt: skip
    assert {r[0].name: r[3] for r in expect.check(rack, _report(rack, right))}["gpu10"] is None


def test_a_faulty_server_needs_its_cause_and_ticket(tmp_path):
    rack = spec.load()
    server = rack.server("gpu09")  # power_fails
    name = server.service_tag.lower()
    report = _report(rack)
    assert report["hosts"][name]["triage"]["cause"] == "power_control"
    rows = {r[0].name: r[3] for r in expect.check(rack, report, tmp_path)}
    assert rows["gpu09"] == f"no ticket file for cause power_control (tickets/{name}.md)"
    (tmp_path / "tickets").mkdir()
    (tmp_path / "tickets" / f"{name}.md").write_text("ticket")
    assert {r[0].name: r[3] for r in expect.check(rack, report, tmp_path)}["gpu09"] is None
    report["hosts"][name]["triage"]["cause"] = "unclassified"
    rows = {r[0].name: r[3] for r in expect.check(rack, report, tmp_path)}
    assert rows["gpu09"] == "cause 'unclassified', expected power_control"


LAB_FAULT_TEXT = (
    "Lab fault - LAB FAULT: test host gpu01 did not boot: LabError: systemd-nspawn exited "
    "during boot; console log: /var/lib/racksmith/lab/machines/gpu01/console.log"
)


def test_a_lab_fault_is_reported_as_the_labs_not_as_the_server_missing_golden(tmp_path, capsys):
    """gpu01 is healthy; its test host never booted. check-run must not say "expected
    GOLDEN" (that blames the server) but name the lab fault, and still fail the run."""
    from racksmith import cli

    rack = spec.load()
    name = rack.server("gpu01").service_tag.lower()
    triage = {"cause": "lab_fault", "ticket": f"tickets/{name}.md"}
    faulted = {name: {"result": "FAILED:deploy", "reasons": [LAB_FAULT_TEXT], "triage": triage}}
    rows = {r[0].name: r[3] for r in expect.check(rack, _report(rack, faulted))}
    assert rows["gpu01"] == LAB_FAULT_TEXT[LAB_FAULT_TEXT.index("LAB FAULT") :]
    assert rows["gpu02"] is None
    # Named only by the triage cause (the reason text lost): still the lab's.
    bare = {name: {"result": "FAILED:deploy", "reasons": ["x"], "triage": {"cause": "lab_fault"}}}
    assert expect.check(rack, _report(rack, bare))[0][3].startswith("LAB FAULT: triage cause")

    run = tmp_path / "20260101-000000-1"
    (run / "tickets").mkdir(parents=True)
    report = _report(rack, faulted)
    for host, entry in report["hosts"].items():
        if "triage" in entry:
            (run / "tickets" / f"{host}.md").write_text("ticket")
    (run / "report.json").write_text(json.dumps(report))
    assert cli.main(["lab", "check-run", str(run)]) == 1
    out = capsys.readouterr().out
    assert "expected GOLDEN" not in out and "WRONG" not in out
    assert f"LAB FAULT gpu01 ({name}), not the server's: LAB FAULT: test host gpu01" in out
    assert "1 server(s) not judged: the lab failed them (LAB FAULT)" in out
    assert "did not end as the rack file says" not in out


def test_the_demo_racks_old_firmware_and_bmc_log_servers_end_with_their_named_causes():
    """gpu11 runs a BIOS behind the lab baseline, gpu12's BMC logged a lost power supply: each
    must be QUARANTINED for exactly that, with its triage cause (issue 21)."""
    rack = spec.load()
    old, psu = rack.server("gpu11"), rack.server("gpu12")
    assert (old.faults, psu.faults) == ({"firmware_old"}, {"bmc_sel_psu"})
    assert expect.expected_result(old) == expect.expected_result(psu) == "QUARANTINED"
    drift = "firmware/BIOS drift from baseline: BIOS.Setup.1-1 1.7.5 -> 1.8.2 (upgrade, reboot)"
    log = "BMC health (psu_fault): Lclog 90001: Critical IDRAC.2.7.PSU0003 at x: lost"
    right = {
        old.service_tag.lower(): {
            "result": "QUARANTINED", "reasons": [drift],
            "triage": {"cause": "firmware_drift", "ticket": "t.md"},
        },
        psu.service_tag.lower(): {
            "result": "QUARANTINED", "reasons": [log],
            "triage": {"cause": "psu_fault", "ticket": "t.md"},
        },
    }  # fmt: skip
    rows = {r[0].name: r[3] for r in expect.check(rack, _report(rack, right))}
    assert (rows["gpu11"], rows["gpu12"]) == (None, None)
    swapped = {
        old.service_tag.lower(): {**right[old.service_tag.lower()], "reasons": [log]},
        psu.service_tag.lower(): {
            **right[psu.service_tag.lower()], "triage": {"cause": "thermal", "ticket": "t.md"},
        },
    }  # fmt: skip
    rows = {r[0].name: r[3] for r in expect.check(rack, _report(rack, swapped))}
    assert rows["gpu11"] == "reason should mention 'drift from baseline'"
    assert rows["gpu12"] == "cause 'thermal', expected psu_fault"
