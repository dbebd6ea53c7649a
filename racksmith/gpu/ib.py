"""Per-HCA ``ib_write_bw`` with GPUDirect (``--use_cuda``): a server and a client on the same
HCA (loopback, as Azure's per-HCA gate does), one HCA at a time, each with the GPU of the
same index. A loopback does not exercise cables or switches; the fabric burn-in does.

No InfiniBand hardware was available while this was written: ``parse`` follows perftest's
documented report layout and is tested on a sample in that layout (tests/fixtures/ib/),
which the README there marks as constructed, not captured.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from .rules import IbResult

_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+))?\s*$")


class ReportError(ValueError):
    pass


def parse(text: str) -> float:
    """The ``BW average[Gb/sec]`` of an ``ib_write_bw --report_gbits`` report."""
    if "BW average[Gb/sec]" not in text:
        raise ReportError("no 'BW average[Gb/sec]' column (was --report_gbits given?)")
    rows = []
    header_seen = False
    for line in text.splitlines():
        if "BW average[Gb/sec]" in line:
            header_seen = True
            continue
        match = _ROW.match(line) if header_seen else None
        if match:
            rows.append(float(match.group(4)))
    if len(rows) != 1:
        raise ReportError(f"expected one result row, found {len(rows)}")
    return rows[0]


def hcas(sysfs: Path = Path("/sys/class/infiniband")) -> list[str]:
    if not sysfs.is_dir():
        return []
    out = []
    for device in sorted(sysfs.iterdir()):
        layer = device / "ports" / "1" / "link_layer"
        if layer.is_file() and layer.read_text().strip() == "InfiniBand":
            out.append(device.name)
    return out


def run(
    devices: list[str], *, size: int = 8388608, iters: int = 5000, port: int = 18515
) -> list[IbResult]:
    results = []
    for gpu, hca in enumerate(devices):
        base = [
            "ib_write_bw",
            "-d",
            hca,
            "-F",
            "--report_gbits",
            "-s",
            str(size),
            "-n",
            str(iters),
            f"--use_cuda={gpu}",
            "-p",
            str(port + gpu),
        ]
        try:
            server = subprocess.Popen(
                base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        except FileNotFoundError:
            results.append(IbResult(hca, gpu, None, "ib_write_bw not installed (perftest)"))
            continue
        time.sleep(1.0)
        try:
            client = subprocess.run(
                [*base, "localhost"], capture_output=True, text=True, timeout=120
            )
            server.wait(timeout=30)
            results.append(IbResult(hca, gpu, parse(client.stdout)))
        except (subprocess.TimeoutExpired, ReportError) as exc:
            results.append(IbResult(hca, gpu, None, f"{type(exc).__name__}: {exc}"))
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(timeout=5)
    return results
