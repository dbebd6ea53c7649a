"""Write a small YAML inventory for a test that runs ansible-playbook.

Why: tests that drive real playbooks against local or lab hosts each need an inventory file
of ``all: {hosts, vars}``; one writer keeps them in one shape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_inventory(path: Path, hosts: dict[str, dict[str, Any]], **group_vars: Any) -> Path:
    """``path`` holding the group ``all`` with ``hosts`` (name -> host variables) and
    ``group_vars``; returns ``path``."""
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts, "vars": group_vars}}))
    return path
