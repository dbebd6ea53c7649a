"""Role lab_gpu_standin (LAB ONLY): which stand-in each host replays.

One build per distinct capture + overlays (healthy hosts share one): the controller builds a
handful of trees and an archive of each, and each host gets one file. A build is named after
its sources, readable and unique: ``h200-x2-1a2b3c4d``, ``h200-x2+xid79-5e6f7a8b`` (basenames,
then the first 8 hex digits of the SHA-1 of the full paths joined by ``|``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence


def build(capture: str, overlays: Sequence[str] = ()) -> dict:
    """The build for one host: its capture, its overlays (in order) and the build's name."""
    if not str(capture or "").strip():
        raise ValueError("lab_gpu_standin: the capture folder is empty")
    sources = [str(capture), *(str(o) for o in overlays or [])]
    digest = hashlib.sha1("|".join(sources).encode()).hexdigest()[:8]  # noqa: S324 (a name)
    name = "+".join(os.path.basename(s.rstrip("/")) for s in sources)
    return {"capture": sources[0], "overlays": sources[1:], "name": f"{name}-{digest}"}


def builds(hosts: Sequence[str], captures: Sequence[str], overlays: Sequence) -> dict:
    """Each host's build, by host; ``captures`` and ``overlays`` follow ``hosts``' order."""
    hosts, captures, overlays = list(hosts), list(captures), list(overlays)
    if not len(hosts) == len(captures) == len(overlays):
        raise ValueError(
            f"lab_gpu_standin: {len(hosts)} hosts but {len(captures)} captures and "
            f"{len(overlays)} overlay lists"
        )
    return {h: build(c, o) for h, c, o in zip(hosts, captures, overlays, strict=True)}
