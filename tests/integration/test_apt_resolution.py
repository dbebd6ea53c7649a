"""apt's own resolver over the recorded package indexes: every install each GPU-host role would
make, for each source (Canonical's archive, NVIDIA's CUDA repository) and each driver branch.

The indexes are ``tests/fixtures/apt-indexes/`` (real ``Packages`` stanzas with their
provenance, see its README). Each case builds a private apt root (its own sources.list, lists
and dpkg status, nothing of this machine's apt configuration), points it at flat ``file:``
repositories made from those stanzas, runs ``apt-get update`` and then
``apt-get -s install --no-install-recommends`` on the role's list. A name, a version pin or a
dependency that the recorded index cannot satisfy makes apt refuse, and the test fails with
apt's own words. No network: everything is a local file.

What a role installs comes from :func:`racksmith.gpupkgs.install_plan` (the roles read the
same function). Until that module exists this file's ``_LOCAL_PLAN`` stands in for it, and
the test says so in its output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from racksmith.lab.debs.control import RECORD_KINDS, parse_stanzas

INDEXES = Path(__file__).resolve().parents[1] / "fixtures" / "apt-indexes"
SOURCES = ("ubuntu", "cuda")
BRANCHES = ("535", "580")
#: Which recorded indexes a host of each source sees once its roles have run: every host keeps
#: Canonical's archive and NVIDIA's container toolkit repository, and the dcgm role adds the
#: CUDA repository on either source (DCGM 4 and its exporter are only there). The driver's
#: names differ per source (``-server`` packages and precompiled modules from Canonical), so
#: one source's plan cannot silently resolve from the other's packages.
ALL_INDEXES = ("ubuntu-jammy", "nvidia-container-toolkit", "cuda-ubuntu2204")
SOURCE_INDEXES = {"ubuntu": ALL_INDEXES, "cuda": ALL_INDEXES}
ARCHIVE_ONLY = ("ubuntu-jammy",)
BASE_STATUS = INDEXES / "status" / "ubuntu-jammy"


# --- the recorded stanzas ------------------------------------------------------------------


def index_files() -> list[Path]:
    return sorted(INDEXES.glob("*/Packages"))


def test_the_lab_replays_the_same_toolkit_records():
    """NVIDIA's container toolkit repository is one for every distribution: the lab's stand-in
    repository (racksmith/lab/debs/index) carries the very records this test resolves."""
    from racksmith.lab.debs.control import load_index

    ours = {s["Package"]: s for s in parse_stanzas((INDEXES / "nvidia-container-toolkit" /
                                                   "Packages").read_text())}  # fmt: skip
    assert load_index("nvidia-container-toolkit") == ours


def test_every_record_names_itself_and_says_where_it_was_read():
    files = index_files()
    assert {f.parent.name for f in files} >= {"ubuntu-jammy", "cuda-ubuntu2204"}
    for path in [*files, BASE_STATUS]:
        stanzas = parse_stanzas(path.read_text())
        assert stanzas, f"{path}: no stanzas"
        seen = set()
        for s in stanzas:
            where = f"{path.relative_to(INDEXES)}: {s.get('Package')}"
            for key in ("Package", "Version", "Architecture", "X-Racksmith-Record"):
                assert s.get(key), f"{where}: no {key}"
            assert s["X-Racksmith-Record"] in RECORD_KINDS, where
            if path != BASE_STATUS:
                assert s.get("X-Racksmith-Source"), f"{where}: no provenance"
                assert s.get("X-Racksmith-Read"), f"{where}: no reading date"
            key = (s["Package"], s["Version"])
            assert key not in seen, f"{where}: recorded twice"
            seen.add(key)


# --- a private apt root over the recorded indexes ----------------------------------------


@dataclass(frozen=True)
class AptRoot:
    root: Path

    def options(self) -> list[str]:
        r = self.root
        return [
            "-o", f"Dir={r}",
            "-o", f"Dir::State::status={r}/var/lib/dpkg/status",
            "-o", "APT::Architecture=amd64",
            "-o", "APT::Architectures::=amd64",
            "-o", "Acquire::Languages=none",
            "-o", "Debug::NoLocking=1",
            "-o", f"Dir::Etc::TrustedParts={r}/etc/apt/trusted.gpg.d",
            "-o", f"Dir::Etc::Trusted={r}/etc/apt/trusted.gpg",
        ]  # fmt: skip

    def apt(self, *args: str) -> subprocess.CompletedProcess:
        # APT_CONFIG at an empty file: none of this machine's apt.conf is read
        env = {**os.environ, "LC_ALL": "C", "APT_CONFIG": str(self.root / "apt.conf")}
        return subprocess.run(["apt-get", *self.options(), *args], capture_output=True,
                              text=True, check=False, env=env)  # fmt: skip

    def simulate(self, specs: list[str]) -> subprocess.CompletedProcess:
        return self.apt("-s", "-q", "install", "--no-install-recommends", *specs)


def write_release(repo: Path, fields: dict[str, str]) -> None:
    """A flat repository's Release: the recorded Origin/Label and the hashes apt checks."""
    import hashlib

    data = (repo / "Packages").read_bytes()
    text = "".join(f"{k}: {v}\n" for k, v in fields.items() if not k.startswith("X-"))
    text += f"SHA256:\n {hashlib.sha256(data).hexdigest()} {len(data)} Packages\n"
    (repo / "Release").write_text(text)


def make_root(
    where: Path, indexes: tuple[str, ...], *, drop: tuple[str, ...] = (), preferences: str = ""
) -> AptRoot:
    """An apt root seeing ``indexes`` (directory names under the fixtures) as flat file: repos;
    ``drop`` removes packages by name from the copies (to prove a missing dependency is seen);
    ``preferences`` is an apt preferences file the roles would install (pins)."""
    if shutil.which("apt-get") is None:
        pytest.fail("apt-get is not installed: the resolution test cannot run (apt is required)")
    for sub in ("etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d",
                "etc/apt/trusted.gpg.d", "var/lib/apt/lists/partial",
                "var/cache/apt/archives/partial", "var/lib/dpkg"):  # fmt: skip
        (where / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(BASE_STATUS, where / "var/lib/dpkg/status")
    (where / "apt.conf").write_text("")
    lines = []
    for name in indexes:
        repo = where / "repos" / name
        repo.mkdir(parents=True)
        stanzas = parse_stanzas((INDEXES / name / "Packages").read_text())
        kept = [s for s in stanzas if s["Package"] not in drop]
        for s in kept:
            # apt's simulation wants to know where each .deb would come from; a record read from
            # a package page has no Filename, so the copy gets one (never the fixture itself)
            s.setdefault("Filename", f"./{s['Package']}_{s['Version'].split(':')[-1]}.deb")
            s.setdefault("Size", "1")
        (repo / "Packages").write_text(
            "\n".join("".join(f"{k}: {v}\n" for k, v in s.items()) for s in kept)
        )
        fields = INDEXES / name / "Release.fields"
        if fields.exists():  # the repository's Origin/Label, for apt preferences that pin by them
            write_release(repo, parse_stanzas(fields.read_text())[0])
        lines.append(f"deb [trusted=yes] file:{repo} ./")
    (where / "etc/apt/sources.list").write_text("\n".join(lines) + "\n")
    if preferences:
        (where / "etc/apt/preferences.d/racksmith").write_text(preferences)
    root = AptRoot(where)
    done = root.apt("-q", "update")
    if done.returncode != 0:
        pytest.fail(f"apt-get update over the recorded indexes failed:\n{done.stderr}")
    return root


def installs(done: subprocess.CompletedProcess) -> dict[str, str]:
    """``Inst name (version ...)`` lines of a simulated install -> {name: version}."""
    return dict(re.findall(r"^Inst (\S+) (?:\[\S+\] )?\((\S+) ", done.stdout, re.M))


# --- what each role installs ---------------------------------------------------------------

#: Stand-in for racksmith.gpupkgs.install_plan until the roles helper's module exists:
#: {(source, branch): {role: [apt specs]}}, the names the recorded indexes carry.
_LOCAL_PLAN = {
    ("ubuntu", b): {
        "nvidia_driver": [f"nvidia-driver-{b}-server", f"linux-modules-nvidia-{b}-server-generic",
                          f"nvidia-utils-{b}-server"],
        "dcgm": [f"nvidia-fabricmanager-{b}", f"libnvidia-nscq-{b}"],
        "container_runtime": ["docker.io"],
        "node_exporter": ["prometheus-node-exporter"],
    }
    for b in BRANCHES
} | {
    ("cuda", b): {
        "nvidia_driver": ["cuda-keyring", f"cuda-drivers-{b}", f"nvidia-driver-{b}-open"],
        "dcgm": [f"nvidia-fabricmanager-{b}", f"libnvidia-nscq-{b}",
                 "datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda12",
                 "datacenter-gpu-manager-exporter"],
        "container_runtime": ["docker.io", "nvidia-container-toolkit"],
        "node_exporter": ["prometheus-node-exporter"],
    }
    for b in BRANCHES
}  # fmt: skip


def preferences_for(source: str, branch: str) -> str:
    """The apt preferences the roles install for this choice (racksmith.gpupkgs.apt_preferences,
    where that exists), so the resolver sees the same pins a host would."""
    try:
        from racksmith import gpupkgs
    except ImportError:
        return ""
    make = getattr(gpupkgs, "apt_preferences", None)
    return make(source=source, branch=branch) if make else ""


#: Besides each source x branch's defaults, the choices that change what the roles install:
#: the other kernel modules (open/proprietary), DCGM 3, GPUDirect over DMA-BUF (open modules,
#: the distribution's rdma-core) and an NVLink 5 system (nvlsm).
VARIANTS = {
    "defaults": {},
    "other-modules": {"modules": None},
    "dcgm3": {"dcgm_major": 3},
    "dmabuf": {"gdr": "dmabuf", "modules": "open"},
    "nvlink5": {"nvlink5": True},
}


def plan(source: str, branch: str, **choice) -> tuple[dict[str, list[str]], str]:
    """The roles' plan, or (``{}``, the reason) where racksmith.gpupkgs refuses the choice."""
    try:
        from racksmith import gpupkgs
    except ImportError:
        return _LOCAL_PLAN[(source, branch)], "local plan (racksmith.gpupkgs not there yet)"
    if "modules" in choice and choice["modules"] is None:  # not the branch's default modules
        default = gpupkgs.default_modules(branch)
        choice["modules"] = "proprietary" if default == "open" else "open"
    try:
        roles = gpupkgs.install_plan(source=source, branch=branch, **choice)
    except gpupkgs.PlanError as exc:
        return {}, str(exc)
    args = ", ".join(f"{k}={v}" for k, v in choice.items())
    return roles, f"racksmith.gpupkgs.install_plan({args})"


_BRANCHED = re.compile(r"^(?:lib)?nvidia-|^linux-modules-nvidia-|^cuda-drivers-")
_NOT_DRIVER = re.compile(r"^(?:lib)?nvidia-container|^libnvsdm")


def branches_of(got: dict[str, str]) -> set[str]:
    """Driver branches the NVIDIA driver packages apt picked belong to (by their names)."""
    found = set()
    for name in got:
        if _BRANCHED.match(name) and not _NOT_DRIVER.match(name):
            found.update(re.findall(r"-(\d{3})(?=-|$)", name))
    return found


@pytest.fixture(params=SOURCES)
def source_root(request, tmp_path, branch) -> tuple[str, AptRoot]:
    source = request.param
    try:
        prefs = preferences_for(source, branch)
    except ValueError:  # refused choice: no preferences to install
        prefs = ""
    return source, make_root(tmp_path, SOURCE_INDEXES[source], preferences=prefs)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("branch", BRANCHES)
def test_every_role_install_resolves_over_the_recorded_index(source_root, branch, variant):
    source, root = source_root
    roles, origin = plan(source, branch, **VARIANTS[variant])
    if not roles:
        # refused by racksmith.gpupkgs: only right where the index proves this branch cannot be
        # served from this source (the naive names resolve into another branch's driver)
        done = root.simulate(_LOCAL_PLAN[(source, branch)]["nvidia_driver"])
        got = installs(done)
        assert done.returncode != 0 or branches_of(got) - {branch}, (
            f"{source} x {branch} is refused ({origin}) although the recorded index serves it: "
            f"{sorted(got.items())}"
        )
        print(f"{source} x {branch}: refused, and the index agrees: {origin}")
        return
    print(f"{source} x {branch}: plan from {origin}")
    for role, specs in roles.items():
        if not specs:
            continue
        done = root.simulate(list(specs))
        assert done.returncode == 0, (
            f"{source} x {branch}: role {role} cannot install {specs} from the recorded index:\n"
            f"{done.stdout[-2000:]}\n{done.stderr}"
        )
        got = installs(done)
        for spec in specs:
            name, _, version = spec.partition("=")
            assert name in got, f"{role}: {name} not among what apt would install: {got}"
            if version:
                assert re.fullmatch(re.escape(version).replace(r"\*", ".*"), got[name]), (
                    f"{role}: {spec} resolved to {got[name]}"
                )
        print(f"  {role}: {', '.join(f'{n}={v}' for n, v in sorted(got.items()))}")
        other = branches_of(got) - {branch}
        assert not other, (
            f"{source} x {branch}: role {role} would install branch {sorted(other)} packages "
            f"({sorted(n for n in got if any(f'-{b}' in n for b in other))}): the source serves "
            f"branch {branch} only as transitional packages"
        )
        check_same_driver_version(f"{source} x {branch}: {role}", got)


def _upstream(version: str) -> str:
    return version.split(":")[-1].split("-")[0]


def check_same_driver_version(where: str, got: dict[str, str]) -> None:
    """Fabric manager and NSCQ must be exactly the driver's version (NVIDIA's fabric manager
    guide): whatever apt picks for them has to carry the upstream version of nvidia-utils."""
    utils = [v for n, v in got.items() if n.startswith("nvidia-utils-")]
    if not utils:
        return
    driver = _upstream(utils[0])
    for name, version in got.items():
        if name.startswith(("nvidia-fabricmanager", "libnvidia-nscq")):
            assert _upstream(version) == driver, (
                f"{where}: {name} {version} does not match the driver {driver}: apt picked "
                "another source's build (pin the fabric manager to the driver's version)"
            )


# --- and it can fail ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def ubuntu_root(tmp_path_factory) -> AptRoot:
    return make_root(tmp_path_factory.mktemp("apt-ubuntu-neg"), ARCHIVE_ONLY)


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        # the pin racksmith's container_runtime had: jammy now serves docker.io-app 29.1.3
        ("docker.io=24.0.7-0ubuntu2~22.04.1", "Version '24.0.7-0ubuntu2~22.04.1' for 'docker.io'"),
        # the archive keeps only the newest build: the old 535 pin is gone
        ("nvidia-kernel-common-535-server=535.216.03-0ubuntu0.22.04.1", "Version '535.216.03"),
        # fabric-manager-580 is the SOURCE package's name; the binary is nvidia-fabricmanager-580
        ("fabric-manager-580", "Unable to locate package fabric-manager-580"),
        # DCGM 4 is not in Canonical's archive: without the CUDA repository it cannot install
        ("datacenter-gpu-manager-4-core", "Unable to locate package datacenter-gpu-manager-4-core"),
    ],
)
def test_a_name_or_pin_the_index_does_not_serve_is_refused(ubuntu_root, spec, why):
    done = ubuntu_root.simulate([spec])
    assert done.returncode != 0, f"{spec} resolved although the recorded index lacks it"
    assert why in done.stderr, done.stderr


def test_a_dependency_missing_from_the_index_is_refused(tmp_path):
    """Fabric manager 580 needs the driver's nvidia-kernel-common-580-server-<version>: without
    the package that provides it, apt refuses, so Depends really are resolved."""
    root = make_root(tmp_path, ARCHIVE_ONLY, drop=("nvidia-kernel-common-580-server",))
    done = root.simulate(["nvidia-fabricmanager-580"])
    assert done.returncode != 0
    assert "nvidia-kernel-common-580-server-580.159.03" in done.stdout + done.stderr


#: NVIDIA's own pin (the cuda-<distro>.pin its installation guide puts in
#: /etc/apt/preferences.d/cuda-repository-pin-600): the CUDA repository above the archive.
CUDA_REPOSITORY_PIN = "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n"


def test_without_a_pin_the_archive_wins_and_with_nvidias_pin_the_cuda_repository_does(tmp_path):
    """Both sources carry nvidia-fabricmanager-535: apt takes the higher version (Canonical's
    transitional 535.309.01, which pulls 580) unless the CUDA repository is pinned above it."""
    bare = make_root(tmp_path / "bare", ALL_INDEXES)
    got = installs(bare.simulate(["nvidia-fabricmanager-535"]))
    assert got["nvidia-fabricmanager-535"].startswith("535.309.01-0ubuntu0.22.04")
    assert "nvidia-fabricmanager-580" in got
    pinned = make_root(tmp_path / "pinned", ALL_INDEXES, preferences=CUDA_REPOSITORY_PIN)
    wanted = ["nvidia-headless-535", "nvidia-fabricmanager-535", "libnvidia-nscq-535"]
    done = pinned.simulate(wanted)
    got = installs(done)
    assert done.returncode == 0, done.stderr
    assert got["nvidia-fabricmanager-535"] == "535.216.03-1"
    assert got["libnvidia-nscq-535"] == "535.216.03-1"
    assert branches_of(got) == {"535"}
