"""The environment a test runs ansible-playbook in.

Why one place: every integration test that runs a play of its own built the same environment by
hand (the caller's ``ANSIBLE_*`` settings dropped, so a developer's or CI's own never leak into
the test; the project's ``ansible.cfg``; Ansible's local temp under the test's directory) and
then its own settings on top. Here the common part is written once.
"""

from __future__ import annotations

import os
from pathlib import Path

from racksmith.testing.plugins import REPO

__all__ = ["playbook_env"]


def playbook_env(tmp: Path, **settings: str) -> dict[str, str]:
    """This process's environment without its ``ANSIBLE_*`` variables, with the project's
    ``ansible.cfg`` and Ansible's local temp under ``tmp``, then ``settings`` (which win)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
    )
    env.update(settings)
    return env
