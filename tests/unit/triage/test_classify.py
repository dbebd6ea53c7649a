"""Triage: each failure the demo rack injects, and each health failure, gets its named cause,
its action and the evidence behind it; a failure no rule knows is 'unclassified', never lost."""

from __future__ import annotations

import pytest

from racksmith.triage.causes import CAUSES, Action
from racksmith.triage.classify import HostEvidence, Line, classify, evidence_from_report

# The demo's own reasons, word for word (README, `make demo`).
DEMO = {
    "bmc-127.0.0.1-8448": (
        {"failed_phase": "discover", "failure_reason": "BMC 127.0.0.1:8448: POST "
         "/redfish/v1/SessionService/Sessions: cannot connect ([Errno 111] Connection refused)"},
        "bmc_unreachable",
    ),
    "bmc-127.0.0.1-8449": (
        {"failed_phase": "discover",
         "failure_reason": "BMC 127.0.0.1:8449: login: HTTP 401 (credentials rejected)"},
        "bmc_auth",
    ),
    "l1affb8": (
        {"failed_phase": "discover", "quarantine_reason": "expected 8 GPUs, BMC reports 7 "
         "(Video.Slot.1-1, Video.Slot.2-1, Video.Slot.3-1, Video.Slot.4-1, Video.Slot.5-1, "
         "Video.Slot.6-1, Video.Slot.7-1)"},
        "gpu_missing",
    ),
    "l64e177": (
        {"failed_phase": "enlist", "failure_reason": "l64e177: commissioning failed: "
         "commissioning reverted to New without a failure status: Failed to query node's BMC - "
         "(admin) - Aborting COMMISSIONING and reverting to NEW. Unable to power control the "
         "node. Please check power credentials."},
        "power_control",
    ),
    "lf87123": (
        {"failed_phase": "deploy", "failure_reason": "Node installation failure - 'curtin' "
         "curtin command install: grub-install: error: efibootmgr failed to register the boot "
         "entry: No space left on device."},
        "deploy_failed",
    ),
}


@pytest.mark.parametrize("host", sorted(DEMO))
def test_demo_failures_get_their_cause(host):
    facts, want = DEMO[host]
    d = classify(evidence_from_report(host, {"result": "FAILED:x", **facts}))
    assert d.cause.name == want
    assert d.evidence, "a cause comes with the evidence behind it"
    assert d.cause.action in Action


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("quick: FAIL pcie [GPU 3 (00000000:9A:00.0)]: link x4 (expected x16)", "pcie_degraded"),
        ("quick: FAIL gpu_count: 7 GPUs, profile expects 8", "gpu_missing"),
        ("quick: FAIL xid [GPU 1]: Xid 79 (GPU has fallen off the bus)", "health_gpu_errors"),
        ("quick: FAIL ecc [GPU 0]: 2 uncorrectable volatile errors", "health_gpu_errors"),
        ("quick: FAIL clock_events [GPU 0]: HW thermal slowdown", "thermal"),
        ("quick: FAIL clock_sync: offset 4.2 s", "clock_skew"),
        ("quick: FAIL nvlink_state [GPU 2]: link 5 inactive", "health_links"),
        ("quick: FAIL ib_ports [mlx5_3]: port 1 Down", "health_links"),
        ("quick: FAIL cpu_governor: 12 cores on powersave", "health_software"),
        ("quick: UNKNOWN nvidia_smi: nvidia-smi timed out after 30 s", "health_undecided"),
        ("load: FAIL smoke: MFU 21.0 % below 40 %", "health_load"),
        ("quick checks: no report (host unreachable or the agent did not run)",
         "health_undecided"),
    ],
)
def test_health_lines_are_named_by_their_check(line, want):
    d = classify(HostEvidence("h1", "NOT_FIT", "validate", (Line("health", line),)))
    assert d.cause.name == want


@pytest.mark.parametrize(
    ("phase", "text", "want"),
    [
        ("discover", "BMC clock: off by 7260 s (not corrected)", "clock_skew"),
        ("discover", "unexpected GPU model(s) NVIDIA H100, expected NVIDIA H200",
         "gpu_model"),
        ("discover", "BMC health rollup is Critical", "hardware_critical"),
        ("discover", "PSU2 reports a power supply failure (input lost)", "psu_fault"),
        ("enlist", "no block device matches the boot-disk rule (candidates: sda)", "disk_fault"),
        ("deploy", "h1: deploy failed: MAAS timed the machine out: Deploying for 30 min",
         "boot_failure"),
        ("deploy", "deployed, but unreachable: ssh: connect timed out", "host_unreachable"),
        ("deploy", "h1: deploy failed: MAAS timed the machine out: Node operation 'deploying' "
         "timed out after 30 minutes.", "boot_failure"),
        ("deploy", "h1: deploy failed: still Deploying after 45 min (client budget); last "
         "event: PXE Request", "boot_failure"),
        ("configure", "configure: role base: apt update failed", "configure_failed"),
        ("enlist", "commissioning failed: 50-maas-01 exited 1", "commissioning_failed"),
        ("discover", "BMC 10.0.0.9:443: answered without Systems", "bmc_error"),
        ("discover", "expected 8 NICs, BMC reports 6", "nic_missing"),
        ("discover", "no hardware expectation for model PowerEdge R760 (set it)", "site_config"),
        ("discover", "BMC clock off by +7260 s and not corrected (refused)", "clock_skew"),
        ("discover", "BMC clock could not be checked or set: no reading returned", "clock_skew"),
        ("discover", "the BMC's GPU list is unusable (str): cannot triage", "bmc_error"),
    ],
)
def test_reasons_from_every_phase(phase, text, want):
    ev = evidence_from_report("h1", {"result": f"FAILED:{phase}", "failed_phase": phase,
                                     "failure_reason": text})
    assert classify(ev).cause.name == want


def test_redfish_error_kind_names_the_bmc_cause_even_with_a_vague_message():
    ev = evidence_from_report("h1", {"result": "FAILED:discover", "failed_phase": "discover",
                                     "failure_reason": "BMC 10.0.0.9:443: gave up",
                                     "facts": {"error_kind": "timeout"}})
    d = classify(ev)
    assert d.cause.name == "bmc_unreachable"
    assert Line("redfish", "error_kind=timeout") in d.evidence


def test_several_problems_give_one_primary_cause_and_list_the_others():
    ev = evidence_from_report("h1", {
        "result": "QUARANTINED", "failed_phase": "discover",
        "quarantine_reason": "BMC health rollup is Critical; expected 8 GPUs, BMC reports 6 (a)",
    })
    d = classify(ev)
    assert d.cause.name == "gpu_missing"  # hardware-specific before the generic rollup
    assert [c.name for c in d.others] == ["hardware_critical"]
    assert [line.text for line in d.evidence] == ["expected 8 GPUs, BMC reports 6 (a)"]
    assert len(d.all_evidence) == 2


def test_unknown_failure_is_unclassified_with_all_its_evidence():
    ev = evidence_from_report("h1", {"result": "FAILED:frobnicate",
                                     "failed_phase": "frobnicate",
                                     "failure_reason": "the flux capacitor hummed"})
    d = classify(ev)
    assert d.cause.name == "unclassified" and d.cause.action is Action.INVESTIGATE
    assert d.evidence == (Line("frobnicate", "the flux capacitor hummed"),)


def test_incomplete_host_is_not_silently_dropped():
    d = classify(evidence_from_report("h1", {"result": "INCOMPLETE"}))
    assert d.cause.name == "unclassified"
    assert "no phase recorded a verdict" in d.evidence[0].text


def test_maas_triage_is_evidence():
    ev = evidence_from_report("h1", {
        "result": "FAILED:deploy", "failed_phase": "deploy", "failure_reason": "deploy failed",
        "maas": {"cause": "MAAS timed the machine out: PXE boot never requested",
                 "events": ["ERROR Node failed to boot"], "log_tail": ["curtin: done"]},
    })
    d = classify(ev)
    assert d.cause.name == "boot_failure"
    assert {line.source for line in d.all_evidence} >= {"maas", "maas event", "install log"}


def test_every_cause_has_an_action_and_advice():
    for c in CAUSES.values():
        assert c.title and c.advice and isinstance(c.action, Action), c.name


def test_a_successful_pxe_event_is_not_a_boot_failure():
    """The demo's curtin failure arrives with MAAS's event history, which includes
    "INFO: PXE Request - installation": a boot that went fine, not evidence of a boot failure."""
    ev = evidence_from_report("lf87123", {
        "result": "FAILED:deploy", "failed_phase": "deploy",
        "failure_reason": DEMO["lf87123"][0]["failure_reason"],
        "maas": {"events": [
            "Tue, 01 Dec. 2026 00:07:57 ERROR: Node installation failure - 'curtin' curtin "
            "command install: grub-install: error: efibootmgr failed to register the boot entry",
            "Tue, 01 Dec. 2026 00:07:48 INFO: PXE Request - installation",
        ]},
    })  # fmt: skip
    assert classify(ev).cause.name == "deploy_failed"
    failed_pxe = evidence_from_report("h2", {
        "result": "FAILED:deploy", "failed_phase": "deploy", "failure_reason": "deploy failed",
        "maas": {"events": ["Tue, 01 Dec. 2026 00:07:48 ERROR: PXE boot timed out"]},
    })  # fmt: skip
    assert classify(failed_pxe).cause.name == "boot_failure"


def test_a_test_host_that_never_booted_is_a_lab_fault_not_the_servers():
    """The simulator's lab-fault text also says "did not boot" (a boot_failure pattern) and
    arrives as a failed deploy: the lab fault outranks both, so no server is blamed."""
    cause_text = (
        "Lab fault - LAB FAULT: test host gpu03 did not boot: LabError: systemd-nspawn exited "
        "during boot; console log: /lab/machines/gpu03/console.log: Failed to create control "
        "group inotify object: Too many open files"
    )
    ev = evidence_from_report("l5ab003", {
        "result": "FAILED:deploy", "failed_phase": "deploy", "failure_reason": cause_text,
        "maas": {"cause": cause_text, "events": [
            "Tue, 01 Dec. 2026 00:07:57 ERROR: Lab fault - LAB FAULT: test host gpu03 did not "
            "boot: LabError: systemd-nspawn exited during boot; console log: /lab/x.log",
        ]},
    })  # fmt: skip
    d = classify(ev)
    assert d.cause.name == "lab_fault"
    assert d.cause.action is Action.RETRY
    assert all("LAB FAULT" in line.text for line in d.evidence)
    # The same words without the lab's marker would have blamed the server's boot.
    unmarked = cause_text.replace("Lab fault - LAB FAULT: ", "")
    ev2 = evidence_from_report("l5ab003", {"result": "FAILED:deploy", "failed_phase": "deploy",
                                           "failure_reason": unmarked})  # fmt: skip
    assert classify(ev2).cause.name == "boot_failure"


@pytest.mark.parametrize(
    ("reason", "want", "action"),
    [
        # the demo rack's gpu12 (fault bmc_sel_psu), as the discover phase words it
        ("BMC health (psu_fault): Lclog 90001: Critical IDRAC.2.7.PSU0003 at "
         "2026-12-02T00:14:29-05:00: The power input for power supply 2 is lost.",
         "psu_fault", Action.RMA),
        ("BMC health (thermal): fans: pinned (Fan1A 100%) while the hottest sensor reads 31 C",
         "thermal", Action.DATACENTER),
        ("BMC health (hardware_critical): chassis: Health Critical (/redfish/v1/Chassis/1)",
         "hardware_critical", Action.RMA),
        # "timed out" would read as an unreachable BMC; the named cause is the one judged
        ("BMC health (bmc_error): UNKNOWN: could not read /redfish/v1/Managers/1/LogServices: "
         "timed out", "bmc_error", Action.RETRY),
        # the demo rack's gpu11 (fault firmware_old)
        ("firmware/BIOS drift from baseline: BIOS.Setup.1-1 1.7.5 -> 1.8.2 (upgrade, reboot)",
         "firmware_drift", Action.FIRMWARE),
    ],
)  # fmt: skip
def test_bmc_health_and_firmware_drift_quarantines_get_their_named_cause(reason, want, action):
    d = classify(
        evidence_from_report(
            "h", {"result": "QUARANTINED", "failed_phase": "discover", "quarantine_reason": reason}
        )
    )
    assert (d.cause.name, d.cause.action) == (want, action)
    assert [line.text for line in d.evidence] == [reason]


def test_several_bmc_health_findings_are_each_evidence_and_the_most_specific_leads():
    reason = (
        "BMC health (thermal): CPU 1 Temp: reads 200 C, outside -20..150 C: a broken sensor; "
        "BMC health (psu_fault): PSU.Slot.2: Health Critical"
    )
    d = classify(evidence_from_report("h", {"result": "QUARANTINED", "quarantine_reason": reason}))
    assert d.cause.name == "psu_fault"  # hardware named before thermal in the causes table
    assert [c.name for c in d.others] == ["thermal"]
