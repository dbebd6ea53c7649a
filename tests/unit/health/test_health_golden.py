"""The golden set: fit hosts in, every other host out with its reason; missing or unreadable
reports are never healthy."""

from __future__ import annotations

import json
import subprocess
import sys

from health_support import FIXTURES, ROOT

from racksmith.health.golden import build, summary, write

QUICK = str(FIXTURES / "h200-x2-run" / "quick.json")
LOAD = str(FIXTURES / "h200-x2-run" / "load-report.json")
RUN1_LOAD = str(FIXTURES / "h200-x2-run" / "run1-load-report.json")


def test_golden_set_from_real_reports(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    hosts = {
        "h200a": {"report": QUICK, "load_report": LOAD},
        "h200b": {"report": QUICK, "load_report": RUN1_LOAD},
        "nodata": {"report": None},
        "corrupt": {"report": str(broken)},
        "deployfail": {"failure": "deploy: curtin failed on /dev/nvme1n1"},
        "lab": {"report": QUICK, "load_required": False, "load_skip_reason": "lab host has no GPU"},
        "noload": {"report": QUICK},
    }
    golden = build(hosts, run_id="r42")
    assert golden["golden"] == ["h200a", "lab"]
    entries = golden["hosts"]
    assert entries["h200a"]["load"] == "FIT" and entries["h200a"]["load_figures"]["gpus"] == 2
    assert any("loss did not fall" in r for r in entries["h200b"]["reasons"])
    assert "no report (host unreachable" in entries["nodata"]["reasons"][0]
    assert "unreadable" in entries["corrupt"]["reasons"][0]
    assert entries["deployfail"]["reasons"] == [
        "failed before validation: deploy: curtin failed on /dev/nvme1n1"
    ]
    assert entries["lab"]["load"] == "not required: lab host has no GPU"
    assert entries["noload"]["reasons"] == ["load checks: no report"]
    paths = write(golden, tmp_path / "runs" / "r42")
    assert [p.name for p in paths] == ["golden-set.json", "golden-set.md"]
    assert json.loads(paths[0].read_text())["golden"] == ["h200a", "lab"]
    md = paths[1].read_text()
    assert "2 of 7 hosts are fit to train on" in md and "| nodata | NOT FIT |" in md


def test_standin_is_called_out(tmp_path):
    report = json.loads(open(QUICK).read())
    report["standin"] = "replaying captured outputs from h200-x2"
    path = tmp_path / "q.json"
    path.write_text(json.dumps(report))
    golden = build(
        {"gpu01": {"report": str(path), "load_required": False, "load_skip_reason": "x"}}
    )
    assert "**LAB STAND-IN**" in summary(golden)
    assert golden["hosts"]["gpu01"]["standin"].startswith("replaying")


def test_golden_command(tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"a": {"report": QUICK, "load_report": LOAD}, "b": {}}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "racksmith.health",
            "golden",
            "--hosts",
            str(hosts),
            "--out",
            str(tmp_path / "run"),
            "--run-id",
            "t1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "golden set: 1 of 2 hosts fit" in proc.stdout
