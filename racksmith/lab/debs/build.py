"""Build the LAB STAND-IN packages with ``dpkg-deb`` and publish them as signed flat apt
repositories, cached by a hash of their content.

The result is immutable: ``$RACKSMITH_CACHE_DIR/labrepo-<hash>/`` (default
``/var/cache/racksmith``) holds one directory per repository path of
:mod:`racksmith.lab.debs.packages`, each with its ``.deb`` files, ``Packages(.gz)``,
``Release``, ``InRelease``, ``Release.gpg`` and the public key ``racksmith-lab.asc``. A change
to any package (control data, file content, maintainer script) changes the hash, so a stale
repository is never served. The signing key is made for each build and its secret half is
thrown away with the build directory: nothing can be signed with it afterwards.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from racksmith.lab.debs.packages import Package, all_packages
from racksmith.lab.errors import LabError
from racksmith.lab.paths import cache_dir

#: Bump when the build recipe itself (not the package data) changes.
RECIPE = "racksmith-labrepo-2"
KEY_NAME = "racksmith-lab.asc"
KEY_UID = "racksmith lab repository (LAB STAND-IN) <lab@racksmith.invalid>"
READY = ".ready"


@dataclass(frozen=True)
class LabRepo:
    root: Path  # serve this directory
    digest: str
    repos: tuple[str, ...]  # repository paths under root
    debs: tuple[str, ...]  # "repo/file.deb", in build order


def digest(packages: Sequence[Package]) -> str:
    """Hash of everything that ends up in the repositories."""
    h = hashlib.sha256(RECIPE.encode())
    for pkg in packages:
        h.update(pkg.control(0).encode())
        h.update(pkg.repo.encode() + pkg.postinst.encode())
        for f in pkg.files:
            h.update(f"{f.path}\0{f.mode:o}\0{f.conffile}\0{f.link}\0".encode())
            h.update(hashlib.sha256(f.content).digest())
    return h.hexdigest()[:16]


def deb_filename(pkg: Package) -> str:
    """Debian's file name drops the epoch (``1:3.3.9`` -> ``_3.3.9_``)."""
    return f"{pkg.name}_{pkg.version.split(':', 1)[-1]}_amd64.deb"


def _run(argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, check=False, **kwargs)
    except OSError as exc:
        raise LabError(f"cannot run {argv[0]}: {exc}") from exc
    if done.returncode != 0:
        raise LabError(f"{' '.join(argv[:3])} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def stage(pkg: Package, where: Path) -> Path:
    """The package's tree with its DEBIAN/ control files, ready for ``dpkg-deb --build``."""
    root = where / pkg.name
    size = 0
    for f in pkg.files:
        target = root / f.path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.link:
            target.symlink_to(f.link)
            continue
        target.write_bytes(f.content)
        target.chmod(f.mode)
        size += len(f.content)
    debian = root / "DEBIAN"
    debian.mkdir(parents=True)
    (debian / "control").write_text(pkg.control(max(1, (size + 1023) // 1024)))
    conffiles = [f.path for f in pkg.files if f.conffile]
    if conffiles:
        (debian / "conffiles").write_text("\n".join(conffiles) + "\n")
    if pkg.postinst:
        script = debian / "postinst"
        script.write_text(f"#!/bin/sh\n# {pkg.name}: LAB STAND-IN\nset -e\n{pkg.postinst}")
        script.chmod(0o755)
    return root


def packages_entry(control: str, filename: str, blob: bytes) -> str:
    """One paragraph of a ``Packages`` index: the control file plus where and what the .deb is."""
    return (
        control.rstrip("\n")
        + f"\nFilename: ./{filename}\nSize: {len(blob)}"
        + f"\nMD5sum: {hashlib.md5(blob).hexdigest()}"  # noqa: S324 (apt's index format)
        + f"\nSHA256: {hashlib.sha256(blob).hexdigest()}\n"
    )


def release_file(files: dict[str, bytes], *, when: float) -> str:
    date = time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime(when))
    lines = [
        "Origin: racksmith lab (LAB STAND-IN)",
        "Label: racksmith lab stand-in packages",
        "Architectures: amd64",
        f"Date: {date}",
        "MD5Sum:",
    ]
    lines += [f" {hashlib.md5(b).hexdigest()} {len(b)} {n}" for n, b in files.items()]  # noqa: S324
    lines.append("SHA256:")
    lines += [f" {hashlib.sha256(b).hexdigest()} {len(b)} {n}" for n, b in files.items()]
    return "\n".join(lines) + "\n"


def _gpg(home: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(["gpg", "--batch", "--quiet", "--homedir", str(home), *args])


def _publish(repo_dir: Path, entries: list[str], gnupg: Path, public_key: bytes) -> None:
    packages = "\n".join(entries).encode()
    packages_gz = gzip.compress(packages, mtime=0)
    (repo_dir / "Packages").write_bytes(packages)
    (repo_dir / "Packages.gz").write_bytes(packages_gz)
    release = repo_dir / "Release"
    release.write_text(
        release_file({"Packages": packages, "Packages.gz": packages_gz}, when=time.time())
    )
    _gpg(gnupg, "--clearsign", "-o", str(repo_dir / "InRelease"), str(release))
    _gpg(gnupg, "--detach-sign", "--armor", "-o", str(repo_dir / "Release.gpg"), str(release))
    (repo_dir / KEY_NAME).write_bytes(public_key)


def build(packages: Sequence[Package], out: Path) -> LabRepo:
    """Build every package into ``out`` (which must not exist yet)."""
    if shutil.which("dpkg-deb") is None or shutil.which("gpg") is None:
        raise LabError("building the lab repository needs dpkg-deb and gpg (dpkg, gnupg)")
    out.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="labrepo-", dir=out.parent))
    # Short path in the system temp dir: gpg-agent's socket lives in the home directory and a
    # Unix socket path must stay under 108 bytes.
    gnupg = Path(tempfile.mkdtemp(prefix="rs-gpg-"))
    try:
        _gpg(gnupg, "--passphrase", "", "--pinentry-mode", "loopback",
             "--quick-gen-key", KEY_UID, "ed25519", "sign", "never")  # fmt: skip
        public_key = _gpg(gnupg, "--armor", "--export", KEY_UID).stdout.encode()
        entries: dict[str, list[str]] = {}
        debs = []
        for number, pkg in enumerate(packages):
            tree = stage(pkg, work / "stage" / str(number))
            repo_dir = out / pkg.repo
            repo_dir.mkdir(parents=True, exist_ok=True)
            deb = repo_dir / deb_filename(pkg)
            _run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(tree), str(deb)])
            control = _run(["dpkg-deb", "--field", str(deb)]).stdout
            entries.setdefault(pkg.repo, []).append(
                packages_entry(control, deb.name, deb.read_bytes())
            )
            debs.append(f"{pkg.repo}/{deb.name}")
        for repo, repo_entries in entries.items():
            _publish(out / repo, repo_entries, gnupg, public_key)
    finally:
        # The agent gpg started for this home directory: stop it before removing its socket.
        subprocess.run(["gpgconf", "--homedir", str(gnupg), "--kill", "gpg-agent"],
                       capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(gnupg, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return LabRepo(root=out, digest="", repos=tuple(entries), debs=tuple(debs))


def ensure_built(packages: Sequence[Package] | None = None, cache: Path | None = None) -> LabRepo:
    """The cached repository for these packages, built first if it is not there yet."""
    packages = list(packages) if packages is not None else all_packages()
    key = digest(packages)
    final = (cache or cache_dir()) / f"labrepo-{key}"
    manifest = final / READY
    if manifest.exists():
        data = json.loads(manifest.read_text())
        return LabRepo(final, key, tuple(data["repos"]), tuple(data["debs"]))
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".labrepo-{key}.{time.monotonic_ns()}"
    try:
        built = build(packages, tmp)
        (tmp / READY).write_text(json.dumps({"repos": built.repos, "debs": built.debs}))
        try:
            tmp.rename(final)
        except OSError:
            if not manifest.exists():  # not a concurrent build that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return LabRepo(final, key, built.repos, built.debs)
