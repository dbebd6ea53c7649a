"""What ``racksmith diagnose hang`` runs on each host: one look at its training processes.

Sent as a script to the host's own ``python3`` (``python3 - CONFIG``, over SSH stdin, or
locally), so it is standard library only, Python 3.10+, and imports nothing else from
racksmith. It prints exactly one JSON document on stdout:

- every training process: a process whose environment has ``RANK`` and ``WORLD_SIZE`` (what
  torchrun, torch.distributed.launch, Slurm wrappers and mpirun set); its dataloader workers
  and other children that inherit the same ``RANK`` are left out;
- for each, its ``py-spy dump --json`` (``--native`` first when asked; on failure the plain
  dump, and the reason native frames are missing), a few launcher variables, and whether it has
  the NVIDIA control device open (a CUDA process);
- PyTorch flight-recorder dumps of those ranks where the files exist
  (``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` / ``TORCH_FR_DUMP_TEMP_FILE`` + rank): read as JSON, or
  as a pickle that may hold only plain containers (anything else is refused, never executed);
- the kernel log's last lines (``dmesg``, else ``journalctl -k``).

Nothing here decides anything: racksmith.triage.diagnose.hang reads this document on the controller.
Every step has its own timeout and a step that fails says why in the document; the script
never raises past ``main``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

SCHEMA = "racksmith.diagnose.probe/v1"
#: Launcher variables reported per process (never the whole environment: it holds secrets).
ENV_KEYS = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES",
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_TRACE_BUFFER_SIZE",
    "TORCH_FR_BUFFER_SIZE",
)  # fmt: skip
#: PyTorch's default dump prefix when the variable is unset (ProcessGroupNCCL.hpp).
DEFAULT_FR_PREFIX = "/tmp/nccl_trace_rank_"  # noqa: S108 (PyTorch's own default path)
MAX_FR_BYTES = 64 << 20
KERNEL_LINES = 400


def _environ(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat")
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat.rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0


def _uses_cuda(pid: int) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/nvidiactl":
                return True
        except OSError:
            continue
    return False


def find_ranks(match: str = "") -> tuple[list[dict], list[str]]:
    """Training processes (see the module doc) and the processes we could not read."""
    found: dict[int, dict] = {}
    unreadable: list[str] = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        cmdline = _read(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
        if not cmdline:
            continue  # a kernel thread, or gone
        env = _environ(pid)
        if env is None:
            if match and match in cmdline:
                unreadable.append(f"pid {pid} ({cmdline[:80]}): environment unreadable")
            continue
        if "RANK" not in env or "WORLD_SIZE" not in env:
            continue
        if match and match not in cmdline:
            continue
        found[pid] = {
            "pid": pid,
            "ppid": _ppid(pid),
            "cmdline": cmdline[:500],
            "env": {k: env[k] for k in ENV_KEYS if k in env},
        }
    ranks = [
        p
        for p in found.values()
        if not (p["ppid"] in found and found[p["ppid"]]["env"].get("RANK") == p["env"]["RANK"])
    ]
    for p in ranks:
        p["uses_cuda"] = _uses_cuda(p["pid"])
    return sorted(ranks, key=lambda p: p["pid"]), unreadable


def _run(argv: list[str], timeout: float) -> tuple[int | None, str, str]:
    try:
        proc = subprocess.run(  # a fixed argv, no shell
            argv, capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout:.1f} s"
    except OSError as exc:
        return None, "", str(exc)
    return (
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def _dump(tool: str, pid: int, native: bool, timeout: float) -> tuple[dict | None, str]:
    argv = [tool, "dump", "--json", "--pid", str(pid)] + (["--native"] if native else [])
    start = time.monotonic()
    rc, out, err = _run(argv, timeout)
    if rc != 0:
        return None, (err.strip().splitlines() or [f"exit {rc}"])[-1][:300]
    try:
        threads = json.loads(out)
    except ValueError as exc:
        return None, f"py-spy printed no JSON ({exc})"
    return {
        "threads": threads,
        "native": native,
        "notes": [],
        "seconds": round(time.monotonic() - start, 3),
    }, ""


#: The native dump's share of the probe's budget: it is extra evidence, never worth the whole
#: deadline (reading libtorch's symbols took over 10 s on a loaded machine).
NATIVE_SHARE = 0.4


def py_spy(tool: str, pid: int, native: bool, until: float) -> dict:
    """One process's stacks: the Python-only dump first (fast: it is what the ranks are grouped
    by), then, within its share of the budget, the dump with native frames (slow on the first
    read of a large library such as libtorch's symbols), which replaces it when it succeeds."""
    start = time.monotonic()
    plain, why = _dump(tool, pid, False, max(0.5, until - start))
    if plain is None:
        return {"error": f"py-spy dump failed: {why}"}
    left = min(until - time.monotonic(), NATIVE_SHARE * (until - start))
    if native and left >= 1.0:
        with_native, why = _dump(tool, pid, True, left)
        if with_native is not None:
            return with_native
        plain["notes"].append(f"native frames unavailable: {why}")
    elif native:
        plain["notes"].append("native frames unavailable: no time left in the budget")
    return plain


class _PlainUnpickler(pickle.Unpickler):
    """Flight-recorder pickles hold dicts, lists, tuples, strings and numbers: nothing that
    needs a class, so any class reference is refused (a pickle could otherwise run code)."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refused: the dump names {module}.{name}")


def flight_recorder(env: dict[str, str]) -> dict:
    """The rank's flight-recorder dump, if its file exists; ``{}`` when there is none."""
    rank = env.get("RANK", "")
    prefixes = [env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"), env.get("TORCH_FR_DUMP_TEMP_FILE")]
    paths = []
    for prefix in [p for p in prefixes if p] or [DEFAULT_FR_PREFIX]:
        for path in (f"{prefix}{rank}", f"{prefix}{rank}.json"):
            if path not in paths and os.path.isfile(path):
                paths.append(path)
    if not paths:
        return {}
    path = max(paths, key=lambda p: os.stat(p).st_mtime)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FR_BYTES + 1)
    except OSError as exc:
        return {"path": path, "error": f"unreadable: {exc}"}
    if len(raw) > MAX_FR_BYTES:
        return {"path": path, "error": f"larger than {MAX_FR_BYTES} bytes"}
    try:
        data = json.loads(raw)
    except ValueError:
        try:
            data = _PlainUnpickler(io.BytesIO(raw)).load()
        except Exception as exc:  # any malformed pickle is a reason, not a crash
            return {"path": path, "error": f"neither JSON nor a plain pickle: {exc}"}
    try:
        text = json.dumps(data, default=repr)
    except (TypeError, ValueError) as exc:
        return {"path": path, "error": f"not representable as JSON: {exc}"}
    return {"path": path, "mtime": os.stat(path).st_mtime, "dump": json.loads(text)}


def kernel_log(timeout: float) -> dict:
    tried = []
    for argv in (
        ["dmesg", "--time-format", "iso"],
        ["journalctl", "-k", "-b", "-o", "short-iso", "--no-pager", "-n", str(KERNEL_LINES)],
    ):
        if not shutil.which(argv[0]):
            tried.append(f"{argv[0]}: not installed")
            continue
        rc, out, err = _run(argv, timeout)
        lines = out.splitlines()
        if rc == 0 and lines and not (argv[0] == "journalctl" and lines[0].startswith("-- No")):
            return {"source": argv[0], "lines": lines[-KERNEL_LINES:]}
        reason = (err.strip().splitlines() or [f"exit {rc}, {len(lines)} lines"])[-1][:200]
        tried.append(f"{argv[0]}: {reason}")
    return {"error": "; ".join(tried)}


def find_py_spy(candidates: list[str]) -> str | None:
    for candidate in candidates:
        path = shutil.which(candidate) if os.sep not in candidate else candidate
        if path and os.access(path, os.X_OK):
            return path
    return None


def probe(config: dict) -> dict:
    start = time.monotonic()
    budget = float(config.get("budget", 10))  # seconds for the whole probe
    until = start + budget
    doc: dict = {"schema": SCHEMA, "hostname": os.uname().nodename, "euid": os.geteuid()}
    ranks, unreadable = find_ranks(str(config.get("match", "")))
    doc["unreadable"] = unreadable
    tool = find_py_spy(list(config.get("py_spy", ["py-spy"])))
    doc["py_spy"] = tool
    with ThreadPoolExecutor(max_workers=max(1, len(ranks) + 1)) as pool:
        kernel = pool.submit(kernel_log, max(0.5, min(5.0, budget)))
        dumps = [
            pool.submit(py_spy, tool, p["pid"], bool(config.get("native", True)), until)
            if tool
            else None
            for p in ranks
        ]
        for p, dump in zip(ranks, dumps, strict=True):
            p["stacks"] = dump.result() if dump else {"error": "py-spy not found on the host"}
            p["flight_recorder"] = flight_recorder(p["env"])
        doc["kernel"] = kernel.result()
    doc["ranks"] = ranks
    doc["seconds"] = round(time.monotonic() - start, 3)
    return doc


def main(argv: list[str]) -> int:
    try:
        config = json.loads(argv[1]) if len(argv) > 1 else {}
        doc = probe(config)
    except Exception as exc:  # the controller reads the reason
        doc = {"schema": SCHEMA, "error": f"probe failed: {type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(doc) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
