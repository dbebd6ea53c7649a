"""LAB TEST HOSTS ONLY: keep the compiled code of Python modules imported from zip archives.

Installed into the test-host image (racksmith.lab.image) and loaded at interpreter start by a
``.pth`` line. Why: every Ansible task ships its module as a zip (AnsiballZ), and Python's
zipimport compiles each ``module_utils`` file in it from source on every run, about 40 ms of
CPU per module run. A lab runs its simulated servers on the controller's own cores, so that
compile, repeated for every task on every host, is a large share of what a lab host costs.
A real server pays it on its own CPUs; nothing outside the lab image installs this.

The cache is keyed by the interpreter's bytecode magic, the file's path inside the archive and
its source, so a changed Ansible or Python compiles afresh. Code read from the cache gets the
file name of the archive imported now, so tracebacks name the real file. Only a writer that
may write the cache directory (root, which Ansible's ``become`` is) adds to it; anything that
goes wrong falls back to Python's own compile.
"""

from __future__ import annotations

import marshal
import os
import stat
import zipimport

CACHE_DIR = "/var/cache/racksmith-lab-pyc"

#: what zipimport compiles sources with (Python 3.8 and later; None where it has no such hook)
_compile_source = getattr(zipimport, "_compile_source", None)
_CODE = type(compile("", "", "exec"))


def _key(pathname: str, source: bytes) -> str:
    # Imported here, not at the top: the .pth line imports this module at EVERY interpreter
    # start, and these two were most of that cost (1.3 s of a 1.7 s start in the emulated VM).
    import hashlib
    import importlib.util

    inner = pathname.rsplit(".zip" + os.sep, 1)[-1]
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER + inner.encode() + b"\0" + source)
    return digest.hexdigest()


def _renamed(code, filename: str):
    consts = tuple(_renamed(c, filename) if isinstance(c, _CODE) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def cached_compile(pathname: str, source: bytes, cache_dir: str = CACHE_DIR):
    """``zipimport._compile_source`` with a cache: the same code, compiled once per host."""
    path = os.path.join(cache_dir, _key(pathname, source))
    try:
        with open(path, "rb") as f:
            code = marshal.load(f)  # noqa: S302 - a directory only its owner may write (install)
        if isinstance(code, _CODE):
            return _renamed(code, pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile_source(pathname, source)
    if os.access(cache_dir, os.W_OK):
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                marshal.dump(code, f)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return code


def _trusted(cache_dir: str) -> bool:
    """A directory that only root (or this user) can write: its entries are run as code."""
    try:
        st = os.stat(cache_dir)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid in (0, os.geteuid()) and not st.st_mode & 0o022


def install(cache_dir: str = CACHE_DIR) -> bool:
    """Route zipimport's compile through the cache when ``cache_dir`` is a directory that only
    root (or this user) may write.

    The image's ``.pth`` line calls this at every interpreter start; importing the module does
    nothing by itself.
    """
    if _compile_source is None or not _trusted(cache_dir):
        return False
    zipimport._compile_source = lambda pathname, source: cached_compile(pathname, source, cache_dir)
    return True
