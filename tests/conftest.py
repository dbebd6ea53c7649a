"""Every test run writes its Ansible runs and health history to its own directory.

The report callback (plugins/callback/racksmith_report.py) puts each run and the health history
under ``RACKSMITH_RUNS_DIR`` (default: ``runs/`` beside the playbook, which for the checkout's
``site.yml`` is the checkout's own ``runs/``, the history ``racksmith golden rank --fleet``
reads). Set here for the whole session, before any test starts a subprocess, so no test run of
``site.yml`` or ``playbooks/*.yml`` ever lands in a user's history. Tests that name their own
``RACKSMITH_RUN_DIR`` keep it (it wins over this).
"""

from __future__ import annotations

import os
import tempfile


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        runs = tempfile.mkdtemp(prefix="racksmith-test-runs-")
    else:  # each xdist worker its own: it has its own os.environ
        runs = tempfile.mkdtemp(prefix=f"racksmith-test-runs-{config.workerinput['workerid']}-")
    os.environ["RACKSMITH_RUNS_DIR"] = runs
