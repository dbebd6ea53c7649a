"""The lab image's compile cache for zip-imported modules (racksmith/lab/data/zipimport_cache.py).

Exercised with Python's real zipimport on archives built here, the way AnsiballZ ships a module:
the second archive with the same source must not be compiled again, and its code must still name
its own file (a traceback from a lab host names the archive that ran).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
import zipfile
import zipimport
from pathlib import Path

import pytest

from racksmith.lab import image

HOOK = Path(image.__file__).parent / "data" / "zipimport_cache.py"
SOURCE = "def boom():\n    raise RuntimeError('from the archive')\n\nVALUE = 42\n"


@pytest.fixture
def hook(monkeypatch):
    """The hook module, loaded fresh, with zipimport restored afterwards."""
    monkeypatch.setattr(zipimport, "_compile_source", zipimport._compile_source)
    spec = importlib.util.spec_from_file_location("racksmith_lab_pyc_test", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    compiles = []
    real = module._compile_source

    def counting(pathname, source):
        compiles.append(pathname)
        return real(pathname, source)

    monkeypatch.setattr(module, "_compile_source", counting)
    module.compiles = compiles
    return module


def _import_from(archive: Path, name: str, source: str = SOURCE):
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"pkg_{name}/__init__.py", "")
        z.writestr(f"pkg_{name}/mod.py", source)
    sys.path.insert(0, str(archive))
    try:
        return importlib.import_module(f"pkg_{name}.mod")
    finally:
        sys.path.remove(str(archive))
        for key in [k for k in sys.modules if k.startswith(f"pkg_{name}")]:
            del sys.modules[key]


def test_second_archive_reuses_the_code_and_names_its_own_file(hook, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    assert hook.install(str(cache)) is True
    first = _import_from(tmp_path / "a.zip", "a")
    assert first.VALUE == 42
    compiled = len(hook.compiles)
    assert compiled == 2  # __init__ and mod, from source
    assert len(os.listdir(cache)) == 2
    second = _import_from(tmp_path / "b.zip", "a")  # same paths and source, another archive
    assert second.VALUE == 42
    assert len(hook.compiles) == compiled, "the same source was compiled again"
    with pytest.raises(RuntimeError) as caught:
        second.boom()
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert frames[-1].filename == str(tmp_path / "b.zip" / "pkg_a" / "mod.py")
    assert frames[-1].name == "boom"


def test_changed_source_is_compiled_afresh(hook, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    hook.install(str(cache))
    _import_from(tmp_path / "a.zip", "c")
    changed = _import_from(tmp_path / "b.zip", "c", SOURCE.replace("42", "43"))
    assert changed.VALUE == 43
    assert [Path(p).name for p in hook.compiles] == ["__init__.py", "mod.py", "mod.py"]


def test_a_damaged_entry_falls_back_to_compiling(hook, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    hook.install(str(cache))
    _import_from(tmp_path / "a.zip", "d")
    for entry in cache.iterdir():
        entry.write_bytes(b"not marshal data")
    assert _import_from(tmp_path / "b.zip", "d").VALUE == 42
    assert len(hook.compiles) == 4


def test_a_reader_that_may_not_write_leaves_the_cache_alone(hook, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    hook.install(str(cache))
    monkeypatch.setattr(hook.os, "access", lambda path, mode: False)
    assert _import_from(tmp_path / "a.zip", "e").VALUE == 42
    assert list(cache.iterdir()) == []


def test_without_a_safe_cache_directory_nothing_is_installed(hook, tmp_path):
    before = zipimport._compile_source
    assert hook.install(str(tmp_path / "absent")) is False
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone could plant code there
    assert hook.install(str(shared)) is False
    assert zipimport._compile_source is before


def test_the_image_installs_it_and_checks_it_took():
    script = image.CUSTOMIZE
    assert image.ZIPIMPORT_CACHE == HOOK.read_text()
    assert image.ZIPIMPORT_CACHE in script
    assert "racksmith_lab_pyc.install()" in script
    assert '__module__ == "racksmith_lab_pyc"' in script
