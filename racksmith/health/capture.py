"""Save a real host's raw outputs as a fixture directory: every command the agent runs and
every sysfs value it reads, in the layout ``replay`` understands (the same file names as the
shared H200 capture). Fixtures made this way are what the parsers are tested on."""

from __future__ import annotations

import json
import os
import platform
import re
import time
from pathlib import Path

from . import commands
from .host import Host
from .parsers.sysfs import PCI_LINK_ATTRS, VENDOR_MELLANOX, VENDOR_NVIDIA, pci_link

QUERY_FIELDS = (
    "index,name,uuid,pci.bus_id,serial,vbios_version,driver_version,inforom.img,"
    "ecc.mode.current,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.volatile.total,"
    "retired_pages.pending,remapped_rows.pending,remapped_rows.failure,"
    "remapped_rows.correctable,remapped_rows.uncorrectable,clocks_event_reasons.active,"
    "gpu_recovery_action,temperature.gpu,power.draw,power.limit,memory.total,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
    "persistence_mode,mig.mode.current,fabric.state,fabric.status"
)

#: file name -> command. Names match tests/fixtures/h200x2 (the shared capture).
COMMANDS = {
    "nvidia-smi.txt": ("nvidia-smi",),
    "query-gpu.csv": ("nvidia-smi", f"--query-gpu={QUERY_FIELDS}", "--format=csv"),
    "smi_q.txt": ("nvidia-smi", "-q"),
    "smi_q.xml": ("nvidia-smi", "-q", "-x"),
    "topo-m.txt": ("nvidia-smi", "topo", "-m"),
    "nvlink-s.txt": ("nvidia-smi", "nvlink", "-s"),
    "nvlink-e.txt": ("nvidia-smi", "nvlink", "-e"),
    "nvlink-c.txt": ("nvidia-smi", "nvlink", "-c"),
    "dmesg.txt": ("dmesg",),
    "df.txt": ("df", "-P"),
    "uname.txt": ("uname", "-a"),
}
_DMESG_FILTER = re.compile(r"nvrm|xid|nvidia|pcie|aer", re.IGNORECASE)


def capture(outdir: str | os.PathLike) -> list[Path]:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    host = Host()
    written, record = [], {}
    for name, argv in COMMANDS.items():
        result = commands.run(argv, 60.0)
        record[name] = {
            "command": result.command,
            "rc": result.rc,
            "duration_s": round(result.duration_s, 3),
            "error": "" if result.ok else result.describe_failure(),
        }
        if result.stdout or result.ok:
            written.append(_write(out / name, result.stdout))
        if result.rc not in (0, None):
            written.append(_write(out / f"{name}.rc", f"{result.rc}\n"))
    if (out / "dmesg.txt").is_file():
        lines = (out / "dmesg.txt").read_text().splitlines()
        written.append(
            _write(
                out / "dmesg-nvrm.txt",
                "\n".join(ln for ln in lines if _DMESG_FILTER.search(ln)) + "\n",
            )
        )
    for name, source in (
        ("driver-version.txt", "/proc/driver/nvidia/version"),
        ("proc-modules.txt", "/proc/modules"),
        ("uptime.txt", "/proc/uptime"),
        ("os-release.txt", "/etc/os-release"),
    ):
        try:
            written.append(_write(out / name, Path(source).read_text()))
        except OSError as exc:
            record[name] = {"error": str(exc)}
    written.append(_write(out / "pci-sysfs.txt", _pci_capture(host)))
    ib = _tree(
        Path("/sys/class/infiniband"), ("fw_ver",), ("state", "phys_state", "rate", "link_layer")
    )
    if ib:
        written.append(_write(out / "ib-sysfs.json", json.dumps(ib, indent=1)))
    governors = {
        cpu.name: {
            "cpufreq": {"scaling_governor": (cpu / "cpufreq/scaling_governor").read_text().strip()}
        }
        for cpu in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*"))
        if (cpu / "cpufreq/scaling_governor").is_file()
    }
    if governors:
        written.append(_write(out / "cpufreq.json", json.dumps(governors, indent=1)))
    try:
        clock = host.clock_state()
        record["adjtimex"] = {
            "state": clock.state,
            "status": clock.status,
            "maxerror_us": clock.maxerror_us,
            "esterror_us": clock.esterror_us,
            "synchronized": clock.synchronized,
        }
    except OSError as exc:
        record["adjtimex"] = {"error": str(exc)}
    meta = {
        "captured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "outputs": record,
    }
    written.append(_write(out / "capture.json", json.dumps(meta, indent=1) + "\n"))
    return written


def _pci_capture(host: Host) -> str:
    """Same format as the shared capture, plus a vendor field and HCAs/NVMe drives."""
    root = host.sys("bus/pci/devices")
    devices = sorted(root.iterdir()) if root.is_dir() else []
    lines = [d.name for d in devices]
    for device in devices:
        attrs = host.read_attrs(device, PCI_LINK_ATTRS)
        link = pci_link(device.name, attrs)
        if link.kind or link.vendor in (VENDOR_NVIDIA, VENDOR_MELLANOX):
            lines.append(
                f"{device} class={attrs.get('class', '?')} vendor={attrs.get('vendor', '?')}"
                f" cur={attrs.get('current_link_speed', '?')}"
                f"/x{attrs.get('current_link_width', '0')}"
                f" max={attrs.get('max_link_speed', '?')}/x{attrs.get('max_link_width', '0')}"
            )
    return "\n".join(lines) + "\n"


def _tree(root: Path, device_attrs: tuple[str, ...], port_attrs: tuple[str, ...]) -> dict:
    if not root.is_dir():
        return {}
    out: dict = {}
    for device in sorted(root.iterdir()):
        entry: dict = {
            a: (device / a).read_text().strip() for a in device_attrs if (device / a).is_file()
        }
        ports: dict = {}
        for port in sorted((device / "ports").iterdir()) if (device / "ports").is_dir() else []:
            values: dict = {
                a: (port / a).read_text().strip() for a in port_attrs if (port / a).is_file()
            }
            counters = port / "counters"
            if counters.is_dir():
                values["counters"] = {
                    c.name: c.read_text().strip() for c in sorted(counters.iterdir())
                }
            ports[port.name] = values
        entry["ports"] = ports
        out[device.name] = entry
    return out


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
