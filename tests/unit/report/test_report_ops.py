"""The report as operators use it at 500 hosts: failures first, sortable columns (in a real
headless Chromium), BMC/model/location, what changed since the last run (the health history),
CSV, links to a real tracker, ``report --json`` that only reads; screenshots of 10 and 512
hosts (kept in $RACKSMITH_SCREENSHOTS when set, for CI's logs)."""

from __future__ import annotations

import csv
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
from report_support import browser, generate

from racksmith.report.publish import load_run, publish, ticket_urls
from racksmith.triage import history

REPO = Path(__file__).resolve().parents[3]


def racksmith(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "racksmith", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr data-result="[^"]*"[^>]*>.*?</tr>', page, re.S)


def _host(row: str) -> str:
    return re.search(r"<td>([^<]*)</td>", row).group(1)


def test_failures_first_then_undecided_then_golden_with_bmc_model_location(tmp_path):
    folder = tmp_path / "runs" / "r1"
    expected = generate(folder, 160, seed=3)
    publish(load_run(folder), folder)
    rows = _rows((folder / "report.html").read_text())
    results = [re.search(r'data-result="([^"]*)"', r).group(1) for r in rows]
    golden = results.index("GOLDEN")
    assert golden > 0 and set(results[golden:]) == {"GOLDEN"}
    assert "GOLDEN" not in results[:golden] and len(rows) == len(expected)
    first = rows[0]
    assert "<td>PowerEdge XE9680</td>" in first and re.search(
        r"<td>10\.1\.\d+\.\d+:443</td>", first
    )
    assert re.search(r"<td>DC1-R\d\d-U\d\d</td>", first)
    with (folder / "report.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [r["host"] for r in table] == [_host(r) for r in rows]  # the same order
    assert table[0]["model"] == "PowerEdge XE9680" and table[0]["cause"]
    assert table[-1]["result"] == "GOLDEN" and table[-1]["ticket"] == ""


def test_changed_since_the_last_run_comes_from_the_history(tmp_path):
    runs = tmp_path / "runs"
    folder = runs / "r2"
    expected = generate(folder, 40, seed=3)
    failed = sorted(h for h, (r, _) in expected.items() if r != "GOLDEN")
    golden = sorted(h for h, (r, _) in expected.items() if r == "GOLDEN")
    before = {h: "GOLDEN" for h in [*failed[1:], *golden[1:]]}  # failed[0], golden[0]: new hosts
    record = history.RunRecord(
        "r1", "2026-11-30T00:00:00Z", {h: history.HostRun(r) for h, r in before.items()}
    )
    history.append(runs / "history.jsonl", record)
    report = load_run(folder)
    publish(report, folder)
    assert report.previous_run == "r1"
    since = {rec.name: report.since_last(rec) for rec in report.machines()}
    assert since[failed[0]] == since[golden[0]] == "new host"
    assert all(since[h] == "was GOLDEN" for h in failed[1:])
    assert all(since[h] == "" for h in golden[1:])
    page = (folder / "report.html").read_text()
    changed = len(failed) + 1
    assert f"changed since the last run ({changed})" in page
    assert page.count('data-new="1"') == changed
    assert json.loads((folder / "report.json").read_text())["previous_run"] == "r1"
    # rebuilt later, after the run itself was recorded: still compared with the run before it
    history.append(runs / "history.jsonl", history.record_of(report.to_dict()))
    again = load_run(folder)
    publish(again, folder)
    assert again.previous_run == "r1"


def test_without_history_nothing_is_new_and_a_broken_one_is_said(tmp_path):
    folder = tmp_path / "runs" / "r1"
    generate(folder, 10)
    report = load_run(folder)
    assert not publish(report, folder).warnings and report.previous_run is None
    assert 'data-new="1"' not in (folder / "report.html").read_text()
    (folder.parent / "history.jsonl").write_text("not json\n")
    published = publish(load_run(folder), folder)
    assert published.warnings and "history.jsonl: line 1" in published.warnings[0]


def test_ticket_url_template_links_a_real_tracker(tmp_path):
    folder = tmp_path / "runs" / "r1"
    generate(folder, 40, seed=3)
    template = "https://jira.example.com/secure/CreateIssueDetails!init.jspa?pid=1&summary={summary}&labels={cause}"
    report = load_run(folder)
    publish(report, folder, ticket_url=template)
    rec = next(r for r in report.machines() if r.triage)
    url = rec.triage.url
    assert url.startswith("https://jira.example.com/secure/CreateIssueDetails!init.jspa?pid=1&")
    assert unquote(url.split("summary=")[1].split("&")[0]) == (
        f"{rec.name}: {rec.triage.title} ({rec.result})"
    )
    assert " " not in url and url.endswith(f"labels={rec.triage.cause}")
    page = (folder / "report.html").read_text()
    assert f'<a href="{url.replace("&", "&amp;")}">ticket</a>' in page
    with pytest.raises(ValueError, match=r"unknown field \{hostname\}"):
        ticket_urls(report, "https://t.example/?h={hostname}")
    done = racksmith("report", str(folder), "--ticket-url", "https://t.example/{nope}")
    assert done.returncode == 2 and "{nope}" in done.stderr


def test_report_json_only_reads(tmp_path):
    folder = tmp_path / "runs" / "r1"
    expected = generate(folder, 40, seed=3)
    publish(load_run(folder), folder)
    (folder / "report.html").unlink()  # a rebuild would bring it back
    files = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()}
    done = racksmith("report", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {
        p: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.rglob("*") if p.is_file()
    } == files
    assert not (folder / "report.html").exists()
    failed = {h: c for h, (_, c) in expected.items() if c}
    assert {h: d["triage"]["cause"] for h, d in data["hosts"].items() if d["triage"]} == failed
    assert all(data["hosts"][h]["triage"]["ticket"] == f"tickets/{h}.md" for h in failed)


# -- a real browser --------------------------------------------------------------------------


_browser = browser


def _dom_hosts(url: str) -> list[str]:
    dom = _browser("--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return [_host(r) for r in _rows(dom.stdout) if 'class="hidden"' not in r]


def test_sorting_and_the_changed_filter_in_chromium(tmp_path):
    runs = tmp_path / "runs"
    folder = runs / "r2"
    expected = generate(folder, 512)
    previous = {h: "GOLDEN" for h in sorted(expected)[:400]}  # the last 112 are new hosts
    history.append(
        runs / "history.jsonl",
        history.RunRecord("r1", "x", {h: history.HostRun(r) for h, r in previous.items()}),
    )
    publish(load_run(folder), folder)
    url = (folder / "report.html").as_uri()
    by_name = _dom_hosts(url + "#sort=0")
    assert by_name == sorted(expected)
    assert _dom_hosts(url + "#sort=-0") == sorted(expected, reverse=True)
    changed = {h for h in expected if h not in previous or expected[h][0] != "GOLDEN"}
    assert set(_dom_hosts(url + "#new=1")) == changed
    columns = ["host", "BMC", "model", "location"]
    location = columns.index("location")
    by_location = _dom_hosts(url + f"#sort={location}")
    locations = json.loads((folder / "report.json").read_text())["hosts"]
    keys = [locations[h]["location"] for h in by_location]
    assert keys == sorted(keys)


@pytest.mark.parametrize("hosts", [10, 512])
def test_screenshot(tmp_path, hosts):
    folder = tmp_path / f"r{hosts}"
    generate(folder, hosts)
    publish(load_run(folder), folder)
    keep = Path(os.environ.get("RACKSMITH_SCREENSHOTS") or tmp_path)
    keep.mkdir(parents=True, exist_ok=True)
    shot = keep / f"report-{hosts}.png"
    proc = _browser(
        "--window-size=1600,1200", f"--screenshot={shot}", (folder / "report.html").as_uri()
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1600, 1200)
    assert shot.stat().st_size > 20_000  # a page, not a blank
    print(f"screenshot: {shot}")
