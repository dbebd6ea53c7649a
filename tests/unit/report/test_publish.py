"""The rack report of a run directory: every host with its result, cause and ticket; the
golden set as golden-set.json says; JSON, text, HTML (in a real headless Chromium) and a
Prometheus textfile; `racksmith report` and `racksmith triage` on it."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from report_support import browser, generate

from racksmith.report.publish import load_run, publish

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "runs" / "20261130-000000-t"
    expected = generate(folder, 160, seed=3)
    return folder, expected


def racksmith(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "racksmith", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_host_gets_its_result_cause_and_ticket(run_dir):
    folder, expected = run_dir
    report = load_run(folder)
    published = publish(report, folder)
    for host, (result, cause) in expected.items():
        rec = report.hosts[host]
        assert rec.result == result, host
        if cause is None:
            assert rec.triage is None
            assert not (folder / "tickets" / f"{host}.md").exists()
        else:
            assert rec.triage.cause == cause, host
            assert rec.triage.ticket == f"tickets/{host}.md"
            ticket = json.loads((folder / "tickets" / f"{host}.json").read_text())
            assert ticket["cause"]["name"] == cause and ticket["evidence"]
    golden = json.loads((folder / "golden-set.json").read_text())["golden"]
    data = json.loads((folder / "report.json").read_text())
    assert data["golden"] == golden == report.golden_hosts()
    assert len(published.diagnoses) == sum(1 for _, c in expected.values() if c)
    text = (folder / "report.txt").read_text()
    assert "cause" in text.splitlines()[1] and "-> GPU not detected" in text


def test_a_host_the_run_never_decided_gets_no_ticket(run_dir):
    folder, _ = run_dir
    data = json.loads((folder / "report.json").read_text())
    data["hosts"]["late"] = {"name": "late", "phases": {"discover": {"ok": 3}}}
    (folder / "report.json").write_text(json.dumps(data))
    report = load_run(folder)
    publish(report, folder)
    assert report.hosts["late"].result == "INCOMPLETE" and report.hosts["late"].triage is None
    assert not (folder / "tickets" / "late.md").exists()


def test_the_golden_set_decides_golden_not_a_second_rule(run_dir):
    folder, _ = run_dir
    golden = json.loads((folder / "golden-set.json").read_text())
    host = golden["golden"][0]
    golden["hosts"][host] = {"verdict": "NOT FIT", "reasons": ["load: FAIL smoke: MFU 12 %"]}
    golden["golden"].remove(host)
    (folder / "golden-set.json").write_text(json.dumps(golden))
    report = load_run(folder)  # report.json still says health_verdict FIT for it
    assert report.hosts[host].result == "NOT_FIT"
    assert report.golden_hosts() == golden["golden"]


def test_prometheus_textfile(run_dir, tmp_path):
    folder, expected = run_dir
    textfile = tmp_path / "textfile" / "racksmith.prom"
    textfile.parent.mkdir()
    publish(load_run(folder), folder, prom_path=textfile)
    lines = (folder / "report.prom").read_text().splitlines()
    assert textfile.read_text().splitlines() == lines  # the collector's copy, the same
    assert not list(textfile.parent.glob(".*"))  # written through a temporary file, renamed
    sample = re.compile(r'^[a-z_]+(\{([a-z_]+="(?:[^"\\]|\\.)*",?)+\})? \d+$')
    assert all(line.startswith("# ") or sample.match(line) for line in lines), lines[:5]
    # the run is one series; no other has a run label (a new series every run otherwise)
    assert f'racksmith_run_info{{run="{folder.name}",run_dir="{folder}"}} 1' in lines
    assert [ln for ln in lines if 'run="' in ln] == [lines[2]]
    finished = json.loads((folder / "report.json").read_text())["finished"]
    stamp = datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
    assert f"racksmith_run_finish_timestamp_seconds {stamp:.0f}" in lines
    golden = sum(1 for r, _ in expected.values() if r == "GOLDEN")
    assert f'racksmith_run_hosts{{result="GOLDEN"}} {golden}' in lines
    failures = [ln for ln in lines if ln.startswith("racksmith_host_failure{")]
    assert len(failures) == len(expected) - golden


def test_html_is_self_contained_and_small_at_512_hosts(tmp_path):
    folder = tmp_path / "r512"
    generate(folder, 512)
    publish(load_run(folder), folder)
    page = (folder / "report.html").read_text()
    assert len(page.encode()) < 1_000_000
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page
    assert len(re.findall(r"<tr data-result=", page)) == 512
    assert page.index('id="summary"') < page.index('id="hosts"')


def test_report_command(run_dir, tmp_path):
    folder, expected = run_dir
    proc = racksmith("report", str(folder), "--html", str(tmp_path / "page.html"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"racksmith run {folder.name}")
    assert (tmp_path / "page.html").stat().st_size > 10_000
    proc = racksmith("report", str(folder), "--json")
    data = json.loads(proc.stdout)  # exactly one document
    assert data["summary"]["GOLDEN"] == sum(1 for r, _ in expected.values() if r == "GOLDEN")


def test_triage_command_lists_each_failed_host(run_dir):
    folder, expected = run_dir
    proc = racksmith("triage", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {h["host"]: h["cause"]["name"] for h in doc["hosts"]} == {
        h: c for h, (_, c) in expected.items() if c
    }


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: shutil.rmtree(d), "not a directory"),
        (lambda d: (d / "report.json").write_text('{\n  "run_id": \n'), "line 3: not JSON"),
        (lambda d: (d / "report.json").write_text("[]"), "expected a JSON object"),
        (lambda d: (d / "report.json").write_text('{"hosts": {}}'), "not a racksmith run report"),
        (lambda d: (d / "golden-set.json").write_text("{"), "golden-set.json: line 1"),
    ],
)
def test_bad_run_directory_exits_2_naming_the_file(run_dir, setup, message):
    folder, _ = run_dir
    setup(folder)
    proc = racksmith("report", str(folder), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr and str(folder) in proc.stderr


# -- a real browser -------------------------------------------------------------------------


_browser = browser


def test_html_in_headless_chromium_filters_and_screenshot(tmp_path):
    folder = tmp_path / "r512"
    expected = generate(folder, 512)
    publish(load_run(folder), folder)
    url = (folder / "report.html").as_uri()
    quarantined = sum(1 for r, _ in expected.values() if r == "QUARANTINED")
    gpu_missing = sum(1 for _, c in expected.values() if c == "gpu_missing")
    hosts = json.loads((folder / "report.json").read_text())["hosts"]
    no_rdma = sum(1 for h in hosts.values() if any(s["role"] == "gdr" for s in h["skips"]))
    golden_no_nvswitch = sum(
        1 for name, h in hosts.items()
        if expected[name][0] == "GOLDEN" and any(s["part"] == "fabricmanager" for s in h["skips"])
    )  # fmt: skip
    assert no_rdma and golden_no_nvswitch  # both filters have something to find
    for fragment, shown in (
        ("", 512),
        ("#state=QUARANTINED", quarantined),
        ("#cause=gpu_missing", gpu_missing),
        ("#state=GOLDEN&cause=gpu_missing", 0),
        ("#skip=gdr", no_rdma),
        ("#skip=nvidia_driver%2Ffabricmanager&state=GOLDEN", golden_no_nvswitch),
    ):
        dom = _browser("--dump-dom", url + fragment)
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert f'id="f-shown">{shown} of 512 hosts shown<' in dom.stdout, fragment
        assert dom.stdout.count('<tr data-result="') - dom.stdout.count('class="hidden"') == shown
    shot = tmp_path / "report-512.png"
    proc = _browser("--window-size=1400,1100", f"--screenshot={shot}", url)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1400, 1100)
    print(f"screenshot: {shot}")
