"""racksmith.gpu imports and decides without PyTorch (CI has none): torch is imported only
inside the functions that drive GPUs, and a host without torch is NOT FIT, undecided."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.gpu import ib

ROOT = Path(__file__).resolve().parents[3]
MODULES = ("cli", "rules", "mfu", "sku", "nccl", "ib", "smoke", "stress", "p2p")


def test_every_module_imports_without_torch():
    code = (
        "import sys\n"
        f"for m in {MODULES!r}: __import__('racksmith.gpu.' + m)\n"
        "assert 'torch' not in sys.modules, 'torch was imported at module level'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr


def _gpu_run(tmp_path: Path, capture: str, overlays=(), profile: str = "h200-x1-vm"):
    """``racksmith.gpu run`` with the lab stand-in's nvidia-smi replaying a real capture."""
    from racksmith.lab.standin import install

    fixtures = ROOT / "tests" / "fixtures"
    install(fixtures / capture, tmp_path / "standin", overlays=[fixtures / o for o in overlays])
    path = f"{tmp_path / 'standin' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "racksmith.gpu",
            "run",
            "--profile",
            profile,
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PATH=path),
    )


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_without_torch_the_load_checks_cannot_decide(tmp_path):
    proc = _gpu_run(tmp_path, "h200-x1")
    assert proc.returncode == 2
    assert "NOT FIT (could not decide)" in proc.stdout
    assert "PyTorch is not installed: the load checks could not run" in proc.stdout
    assert (tmp_path / "out" / "load-report.json").is_file()


def test_load_checks_refuse_a_host_whose_gpu_is_held(tmp_path):
    """Issue 23: on the real H200 with a leftover process holding 125 GiB, the smoke test fit
    in the 15 GiB left and the load checks said FIT. Now they do not start, and say why."""
    proc = _gpu_run(tmp_path, "h200-x1", overlays=["h200-x1-held"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NOT FIT" in proc.stdout
    assert (
        "GPU 0 (00000000:00:06.0): process 704 (python3) holds the GPU: 128610 MiB" in proc.stdout
    )
    assert "load checks and smoke test not started" in proc.stdout
    assert "PyTorch" not in proc.stdout  # refused before torch is even looked for
    report = json.loads((tmp_path / "out" / "load-report.json").read_text())
    assert [c["name"] for c in report["checks"]] == ["gpu_processes"]


def test_load_checks_refuse_when_the_gpus_cannot_be_read(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "racksmith.gpu",
            "run",
            "--profile",
            "h200-x1-vm",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT), PATH=str(tmp_path / "no-tools")),
    )
    assert proc.returncode == 2
    assert "cannot tell whether the GPUs are free" in proc.stdout


def test_ib_write_bw_report_parser():
    sample = (ROOT / "tests/fixtures/ib/ib_write_bw-report.txt").read_text()
    assert ib.parse(sample) == 391.87
    with pytest.raises(ib.ReportError, match="no 'BW average"):
        ib.parse("Couldn't connect to localhost:18515\n")
    header = sample.split(" 8388608")[0]
    with pytest.raises(ib.ReportError, match="expected one result row, found 0"):
        ib.parse(header)


def test_ib_hcas_from_sysfs(tmp_path):
    for dev, layer in (("mlx5_0", "InfiniBand"), ("mlx5_1", "Ethernet"), ("mlx5_2", "InfiniBand")):
        port = tmp_path / dev / "ports" / "1"
        port.mkdir(parents=True)
        (port / "link_layer").write_text(layer + "\n")
    assert ib.hcas(tmp_path) == ["mlx5_0", "mlx5_2"]
    assert ib.hcas(tmp_path / "missing") == []
