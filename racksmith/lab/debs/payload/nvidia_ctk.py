#!/usr/bin/python3
"""LAB STAND-IN ``nvidia-ctk`` (NVIDIA Container Toolkit CLI 1.17.8).

Implements what racksmith's roles call: ``--version`` and ``runtime configure --runtime=docker
[--set-as-default] [--config=PATH]``, which edits Docker's ``daemon.json`` the way the real
tool does (adds ``runtimes.nvidia``; with ``--set-as-default`` also ``default-runtime``).
There is no GPU on a lab host, so ``cdi`` and other commands refuse with a clear message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

try:
    from racksmith_standin import TAG, Parser, package_version, say  # on the lab host
except ImportError:  # in the checkout (unit tests)
    from racksmith.lab.debs.payload.racksmith_standin import (
        TAG,
        Parser,
        package_version,
        say,
    )

VERSION = package_version("1.17.8")
DOCKER_CONFIG = "/etc/docker/daemon.json"
RUNTIME_PATH = "nvidia-container-runtime"


def configure_docker(config: dict, runtime: str, set_as_default: bool) -> dict:
    """The daemon.json the real ``nvidia-ctk runtime configure`` writes for this input."""
    updated = dict(config)
    runtimes = dict(updated.get("runtimes") or {})
    runtimes[runtime] = {"args": [], "path": RUNTIME_PATH}
    updated["runtimes"] = runtimes
    if set_as_default:
        updated["default-runtime"] = runtime
    return updated


def _load(path: Path) -> dict:
    if not path.exists() or not path.read_text().strip():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise SystemExit(f"{TAG}: ERROR unable to load config {path}: {exc}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"{TAG}: ERROR unable to load config {path}: not a JSON object")
    return data


def runtime_configure(args: argparse.Namespace) -> int:
    if args.runtime != "docker":
        say(f"ERROR the stand-in configures docker only, not {args.runtime}", sys.stderr)
        return 1
    path = Path(args.config or DOCKER_CONFIG)
    updated = configure_docker(_load(path), args.nvidia_runtime_name, args.set_as_default)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".nvidia-ctk.tmp")
    tmp.write_text(json.dumps(updated, indent=4, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    tmp.replace(path)
    say(f"INFO Wrote updated config to {path}")
    say("INFO It is recommended that docker daemon be restarted.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="nvidia-ctk", description=f"{TAG} nvidia-ctk")
    parser.add_argument("--version", "-v", action="store_true")
    sub = parser.add_subparsers(dest="command")
    runtime = sub.add_parser("runtime").add_subparsers(dest="action")
    conf = runtime.add_parser("configure")
    conf.add_argument("--runtime", default="docker")
    conf.add_argument("--config", default="")
    conf.add_argument("--set-as-default", action="store_true")
    conf.add_argument("--nvidia-runtime-name", default="nvidia")
    args, rest = parser.parse_known_args(argv)
    if args.version:
        say(f"NVIDIA Container Toolkit CLI version {VERSION}")
        say("commit: lab-standin")
        return 0
    if args.command == "runtime" and getattr(args, "action", None) == "configure" and not rest:
        return runtime_configure(args)
    say(
        f"ERROR `nvidia-ctk {' '.join(sys.argv[1:] if argv is None else argv)}` is not"
        " implemented by the stand-in (there is no GPU on this lab host)",
        sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
