"""Machine output and bad input of the GPU tools' command lines (issue 8, item 7):
``python3 -m racksmith.gpu run --json`` and ``python3 -m racksmith.health check --json`` print
exactly one JSON document on stdout; child output goes to log files (and stderr with -v);
bad input exits 2 with a message naming it, before anything runs.

The torchrun path itself needs GPUs (it was verified on a 2 x H200 host: docs/health.md);
here the pieces it relies on run for real: the descriptor-level redirect against a child that
inherits stdout and a write to fd 1 that bypasses Python, and the logged launcher against a
real child process that prints, fails and hangs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from racksmith.gpu import torchrun

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def python_m(module: str, *args: str, env=None, timeout=90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or ENV,
    )


def single_json_document(stdout: str) -> dict:
    """The whole of stdout is one JSON document (raw_decode stops at its end)."""
    doc, end = json.JSONDecoder().raw_decode(stdout.lstrip())
    assert stdout.lstrip()[end:].strip() == "", f"after the JSON: {stdout.lstrip()[end:][:200]!r}"
    return doc


# --- python3 -m racksmith.gpu ------------------------------------------------------------


@pytest.mark.parametrize(
    "args, names",
    [
        (["--only", "stress,burn"], ["--only", "'burn'", "choose from stress,nvlink"]),
        (["--only", ","], ["--only", "(none given)"]),
        (["--smoke-gpus", "1,two"], ["--smoke-gpus", "'two' is not a GPU count"]),
        (["--smoke-gpus", "0"], ["--smoke-gpus", "'0' is not a GPU count"]),
        (["--stress-seconds", "0"], ["--stress-seconds", "must be a number above 0"]),
        (["--stress-seconds", "nan"], ["--stress-seconds", "must be a number above 0"]),
        (["--stress-seconds", "ten"], ["--stress-seconds", "not a number: 'ten'"]),
        (["--smoke-steps", "12"], ["--smoke-steps", "must be at least 20, got 12"]),
        (["--gpus", "-1"], ["--gpus", "must be at least 0, got -1"]),
        (["--gpus", "two"], ["--gpus", "not an integer: 'two'"]),
    ],
)
def test_gpu_run_bad_input_exits_2_naming_it(args, names, tmp_path):
    out = tmp_path / "out"
    proc = python_m("racksmith.gpu", "run", "--json", "--out", str(out), *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""  # no report: nothing ran
    for name in names:
        assert name in proc.stderr
    assert not out.exists()  # refused before the output directory was made


def test_gpu_run_out_that_is_a_file_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = python_m("racksmith.gpu", "run", "--json", "--out", str(blocker / "load"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"--out {blocker / 'load'}: Not a directory" in proc.stderr


def test_gpu_help_has_examples_and_version():
    proc = python_m("racksmith.gpu", "run", "--help")
    assert proc.returncode == 0
    assert "examples:" in proc.stdout and "run --json --out load/ > load.json" in proc.stdout
    proc = python_m("racksmith.gpu", "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("python3 -m racksmith.gpu 0.")


def test_gpu_run_json_is_one_document_and_the_run_log_is_kept(tmp_path):
    """Whatever this machine has (CI: no torch, no GPU), stdout is the report alone."""
    out = tmp_path / "load"
    proc = python_m("racksmith.gpu", "run", "--json", "--profile", "h200-x2-vm", "--out", str(out))
    report = single_json_document(proc.stdout)
    assert report["kind"] == "load" and report["exit_code"] == proc.returncode
    assert report == json.loads((out / "load-report.json").read_text())
    log = (out / "gpu-run.log").read_text()
    assert "python3 -m racksmith.gpu run --json --profile h200-x2-vm" in log
    assert f"verdict {report['verdict']}, exit {report['exit_code']}" in log
    assert proc.stderr == ""  # progress goes to stderr only with -v


def test_gpu_run_verbose_puts_progress_on_stderr_not_stdout(tmp_path):
    out = tmp_path / "load"
    proc = python_m("racksmith.gpu", "run", "-v", "--json", "--out", str(out))
    single_json_document(proc.stdout)
    assert "python3 -m racksmith.gpu run -v --json" in proc.stderr
    assert "verdict NOT FIT" in proc.stderr


def test_stdout_into_catches_fd_writes_and_inheriting_children(tmp_path):
    """A write to descriptor 1 that bypasses Python (as CUDA or NCCL do) and a child that
    inherits stdout (as a launcher would) both land in the log; stdout keeps the report."""
    log = tmp_path / "run.log"
    code = textwrap.dedent(
        f"""
        import json, os, subprocess, sys
        from pathlib import Path
        from racksmith.gpu.cli import stdout_into
        with stdout_into(Path({str(log)!r})):
            print("python print")
            os.write(1, b"raw fd write\\n")
            subprocess.run([sys.executable, "-c", "print('child line')"], check=True)
        print(json.dumps({{"report": True}}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=ENV
    )
    assert proc.returncode == 0, proc.stderr
    assert single_json_document(proc.stdout) == {"report": True}
    # Python's own buffer is flushed when the redirect ends, so its line may come last.
    assert sorted(log.read_text().splitlines()) == ["child line", "python print", "raw fd write"]


# --- the logged launcher ------------------------------------------------------------------


def test_run_logged_writes_the_log_and_echoes_never_stdout(tmp_path, capfd):
    log = tmp_path / "child.log"
    seen: list[str] = []
    argv = [sys.executable, "-c", "import sys; print('out 1'); print('err 1', file=sys.stderr)"]
    rc = torchrun.run_logged(argv, dict(os.environ), log, 30, what="child", echo=seen.append)
    assert rc == 0
    assert sorted(log.read_text().splitlines()) == ["err 1", "out 1"]
    assert sorted(seen) == ["err 1", "out 1"]
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""


def test_run_logged_returns_a_failing_status(tmp_path):
    log = tmp_path / "child.log"
    argv = [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"]
    assert torchrun.run_logged(argv, dict(os.environ), log, 30, what="child") == 3
    assert torchrun.tail(log) == "boom\n"


def test_run_logged_kills_a_silent_hang_with_its_process_group(tmp_path):
    """A worker that hangs without printing is still stopped at the timeout, grandchildren
    included (torchrun's workers are its children)."""
    log = tmp_path / "child.log"
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(300)\n"
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"smoke test on 2 GPUs ran past 2 s and was killed"):
        torchrun.run_logged(
            [sys.executable, "-c", code], dict(os.environ), log, 2, what="smoke test on 2 GPUs"
        )
    assert time.monotonic() - started < 20
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_torchrun_env_keeps_nvlink_multicast_off(monkeypatch):
    """Even a caller whose environment turns NVLS on gets it off: the floors are ring figures,
    and on a shared host multicast can take the GPUs out of service."""
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    monkeypatch.setenv("NCCL_IB_HCA", "mlx5_0")
    argv, env = torchrun.command(2, "racksmith.gpu.smoke", "--out", "x.json")
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["NCCL_IB_HCA"] == "mlx5_0"  # the site's own NCCL settings pass through
    assert argv[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert env["PYTHONPATH"].split(os.pathsep)[0] == torchrun.PACKAGE_ROOT


# --- python3 -m racksmith.health ----------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "--deadline", "0"], "argument --deadline: must be a number above 0, got '0'"),
        (["check", "--deadline", "soon"], "argument --deadline: not a number: 'soon'"),
        (["check", "--only", "ecc,"], "--only names unknown checks: an empty name"),
        (["check", "--report", "/"], "argument --report: / is a directory"),
    ],
)
def test_health_check_bad_input_exits_2_naming_it(args, message):
    proc = python_m("racksmith.health", *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert message in proc.stderr


def test_health_check_output_under_a_file_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = python_m("racksmith.health", "check", "--json", "--prom", str(blocker / "x.prom"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"argument --prom: {blocker / 'x.prom'}: {blocker} is not a directory" in proc.stderr


def test_health_check_json_is_one_document(tmp_path):
    proc = python_m("racksmith.health", "check", "--json", "--report", str(tmp_path / "r.json"))
    report = single_json_document(proc.stdout)
    assert report["exit_code"] == proc.returncode
    assert report == json.loads((tmp_path / "r.json").read_text())


def test_health_golden_bad_hosts_file_exits_2(tmp_path):
    out = tmp_path / "run"
    missing = tmp_path / "missing.json"
    proc = python_m("racksmith.health", "golden", "--hosts", str(missing), "--out", str(out))
    assert proc.returncode == 2
    assert f"--hosts {missing}: No such file or directory" in proc.stderr
    broken = tmp_path / "hosts.json"
    broken.write_text('{\n  "gpu01": {"report": null},\n  "gpu02": \n}\n')
    proc = python_m("racksmith.health", "golden", "--hosts", str(broken), "--out", str(out))
    assert proc.returncode == 2
    assert f"--hosts {broken}: not JSON: Expecting value: line 4 column 1" in proc.stderr
    broken.write_text('["gpu01"]')
    proc = python_m("racksmith.health", "golden", "--hosts", str(broken), "--out", str(out))
    assert proc.returncode == 2
    assert "must be a JSON object of host name -> object" in proc.stderr


def test_health_help_has_examples_and_version():
    proc = python_m("racksmith.health", "--help")
    assert proc.returncode == 0 and "check --json > report.json" in proc.stdout
    proc = python_m("racksmith.health", "--version")
    assert proc.returncode == 0 and "report schema racksmith.health/v1" in proc.stdout


def test_topology_without_nvidia_smi_is_an_error_not_a_guess(monkeypatch, tmp_path):
    from racksmith.gpu import cli

    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli._topology() == {"error": "`nvidia-smi topo -m`: nvidia-smi not found on PATH"}
