"""Which packages the GPU-host roles install, per package source and driver branch (issue 20).

Pure data and decisions, no I/O. The roles reach it through the filter
``racksmith.core.gpu_install_plan`` (plugins/filter/gpupkgs.py); the apt-resolution test
resolves every list :func:`install_plan` returns against the recorded real package indexes.

Why a module and not role vars: the choice of names depends on four things at once (the source,
the branch, open or proprietary kernel modules, the hardware), and two rules must be refused
before anything is installed rather than fail half-way on a real host:

- **Canonical's archive keeps only the newest version of a package** (one ``Version`` per
  package in a pocket's ``Packages`` index), so an exact driver version pinned there installs
  once and fails on the next host after every archive update. On that source a site pins a
  driver *branch*; an exact version only where the source keeps every release (NVIDIA's CUDA
  repository). :func:`check_version` says so.
- **GPUDirect RDMA over the distribution's rdma-core with nvidia-peermem does not work**:
  ``nvidia-peermem`` needs the peer-memory API of MLNX_OFED/DOCA-OFED. NVIDIA supports
  DOCA-OFED (or MLNX_OFED) + nvidia-peermem, or DMA-BUF with the open kernel modules (no
  peermem, the distribution's rdma-core is fine). :func:`check_gdr` refuses the rest.

Names (docs/roles.md, "Packages by source and branch"; reference read 2026-12-01 from Ubuntu's
server documentation, packages.ubuntu.com, NVIDIA's driver installation guide r580, NVIDIA's
driver container install scripts and DGX OS 6; the recorded indexes under tests/fixtures are
what the resolution test checks them against):

- Ubuntu archive: ``nvidia-headless-no-dkms-<b>-server[-open]`` (what ``ubuntu-drivers install
  --gpgpu`` installs: compute without X), ``nvidia-utils-<b>-server`` (nvidia-smi), and the
  precompiled, signed modules through the kernel-flavour metapackage
  ``linux-modules-nvidia-<b>-server[-open]-<flavour>``, which depends on the modules of the
  flavour's current kernel: a kernel update of that flavour brings its modules. Fabric manager
  and NSCQ carry no ``-server`` label: ``nvidia-fabricmanager-<b>``, ``libnvidia-nscq-<b>``.
- CUDA repository: no precompiled modules, so DKMS: ``nvidia-headless-<b>[-open]`` (DKMS
  modules + compute userspace), ``nvidia-utils-<b>`` and ``linux-headers-<flavour>`` (the
  flavour's header metapackage: every new kernel of the flavour gets headers and a DKMS build).
  Fabric manager ``nvidia-fabricmanager-<b>`` and ``libnvidia-nscq-<b>``; from branch 580 the
  CUDA repository drops the branch from these two (``nvidia-fabricmanager``,
  ``libnvidia-nscq``) and adds ``libnvsdm`` (NVSwitch device monitoring).
- ``nvlsm`` (NVLink subnet manager) only on NVLink 5 systems (B200/GB200 generation), from the
  CUDA repository whatever the driver's source.
- DCGM 4: ``datacenter-gpu-manager-4-cuda<major of CUDA>`` (pulls ``-4-core``) and the exporter
  ``datacenter-gpu-manager-exporter``; DCGM 3: ``datacenter-gpu-manager``. CUDA repository.
- Docker: the distribution's ``docker.io``, never pinned to a version on Ubuntu (the archive
  moves it); the NVIDIA container toolkit from NVIDIA's toolkit repository, which keeps its
  releases, at an exact version.
- ``cuda-keyring`` is deliberately not installed: it writes its own sources list for the same
  URL with another ``signed-by`` key file, which apt refuses as a conflict with racksmith's
  source line (the roles trust the site's mirror through ``signed-by`` instead).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

#: Canonical's archive, NVIDIA's CUDA repository.
SOURCES = ("ubuntu", "cuda")
#: Driver branches the roles and the recorded indexes cover.
BRANCHES = ("535", "580")
#: Kernel module flavours of a branch.
MODULES = ("open", "proprietary")
#: GPUDirect RDMA as NVIDIA supports it ("none": the role does not set GPUDirect up).
GDR_METHODS = ("doca", "dmabuf", "none")
DCGM_MAJORS = (3, 4)
#: The branch from which the open kernel modules are NVIDIA's default (and required from
#: Blackwell on); below it the proprietary modules are.
OPEN_DEFAULT_FROM = 560
#: The branch from which the CUDA repository names fabric manager and NSCQ without a branch.
CUDA_UNBRANCHED_FM_FROM = 580
#: Branches Canonical's archive serves only as transitional packages to a newer branch (recorded
#: jammy index, tests/fixtures/apt-indexes: the 535 family at 535.309.01-0ubuntu0.22.04.2, each
#: package "(transitional package)" depending on its 580 counterpart).
UBUNTU_TRANSITIONAL = {"535": ("580", "535.309.01-0ubuntu0.22.04.2")}
#: The CUDA repository's Release label (NVIDIA's own cuda-<distro>.pin selects it by label; a
#: site's mirror keeps the Release file, so the label holds there too).
CUDA_LABEL = "NVIDIA CUDA"

_FLAVOUR = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")
_TOOLKIT_VERSION = re.compile(r"^[0-9][A-Za-z0-9.+~-]*$")


class PlanError(ValueError):
    """A choice the chosen source or hardware cannot serve; the message says why and what to
    choose instead."""


@dataclass(frozen=True)
class Plan:
    """What each role installs (apt specs, ``name`` or ``name=version*``), in order."""

    source: str
    branch: str
    modules: str
    version: str  # "" when the site pinned only the branch
    driver: tuple[str, ...]
    fabricmanager: tuple[str, ...]  # empty without NVSwitches
    gdr: tuple[str, ...]
    container_runtime: tuple[str, ...]
    dcgm: tuple[str, ...]
    dcgm_exporter: tuple[str, ...]
    #: package names (no versions) the driver role holds with the driver
    holds: tuple[str, ...]
    #: the roles that need NVIDIA's CUDA repository before their first install
    cuda_repo_roles: tuple[str, ...]
    #: apt preferences version glob for every NVIDIA driver package, "" for none
    pin: str

    def as_dict(self) -> dict:
        return asdict(self)


def default_modules(branch: str) -> str:
    """NVIDIA's default kernel modules for a branch: open from 560 on."""
    return "open" if int(branch) >= OPEN_DEFAULT_FROM else "proprietary"


def _spec(name: str, version: str) -> str:
    # "=<version>-*": the CUDA repository's Debian revisions differ per package
    # (nvidia-fabricmanager-535=535.216.03-1, nvidia-headless-535=535.216.03-0ubuntu1)
    return f"{name}={version}-*" if version else name


def check_source_branch(source: str, branch: str) -> None:
    if source not in SOURCES:
        raise PlanError(f"source {source!r} is not one of {', '.join(SOURCES)}")
    if str(branch) not in BRANCHES:
        raise PlanError(
            f"driver branch {branch!r} is not one racksmith covers ({', '.join(BRANCHES)}): "
            "the recorded package indexes the roles are tested against hold those"
        )


def check_version(source: str, branch: str, version: str | None) -> None:
    """Refuse an exact driver version (or a branch) the source cannot serve, saying why."""
    check_source_branch(source, branch)
    if source == "ubuntu" and branch in UBUNTU_TRANSITIONAL:
        newer, since = UBUNTU_TRANSITIONAL[branch]
        raise PlanError(
            f"Canonical's archive serves branch {branch} only as transitional packages to "
            f"{newer} (since {since}): the {branch} names would install the {newer} driver. "
            f"Take branch {branch} from NVIDIA's CUDA repository (nvidia_driver_source: cuda), "
            f"or branch {newer} from the archive"
        )
    if not version:
        return
    if source == "ubuntu":
        raise PlanError(
            f"an exact driver version ({version}) cannot be pinned on Canonical's archive: it "
            "keeps only the newest version of each package, so the pin fails on the first host "
            "after the next archive update and a re-provisioned host could never match its "
            "fleet. Pin the branch only (nvidia_driver_version empty), or take the driver from "
            "NVIDIA's CUDA repository (nvidia_driver_source: cuda), which keeps every release"
        )
    if not re.fullmatch(rf"{branch}\.[0-9]+(\.[0-9]+)?", version):
        raise PlanError(
            f"driver version {version!r} is not an upstream version of branch {branch} "
            f"(such as {branch}.216.03)"
        )


def check_gdr(gdr: str, modules: str) -> None:
    """Refuse a GPUDirect RDMA method NVIDIA does not support, saying why."""
    if gdr == "inbox":
        raise PlanError(
            "GPUDirect RDMA over the distribution's inbox rdma-core with nvidia-peermem is not "
            "supported: nvidia-peermem needs the peer-memory API of MLNX_OFED/DOCA-OFED, which "
            "inbox rdma-core lacks (the module fails to load, or NCCL falls back to copies "
            "through host memory). Choose gdr_method doca (the site installs DOCA-OFED; "
            "nvidia-peermem from the driver) or dmabuf (the open kernel modules; no peermem)"
        )
    if gdr not in GDR_METHODS:
        raise PlanError(f"gdr method {gdr!r} is not one of {', '.join(GDR_METHODS)}")
    if modules not in MODULES:
        raise PlanError(f"kernel modules {modules!r} are not one of {', '.join(MODULES)}")
    if gdr == "dmabuf" and modules != "open":
        raise PlanError(
            "GPUDirect RDMA through DMA-BUF needs NVIDIA's open kernel modules; the proprietary "
            "modules do not export GPU memory as DMA-BUF. Choose modules open, or gdr_method doca"
        )


def gdr_packages(gdr: str, modules: str) -> list[str]:
    """What the gdr role installs from the distribution for a method (after :func:`check_gdr`):
    DMA-BUF runs over the distribution's rdma-core; DOCA-OFED is the site's own install."""
    check_gdr(gdr, modules)
    return ["rdma-core", "ibverbs-utils"] if gdr == "dmabuf" else []


def check_flavour(kernel_flavour: str) -> None:
    if not _FLAVOUR.fullmatch(kernel_flavour or ""):
        raise PlanError(
            f"kernel flavour {kernel_flavour!r} is not a flavour name (generic, "
            "generic-hwe-22.04, nvidia, ...)"
        )


def flavour_of_kernel(flavour: str, kernel_release: str) -> bool:
    """Whether a running kernel (``uname -r``) belongs to a flavour's metapackages:
    ``generic-hwe-22.04`` and ``generic`` both install ``*-generic`` kernels."""
    check_flavour(flavour)
    base = flavour.split("-hwe-", 1)[0]
    return kernel_release.endswith(f"-{base}")


def _driver(source: str, branch: str, modules: str, flavour: str, version: str) -> list[str]:
    open_ = "-open" if modules == "open" else ""
    if source == "ubuntu":
        return [
            f"nvidia-headless-no-dkms-{branch}-server{open_}",
            f"nvidia-utils-{branch}-server",
            f"linux-modules-nvidia-{branch}-server{open_}-{flavour}",
        ]
    return [
        _spec(f"nvidia-headless-{branch}{open_}", version),
        _spec(f"nvidia-utils-{branch}", version),
        f"linux-headers-{flavour}",
    ]


def _fabricmanager(source: str, branch: str, version: str, nvlink5: bool) -> list[str]:
    if source == "cuda" and int(branch) >= CUDA_UNBRANCHED_FM_FROM:
        names = ["nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm"]
    else:
        names = [f"nvidia-fabricmanager-{branch}", f"libnvidia-nscq-{branch}"]
    specs = [_spec(name, version) for name in names]
    # NVLink 5's subnet manager follows its own versions: never pinned to the driver's
    return specs + (["nvlsm"] if nvlink5 else [])


def dcgm_packages(dcgm_major: int, cuda_major: int = 12) -> dict[str, list[str]]:
    """DCGM's host engine and exporter packages for a DCGM major (the dcgm role's names)."""
    engine, exporter = _dcgm(int(dcgm_major), int(cuda_major))
    return {"dcgm": engine, "exporter": exporter}


def _dcgm(dcgm_major: int, cuda_major: int) -> tuple[list[str], list[str]]:
    if dcgm_major == 4:
        return [f"datacenter-gpu-manager-4-cuda{cuda_major}"], ["datacenter-gpu-manager-exporter"]
    if dcgm_major == 3:
        # DCGM 3 has no exporter package (NVIDIA ships dcgm-exporter 3.x as a container image)
        return ["datacenter-gpu-manager"], []
    raise PlanError(f"DCGM major {dcgm_major!r} is not one of {DCGM_MAJORS}")


def plan(
    *,
    source: str,
    branch: str,
    kernel_flavour: str = "generic-hwe-22.04",
    nvswitch: bool = True,
    nvlink5: bool = False,
    dcgm_major: int = 4,
    gdr: str = "doca",
    version: str | None = None,
    modules: str | None = None,
    cuda_major: int = 12,
    toolkit_version: str = "",
    kernel_release: str = "",
) -> Plan:
    """Every role's packages for one choice, or :class:`PlanError` saying what cannot be.

    ``kernel_release`` (``uname -r``), when given, must be of ``kernel_flavour``: the flavour's
    metapackages would otherwise bring modules (or headers) for another kernel than the one the
    host boots."""
    branch = str(branch)
    version = version or ""
    check_version(source, branch, version)
    modules = modules or default_modules(branch)
    check_gdr(gdr, modules)
    check_flavour(kernel_flavour)
    if kernel_release and not flavour_of_kernel(kernel_flavour, kernel_release):
        raise PlanError(
            f"the running kernel {kernel_release} is not of flavour {kernel_flavour}: its "
            "metapackage would bring NVIDIA modules for another kernel than the one this host "
            "boots. Set nvidia_driver_kernel_flavour to the flavour MAAS deploys"
        )
    if nvlink5 and not nvswitch:
        raise PlanError("NVLink 5 systems connect their GPUs through NVSwitches: nvswitch is false")
    if toolkit_version and not _TOOLKIT_VERSION.fullmatch(toolkit_version):
        raise PlanError(f"container toolkit version {toolkit_version!r} is not a Debian version")
    driver = _driver(source, branch, modules, kernel_flavour, version)
    fabricmanager = _fabricmanager(source, branch, version, nvlink5) if nvswitch else []
    dcgm, exporter = _dcgm(int(dcgm_major), int(cuda_major))
    toolkit = ["nvidia-container-toolkit", "nvidia-container-toolkit-base"]
    cuda_repo_roles = ["dcgm"]
    if source == "cuda" or nvlink5:
        cuda_repo_roles.insert(0, "nvidia_driver")
    return Plan(
        source=source,
        branch=branch,
        modules=modules,
        version=version,
        driver=tuple(driver),
        fabricmanager=tuple(fabricmanager),
        # DMA-BUF runs over the distribution's RDMA stack; DOCA-OFED is the site's install
        gdr=tuple(gdr_packages(gdr, modules)),
        # docker.io unpinned: the distribution's archive moves it (it is held once installed)
        container_runtime=(
            "docker.io",
            *(f"{name}={toolkit_version}" if toolkit_version else name for name in toolkit),
        ),
        dcgm=tuple(dcgm),
        dcgm_exporter=tuple(exporter),
        holds=tuple(spec.split("=", 1)[0] for spec in driver + fabricmanager),
        cuda_repo_roles=tuple(cuda_repo_roles),
        pin=f"{version}-*" if version else "",
    )


def install_plan(**choice: object) -> dict[str, list[str]]:
    """Role name -> the apt install specs that role makes, in order (the contract the
    apt-resolution test reads: NOTES.md). Takes :func:`plan`'s keywords (``source``,
    ``branch``, ``kernel_flavour``, ``nvswitch``, ``nvlink5``, ``dcgm_major``, ``gdr``,
    ``version``, ...) and raises what it raises."""
    chosen = plan(**choice)  # type: ignore[arg-type]
    return {
        "nvidia_driver": [*chosen.driver, *chosen.fabricmanager],
        "gdr": list(chosen.gdr),
        "container_runtime": list(chosen.container_runtime),
        "dcgm": [*chosen.dcgm, *chosen.dcgm_exporter],
    }


def apt_preferences(*, source: str, branch: str) -> str:
    """The apt preferences the roles install beside the CUDA repository's source line.

    Both repositories carry packages of the same names (``nvidia-fabricmanager-535`` is in
    Canonical's archive as a transitional package to 580 and in the CUDA repository at the
    driver's own version), and apt takes the higher version wherever it comes from, so the
    driver and fabric manager could come from different sources. ``cuda``: NVIDIA's own pin
    (every package of the CUDA repository preferred, priority 600). ``ubuntu``: the CUDA
    repository never serves a driver package (``nvidia-*``, ``libnvidia-*``), while DCGM and
    nvlsm still come from it.
    """
    check_source_branch(source, branch)
    if source == "cuda":
        return f"Package: *\nPin: release l={CUDA_LABEL}\nPin-Priority: 600\n"
    return f"Package: nvidia-* libnvidia-*\nPin: release l={CUDA_LABEL}\nPin-Priority: -1\n"


def parse_policy(text: str) -> dict[str, str | None]:
    """``apt-cache policy NAME...`` -> name -> candidate version (None where apt has none).

    A name apt has never heard of prints nothing at all; the caller treats a missing name as
    unknown. Why the roles ask: in check mode on a new host a repository the run adds (the CUDA
    repository, the toolkit's) is not in the package lists yet, so the role reports what it would
    install instead of failing or ignoring an error.
    """
    found: dict[str, str | None] = {}
    name = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            name = line.rstrip()[:-1]
            found[name] = None
        elif name and line.strip().startswith("Candidate:"):
            value = line.split(":", 1)[1].strip()
            found[name] = None if value == "(none)" else value
    return found


def unknown_packages(specs: list[str] | tuple[str, ...], policy: str) -> list[str]:
    """The specs whose package apt has no candidate for (``apt-cache policy`` output)."""
    candidates = parse_policy(policy)
    return [spec for spec in specs if not candidates.get(spec.split("=", 1)[0])]
