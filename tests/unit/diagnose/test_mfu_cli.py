"""``racksmith diagnose mfu`` end to end: real smoke curves, a generated throttling curve joined
to health reports the real agent wrote for stand-in hosts, bad input."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.testing.curves import BASE, generate
from racksmith.testing.inventory import write_inventory
from racksmith.triage.history import HostRun, RunRecord

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quick_hosts import FIXTURES, check_command, make_hosts, profile, racksmith

X1, X2 = FIXTURES / "h200-x1-run", FIXTURES / "h200-x2-run"


def write_jsonl(path: Path, samples) -> Path:
    path.write_text(
        "".join(json.dumps({"step": s.step, "mfu": round(s.value, 5)}) + "\n" for s in samples)
    )
    return path


def mfu(curve: Path, *args: str) -> subprocess.CompletedProcess:
    """``racksmith diagnose mfu CURVE --expected-mfu BASE ARGS...``: a generated curve measured
    against the MFU the generator centres its curves on."""
    return racksmith("diagnose", "mfu", str(curve), "--expected-mfu", str(BASE), *args)


def hosts_file(tmp_path: Path, *names: str) -> Path:
    """A ``--hosts`` file: ``names``, one a line."""
    path = tmp_path / "hosts.txt"
    path.write_text("".join(f"{name}\n" for name in names))
    return path


def test_real_smoke_log_is_healthy_against_the_other_runs_load_report():
    proc = racksmith(
        "diagnose",
        "mfu",
        str(X1 / "clean-smoke-1gpu.log"),
        "--baseline",
        str(X2 / "load-report.json"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "HEALTHY" in proc.stdout.splitlines()[0]
    proc = racksmith(
        "diagnose", "mfu", str(X2 / "smoke-1gpu.json"), "--expected-mfu", "0.45", "--json"
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["verdict"] == "healthy" and doc["warmup"] == 10
    assert doc["schema"] == "racksmith.diagnose.mfu/v1" and doc["suspect_hosts"] == []


def test_throttling_curve_names_the_host_whose_clocks_throttled(tmp_path):
    """h2's quick report (the agent on the thermal-slowdown capture) has clock_events FAIL;
    h3 has no report at all: missing evidence, said, never counted as clean."""
    root = make_hosts(tmp_path, {"h1": None, "h2": "thermal-slowdown"})
    prof = profile(tmp_path)
    run_dir = tmp_path / "runs" / "20261201-000000-x"
    for host in ("h1", "h2"):
        argv = [a.replace("{host}", host) for a in shlex.split(check_command(root, prof))]
        report = subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout
        (run_dir / "health" / host).mkdir(parents=True)
        (run_dir / "health" / host / "quick.json").write_text(report)
    history = RunRecord(
        "earlier",
        "2026-11-20T00:00:00Z",
        {
            "h1": HostRun("FAILED validate", "health_gpu_errors"),  # unrelated to clocks
            "h2": HostRun("GOLDEN"),
            "h3": HostRun("FAILED validate", "thermal"),
        },
    )
    (run_dir.parent / "history.jsonl").write_text(history.to_json() + "\n")
    hosts = hosts_file(tmp_path, "h1", "h2", "h3")
    curve = write_jsonl(tmp_path / "steps.jsonl", generate("clock_throttle", seed=3))

    args = ["--hosts", str(hosts), "--run-dir", str(run_dir)]
    proc = mfu(curve, *args, "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [p["pattern"] for p in doc["patterns"]] == ["clock_throttle"]
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert doc["suspect_hosts"] == ["h2", "h3"]  # h2: clocks now; h3: a thermal failure before
    assert any(
        f["kind"] == "clock_events"
        and f["status"] == "FAIL"
        and "hw_thermal_slowdown" in f["detail"]
        for f in by_host["h2"]["findings"]
    )
    assert [f["kind"] for f in by_host["h3"]["findings"]] == ["history"]
    assert any(m.startswith("clock_events: quick.json: not in") for m in by_host["h3"]["missing"])
    assert by_host["h1"]["findings"] == [] and "clock_events (quick.json)" in by_host["h1"]["clean"]
    assert (
        "history (1 runs, 0 failed for a related cause; other causes: health_gpu_errors)"
        in (by_host["h1"]["clean"])
    )

    text = mfu(curve, *args).stdout
    assert "hosts to look at first: h2, h3" in text
    assert "h3: missing evidence: clock_events" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl", "--expected-mfu", "0.4"], "missing.jsonl: No such file"),
        (["{curve}", "--expected-mfu", "45"], "give MFU as a fraction"),
        (["{curve}", "--baseline", "{tokens}"], "is in mfu, the expectation"),
        (["{curve}", "--expected-mfu", "0.4", "--limit", "x"], "--limit needs --inventory"),
        (
            ["{curve}", "--expected-mfu", "0.4", "--hosts", "h", "--run-dir", "nowhere"],
            "--run-dir nowhere: not a directory",
        ),
    ],
)
def test_bad_input_exits_2_and_names_it(tmp_path, args, message):
    curve = write_jsonl(tmp_path / "c.jsonl", generate("healthy"))
    tokens = tmp_path / "t.csv"
    tokens.write_text("step,tokens,seconds\n" + "".join(f"{i},1000,0.5\n" for i in range(30)))
    argv = [a.format(curve=curve, tokens=tokens) for a in args]
    proc = racksmith("diagnose", "mfu", *argv, "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr


def test_hosts_from_an_inventory_and_a_limit(tmp_path):
    inv = write_inventory(tmp_path / "inv.yml", {"a1": {}, "a2": {}, "b1": {}})
    curve = write_jsonl(tmp_path / "c.jsonl", generate("gpudirect"))
    proc = mfu(curve, "-i", str(inv), "-l", "a1:a2", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and [p["pattern"] for p in doc["patterns"]] == ["gpudirect"]
    assert sorted(h["host"] for h in doc["hosts"]) == ["a1", "a2"]
    assert doc["suspect_hosts"] == []  # no run directory: nothing found, every kind missing
    assert all(
        any(m.startswith("gdr: no run directory") for m in h["missing"]) for h in doc["hosts"]
    )


def test_flapping_curve_joined_to_the_ufm_event_triage(tmp_path):
    """The UFM triage of the fabric samples (tests/fixtures/fabric: a BER event on node04's cable,
    a flapping leaf-spine link, a switch down), made by ``racksmith fabric ufm`` itself."""
    fab = FIXTURES / "fabric"
    triage = racksmith(
        "fabric",
        "ufm",
        str(fab / "small-event.log"),
        "--topology",
        str(fab / "small-ibnetdiscover.txt"),
        "--hosts",
        str(fab / "small-hosts.json"),
        "--json",
    )
    assert triage.returncode in (0, 1), triage.stderr
    ufm = tmp_path / "ufm.jsonl"
    ufm.write_text(triage.stdout + triage.stderr)  # the ports, then the summary line
    hosts = hosts_file(tmp_path, "node01", "node02", "node03", "node04")
    curve = write_jsonl(tmp_path / "c.jsonl", generate("ib_flapping", seed=1))
    args = ["--hosts", str(hosts), "--ufm", str(ufm)]
    proc = mfu(curve, *args, "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and [p["pattern"] for p in doc["patterns"]] == ["ib_flapping"]
    assert doc["suspect_hosts"] == ["node04"]
    node04 = next(h for h in doc["hosts"] if h["host"] == "node04")
    assert node04["findings"][0]["detail"] == "ib-leaf-02/2 - node04 mlx5_0/1: symbol BER x1 [917]"
    assert (
        "ib-leaf-02/33 - ib-spine-01/3: flapping (3 link-down events) (no host at either end)"
        in doc["fabric"]
    )
    assert "needs attention: switch down x1" in doc["fabric"]
    ufm.write_text(triage.stdout + "racksmith: something else\n")
    proc = mfu(curve, *args)
    assert proc.returncode == 2 and "ufm.jsonl: line 6: not JSON" in proc.stderr
