"""racksmith.gpu imports and decides without PyTorch (CI has none): torch is imported only
inside the functions that drive GPUs, and a host without torch is NOT FIT, undecided."""

from __future__ import annotations

import importlib.util
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


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_without_torch_the_load_checks_cannot_decide(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "racksmith.gpu",
            "run",
            "--profile",
            "h200-x2-vm",
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 2
    assert "NOT FIT (could not decide)" in proc.stdout
    assert "PyTorch is not installed: the load checks could not run" in proc.stdout
    assert (tmp_path / "out" / "load-report.json").is_file()


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
