"""LAB STAND-IN apt repositories for the NVIDIA packages the lab cannot fetch.

Debian's archive has the driver, Docker and the node exporter, but not NVIDIA's container
toolkit, DCGM, its exporter or fabric manager, and lab hosts reach nothing else. So the lab
builds stand-in packages whose metadata (names, versions, dependencies, conflicts) is replayed
from recorded package records (``index/``, :mod:`racksmith.lab.debs.control`), with the real
file paths and systemd units and programs that behave like the real ones as far as a GPU-less
host allows and mark every line they print ``LAB STAND-IN``. They are published as signed
flat apt repositories laid out like NVIDIA's (``/libnvidia-container/stable/deb/amd64/``,
``/compute/cuda/repos/<os>/x86_64/``), so the roles' repository set-up, signed-by keyrings,
pins, holds and service wiring run for real against a "site mirror" on the lab bridge.

- :mod:`racksmith.lab.debs.control`: control-paragraph parsing and the package records.
- :mod:`racksmith.lab.debs.packages`: what each stand-in package contains (pure data).
- :mod:`racksmith.lab.debs.build`: ``dpkg-deb`` builds, apt indexes, signing, cache by hash.
- :mod:`racksmith.lab.debs.serve`: the HTTP server on the bridge and its daemon record.
"""
