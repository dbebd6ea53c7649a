"""What each role skipped on each host, and why: the announcement (``racksmith_skip``, returned
by the action ``racksmith.core.role_skip``), the report model, and its text, JSON, HTML and
Prometheus forms. The callback end of it runs for real in
tests/integration/report/test_role_skips.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.report.html import render_html
from racksmith.report.model import SKIP_KEY, WHOLE_ROLE, RunReport, Skip, skips_of
from racksmith.report.prom import render_prom
from racksmith.report.publish import load_run, publish
from racksmith.testing.plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]

NO_GPU = "no NVIDIA GPU on the PCI bus (set dcgm_without_gpu to install anyway)"
NO_NVSWITCH = "no NVSwitch on the PCI bus"
NO_RDMA = "no RDMA NIC (Mellanox/NVIDIA networking) on the PCI bus"


def _report() -> RunReport:
    """Seven GPU hosts without NVSwitches, two of them also without RDMA NICs, one CPU host
    that skipped everything GPU, and one host that skipped nothing."""
    report = RunReport(run_id="r1", run_dir="/tmp/r1", started="2026-12-01T00:00:00Z")
    for i in range(1, 8):
        name = f"gpu{i}"
        report.record(name, "configure", "ok")
        report.skip(name, Skip("nvidia_driver", "fabricmanager", NO_NVSWITCH))
        if i in (3, 5):
            report.skip(name, Skip("gdr", WHOLE_ROLE, NO_RDMA))
    report.record("cpu1", "configure", "ok")
    for role in ("nvidia_driver", "dcgm"):
        report.skip("cpu1", Skip(role, WHOLE_ROLE, NO_GPU))
    report.record("full1", "configure", "changed")
    return report


# -- the announcement ------------------------------------------------------------------------


def test_a_skip_is_read_from_the_result_key_and_folded_to_one_line():
    result = {"msg": "gdr skipped", SKIP_KEY: {"role": "gdr", "reason": "  no RDMA\n NIC  "}}
    assert skips_of(result) == [Skip("gdr", WHOLE_ROLE, "no RDMA NIC")]
    assert skips_of({"msg": "gdr skipped: no RDMA NIC"}) == []  # text is never scraped
    assert Skip("gdr", "all", "x").what == "gdr"
    assert Skip("nvidia_driver", "fabricmanager", "x").what == "nvidia_driver/fabricmanager"


def test_each_loop_item_that_ran_announces_its_own_skip():
    result = {
        "results": [
            {SKIP_KEY: {"role": "a", "part": "p1", "reason": "r1"}},
            {"skipped": True, SKIP_KEY: {"role": "a", "part": "p2", "reason": "r2"}},
            {"msg": "not a skip"},
        ]
    }
    assert skips_of(result) == [Skip("a", "p1", "r1")]


@pytest.mark.parametrize(
    ("announced", "message"),
    [
        ("gdr skipped", "expected a mapping"),
        ({"role": "gdr"}, "'reason' is missing or empty"),
        ({"role": "gdr", "reason": "   "}, "'reason' is missing or empty"),
        ({"role": "gdr", "part": "", "reason": "x"}, "'part' is missing or empty"),
        ({"reason": "x"}, "'role' is missing or empty"),
        ({"role": ["gdr"], "reason": "x"}, "'role' is missing or empty"),
    ],
)
def test_a_malformed_announcement_is_an_error_naming_what_is_wrong(announced, message):
    with pytest.raises(ValueError, match=message):
        skips_of({SKIP_KEY: announced})


def test_the_action_plugin_and_the_report_agree_on_the_key():
    module = load_plugin("plugins/action/role_skip.py")
    assert (module.SKIP_KEY, module.WHOLE_ROLE) == (SKIP_KEY, WHOLE_ROLE)


def test_a_secret_in_a_reason_is_redacted(monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "Skip-secret-9xQ")
    [skip] = skips_of({SKIP_KEY: {"role": "r", "reason": "login Skip-secret-9xQ refused"}})
    assert "Skip-secret-9xQ" not in skip.reason and skip.reason.startswith("login ")


# -- the model -------------------------------------------------------------------------------


def test_the_same_role_and_part_announced_again_replaces_the_first():
    report = RunReport(run_id="r", run_dir="/tmp/r", started="")
    report.skip("h", Skip("gdr", "all", "no RDMA NIC"))
    report.skip("h", Skip("zfs_pool", "all", "no spare disk"))
    report.skip("h", Skip("gdr", "all", "no GPU"))
    assert report.hosts["h"].skips == [
        Skip("gdr", "all", "no GPU"),
        Skip("zfs_pool", "all", "no spare disk"),
    ]


def test_skips_are_grouped_by_role_part_and_reason_with_their_hosts():
    groups = [(s.what, s.reason, hosts) for s, hosts in _report().skipped()]
    assert groups == [
        ("dcgm", NO_GPU, ["cpu1"]),
        ("gdr", NO_RDMA, ["gpu3", "gpu5"]),
        ("nvidia_driver", NO_GPU, ["cpu1"]),
        ("nvidia_driver/fabricmanager", NO_NVSWITCH, [f"gpu{i}" for i in range(1, 8)]),
    ]


def test_text_summarises_skips_by_reason_and_per_host_on_request():
    report = _report()
    text = report.render_text()
    lines = text.splitlines()
    start = lines.index("skipped by role (did not apply; why):")
    assert lines[start + 1 :] == [
        f"  dcgm (1 host): {NO_GPU}  [cpu1]",
        f"  gdr (2 hosts): {NO_RDMA}  [gpu3, gpu5]",
        f"  nvidia_driver (1 host): {NO_GPU}  [cpu1]",
        f"  nvidia_driver/fabricmanager (7 hosts): {NO_NVSWITCH}  "
        "[gpu1, gpu2, gpu3, gpu4, gpu5, +2 more]",
    ]
    assert "full1:" not in text  # a host that skipped nothing shows nothing
    per_host = report.render_text(skips_per_host=True)
    assert per_host.startswith(text)
    assert f"  gpu3: gdr: {NO_RDMA}" in per_host.splitlines()
    assert f"  cpu1: dcgm: {NO_GPU}" in per_host.splitlines()
    assert not [line for line in per_host.splitlines() if line.startswith("  full1:")]


def test_without_skips_the_text_has_no_skip_section():
    report = RunReport(run_id="r", run_dir="/tmp/r", started="")
    report.record("h", "configure", "ok")
    assert "skipped" not in report.render_text(skips_per_host=True)


def test_json_lists_each_hosts_skips_and_reads_them_back():
    report = _report()
    data = json.loads(report.to_json())
    assert data["hosts"]["gpu3"]["skips"] == [
        {"role": "nvidia_driver", "part": "fabricmanager", "reason": NO_NVSWITCH},
        {"role": "gdr", "part": "all", "reason": NO_RDMA},
    ]
    assert data["hosts"]["full1"]["skips"] == []
    again = RunReport.from_dict(data)
    assert {n: r.skips for n, r in again.hosts.items()} == {
        n: r.skips for n, r in report.hosts.items()
    }
    del data["hosts"]["gpu3"]["skips"]  # a report written before skips were recorded
    assert RunReport.from_dict(data).hosts["gpu3"].skips == []
    data["hosts"]["gpu5"]["skips"] = [{"role": "gdr"}]
    with pytest.raises(ValueError, match="'reason' is missing"):
        RunReport.from_dict(data)


# -- HTML and Prometheus ---------------------------------------------------------------------


def test_html_has_a_skip_column_filter_and_summary():
    report = _report()
    report.skip("gpu1", Skip("zfs_pool", "all", "<script>alert(1)</script> no disks"))
    page = render_html(report)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    row = next(line for line in page.splitlines() if "<td>gpu3</td>" in line)
    assert 'data-skips="|nvidia_driver/fabricmanager|gdr|"' in row
    # folded: the reason is written once, in the summary; the row links there by name
    assert f'title="{NO_RDMA}">gdr</a>' in row and f"<td>{NO_RDMA}</td>" not in row
    assert page.count(f"<td>{NO_RDMA}</td>") == 1
    full = next(line for line in page.splitlines() if "<td>full1</td>" in line)
    assert "data-skips" not in full and full.endswith('<td class="reason"></td></tr>')
    assert '<option value="nvidia_driver/fabricmanager">nvidia_driver/fabricmanager (7)' in page
    assert '<option value="gdr">gdr (2)</option>' in page
    assert re.search(
        r'<tr id="skip-\d+" data-set="skip" data-value="gdr" style="cursor:pointer"><td>2</td>',
        page,
    )


def test_html_without_skips_has_no_skip_summary():
    report = RunReport(run_id="r", run_dir="/tmp/r", started="")
    report.record("h", "configure", "ok")
    page = render_html(report)
    assert "Skipped by role" not in page and "data-skips" not in page
    assert '<select id="f-skip"><option value="">all</option>\n</select>' in page


def test_prometheus_counts_hosts_per_skipped_role_and_part():
    lines = render_prom(_report()).splitlines()
    assert "# TYPE racksmith_run_skips gauge" in lines
    assert [line for line in lines if line.startswith("racksmith_run_skips{")] == [
        'racksmith_run_skips{role="dcgm",part="all"} 1',
        'racksmith_run_skips{role="gdr",part="all"} 2',
        'racksmith_run_skips{role="nvidia_driver",part="all"} 1',
        'racksmith_run_skips{role="nvidia_driver",part="fabricmanager"} 7',
    ]


# -- the command -----------------------------------------------------------------------------


def test_report_command_rebuilds_skips_and_lists_them_per_host(tmp_path):
    folder = tmp_path / "run"
    publish(_report(), folder)
    assert load_run(folder).hosts["gpu5"].skips[1] == Skip("gdr", "all", NO_RDMA)
    racksmith = Path(sys.executable).parent / "racksmith"
    env = {k: v for k, v in os.environ.items() if k != "RACKSMITH_RUN_DIR"}
    done = subprocess.run(
        [racksmith, "report", str(folder), "--skips"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"  nvidia_driver/fabricmanager (7 hosts): {NO_NVSWITCH}" in done.stdout
    assert f"  gpu5: gdr: {NO_RDMA}" in done.stdout.splitlines()
    assert "gpu5: gdr:" not in (folder / "report.txt").read_text()  # the file stays compact
    as_json = subprocess.run(
        [racksmith, "report", str(folder), "--json"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert json.loads(as_json.stdout)["hosts"]["cpu1"]["skips"][1]["role"] == "dcgm"
