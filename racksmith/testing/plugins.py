"""Load one of the collection's plugin files as a plain module, for tests.

Plugins live under ``plugins/`` and are imported by Ansible through the collection loader; a
unit test wants the file's functions without running Ansible, so it loads the file by path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load_plugin(relative: str | Path) -> ModuleType:
    """``plugins/filter/disks.py`` (relative to the checkout, or absolute) as a module."""
    path = Path(relative) if Path(relative).is_absolute() else REPO / relative
    if not path.is_file():
        raise FileNotFoundError(f"no plugin file {path}")
    spec = importlib.util.spec_from_file_location(f"racksmith_plugin_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plugin_filters(relative: str | Path) -> dict:
    """The filters a filter plugin file provides, by name."""
    return load_plugin(relative).FilterModule().filters()
