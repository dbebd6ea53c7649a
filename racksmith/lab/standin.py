"""LAB STAND-IN: make a GPU-less host answer like a captured GPU host (``racksmith lab standin``).

It lives in the lab, not in the health agent that ships to real hosts: a production path must
never be able to replay a capture.

``install(capture, prefix)`` builds, under ``prefix``:

- ``bin/nvidia-smi`` and ``bin/dmesg``: one small script (``bin/replay-tool``) that prints the
  captured output for the arguments it was given, and exits 2 for any it has no capture of;
- ``sys/``: a sysfs tree with the captured PCI devices (and InfiniBand ports and CPU
  governors, when the capture has them);
- ``RACKSMITH_STANDIN``: a marker saying what is being replayed. The agent finds it next to
  the tools it ran (or the sysfs it read) and prints it on every report, so a replayed run can
  never pass for a real one.

Run the agent with ``PATH=<prefix>/bin:$PATH`` and ``--sysfs <prefix>/sys``. Everything
else (disks, kernel clock) is the stand-in host's own. Tests and the quick-suite benchmark
use the same builder, so what the lab replays is what the tests check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
from pathlib import Path

from racksmith.errors import UsageError
from racksmith.health.host import STANDIN_MARKER

#: The capture's file for each replayed command (argument tuples after the tool's name).
NVIDIA_SMI_FILES = {
    ("-q", "-x"): "smi_q.xml",
    ("-q",): "smi_q.txt",
    ("nvlink", "-s"): "nvlink-s.txt",
    ("nvlink", "-e"): "nvlink-e.txt",
    ("nvlink", "-c"): "nvlink-c.txt",
    ("topo", "-m"): "topo-m.txt",
    (): "nvidia-smi.txt",
}
DMESG_FILES = ("dmesg.txt", "dmesg-nvrm.txt")  # the full log if captured, else the filtered one

_TOOL = '''#!/usr/bin/env python3
"""LAB STAND-IN (racksmith.lab.standin): prints captured outputs; it is not a GPU tool."""
import json, os, sys
here = os.path.dirname(os.path.realpath(__file__))
capture = os.path.join(os.path.dirname(here), "capture")
with open(os.path.join(here, "replay-map.json")) as f:
    table = json.load(f)
tool = os.path.basename(sys.argv[0])
key = " ".join([tool] + sys.argv[1:])
name = table.get(key)
if name is None:
    sys.stderr.write("racksmith lab stand-in: no capture for `%s`\\n" % key)
    sys.exit(2)
with open(os.path.join(capture, name), "rb") as f:
    sys.stdout.buffer.write(f.read())
rc_file = os.path.join(capture, name + ".rc")
sys.exit(int(open(rc_file).read().strip()) if os.path.exists(rc_file) else 0)
'''


def install(capture: str | os.PathLike, prefix: str | os.PathLike, overlays=()) -> str:
    """Build the stand-in; return the marker text. ``overlays``: directories whose files
    replace the capture's (how failure fixtures are replayed)."""
    capture, prefix = Path(capture), Path(prefix)
    if not (capture / "smi_q.xml").is_file():
        raise FileNotFoundError(f"{capture}: not a capture directory (no smi_q.xml)")
    for sub in ("bin", "sys", "capture"):
        shutil.rmtree(prefix / sub, ignore_errors=True)
    shutil.copytree(capture, prefix / "capture")
    for overlay in overlays:
        for item in Path(overlay).iterdir():
            if item.is_file() and item.name != "README.md":
                shutil.copy2(item, prefix / "capture" / item.name)
    data = prefix / "capture"

    table = {}
    for args, name in NVIDIA_SMI_FILES.items():
        if (data / name).is_file():
            table[" ".join(("nvidia-smi", *args))] = name
    dmesg = next((n for n in DMESG_FILES if (data / n).is_file()), None)
    if dmesg:
        table["dmesg"] = dmesg
    bin_dir = prefix / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "replay-map.json").write_text(json.dumps(table, indent=1, sort_keys=True))
    tool = bin_dir / "replay-tool"
    tool.write_text(_TOOL)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for name in {"nvidia-smi", *(["dmesg"] if dmesg else [])}:
        (bin_dir / name).symlink_to("replay-tool")

    sysfs = prefix / "sys"
    if (data / "pci-sysfs.txt").is_file():
        build_pci_tree(parse_pci_capture((data / "pci-sysfs.txt").read_text()), sysfs)
    (sysfs / "bus/pci/devices").mkdir(parents=True, exist_ok=True)
    if (data / "ib-sysfs.json").is_file():
        build_files(json.loads((data / "ib-sysfs.json").read_text()), sysfs / "class/infiniband")
    if (data / "cpufreq.json").is_file():
        build_files(json.loads((data / "cpufreq.json").read_text()), sysfs / "devices/system/cpu")

    marker = f"replaying captured outputs from {capture.name}" + (
        f" with {', '.join(Path(o).name for o in overlays)} applied" if overlays else ""
    )
    (prefix / STANDIN_MARKER).write_text(marker + "\n")
    return marker


_PCI_LINE = re.compile(
    r"^/sys/bus/pci/devices/(?P<addr>\S+) class=(?P<cls>0x[0-9a-f]+)"
    r"(?: vendor=(?P<vendor>0x[0-9a-f]+))?"
    r" cur=(?P<cur>.+?)/x(?P<curw>\d+) max=(?P<max>.+?)/x(?P<maxw>\d+)\s*$"
)


def parse_pci_capture(text: str) -> dict[str, dict[str, str]]:
    """``pci-sysfs.txt`` lines (``/sys/bus/pci/devices/ADDR class=0x030200 [vendor=0x10de]
    cur=32.0 GT/s PCIe/x16 max=32.0 GT/s PCIe/x16``) -> sysfs attributes per device. The
    shared H200 capture lists NVIDIA functions only and has no vendor field, so a display
    class defaults to NVIDIA's vendor id."""
    devices = {}
    for line in text.splitlines():
        match = _PCI_LINE.match(line.strip())
        if not match:
            continue
        cls = match.group("cls")
        vendor = match.group("vendor") or ("0x10de" if cls.startswith("0x03") else "0x0000")
        devices[match.group("addr")] = {
            "class": cls,
            "vendor": vendor,
            "current_link_speed": match.group("cur").strip(),
            "current_link_width": match.group("curw"),
            "max_link_speed": match.group("max").strip(),
            "max_link_width": match.group("maxw"),
        }
    return devices


def build_pci_tree(devices: dict[str, dict[str, str]], sysfs: Path) -> None:
    for address, attrs in devices.items():
        build_files(attrs, sysfs / "bus/pci/devices" / address)


def build_files(tree: dict, root: Path) -> None:
    """Nested dict -> directories and files (values are file contents)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, value in tree.items():
        if isinstance(value, dict):
            build_files(value, root / name)
        else:
            (root / name).write_text(f"{value}\n")


def _cmd_standin(args: argparse.Namespace) -> int:
    for flag, path in (("--capture", args.capture), *(("--overlay", o) for o in args.overlay)):
        if not os.path.isdir(path):
            raise UsageError(f"lab standin {flag} {path}: no such directory")
    try:
        marker = install(args.capture, args.prefix, overlays=args.overlay)
    except OSError as exc:  # not a capture directory, or the prefix is not writable
        raise UsageError(f"lab standin: {exc}") from exc
    print(f"LAB STAND-IN installed under {args.prefix}: {marker}")
    return 0


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--capture", required=True, help="capture directory to replay")
    parser.add_argument("--prefix", required=True, help="where to build bin/ and sys/")
    parser.add_argument(
        "--overlay",
        action="append",
        default=[],
        help="directory whose files replace the capture's (failure fixtures)",
    )
    parser.set_defaults(func=_cmd_standin)
