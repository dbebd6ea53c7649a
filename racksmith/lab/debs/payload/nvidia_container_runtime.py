#!/usr/bin/python3
"""LAB STAND-IN ``nvidia-container-runtime`` (and its hook): an OCI runtime shim.

The real runtime adds NVIDIA's prestart hook to the container spec and then runs ``runc``.
There is no GPU to inject on a lab host, so the stand-in logs the call (each line marked
``LAB STAND-IN``) to ``/var/log/nvidia-container-runtime.log`` and hands over to ``runc``
unchanged; a container run with ``--runtime=nvidia`` therefore starts exactly as with runc.
It prints nothing itself: containerd parses an OCI runtime's output.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

try:
    from racksmith_standin import TAG  # on the lab host
except ImportError:  # in the checkout (unit tests)
    from racksmith.lab.debs.payload.racksmith_standin import TAG

LOG = "/var/log/nvidia-container-runtime.log"
RUNC_CANDIDATES = ("/usr/sbin/runc", "/usr/bin/runc")


def _log(message: str) -> None:
    try:
        with open(LOG, "a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {TAG}: {message}\n")
    except OSError:
        pass  # logging is best effort; the container must not fail because of it


def main() -> int:
    name = os.path.basename(sys.argv[0])
    if name.endswith("-hook"):
        _log(f"{name} {' '.join(sys.argv[1:])}: no GPU to inject on a lab host")
        return 0
    runc = next((p for p in RUNC_CANDIDATES if os.access(p, os.X_OK)), None) or shutil.which("runc")
    if runc is None:
        _log("runc not found; cannot run the container")
        sys.stderr.write(f"{TAG}: nvidia-container-runtime: runc not found\n")
        return 1
    _log(f"passing through to {runc}: {' '.join(sys.argv[1:])}")
    os.execv(runc, [runc, *sys.argv[1:]])  # noqa: S606 (an OCI shim execs runc)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
