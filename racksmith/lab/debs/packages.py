"""What each LAB STAND-IN package contains: names, versions, dependencies, files and units
as NVIDIA ships them (pure data; :mod:`racksmith.lab.debs.build` turns it into .debs).

Versions match what racksmith pins: the container toolkit 1.17.8, DCGM 3.3.9 with
dcgm-exporter 3.3.9-3.6.1, and fabric manager 535.216.03, the exact version of Debian 12's
datacenter driver (fabric manager must match the driver exactly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

MAINTAINER = "racksmith lab <lab@racksmith.invalid>"
STANDIN = "LAB STAND-IN"

#: Repository paths, laid out like NVIDIA's flat repositories so a mirror URL is all that
#: differs between the lab and a site.
TOOLKIT_REPO = "libnvidia-container/stable/deb/amd64"
CUDA_REPO = "compute/cuda/repos/debian12/x86_64"


@dataclass(frozen=True)
class File:
    path: str  # absolute path on the host
    content: bytes
    mode: int = 0o644
    conffile: bool = False


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    summary: str
    description: str
    repo: str
    files: tuple[File, ...]
    depends: tuple[str, ...] = ()
    postinst: str = ""
    section: str = "utils"
    extra: dict[str, str] = field(default_factory=dict)

    def control(self, installed_kib: int) -> str:
        lines = [
            f"Package: {self.name}",
            f"Version: {self.version}",
            "Architecture: amd64",
            f"Maintainer: {MAINTAINER}",
            f"Installed-Size: {installed_kib}",
        ]
        if self.depends:
            lines.append(f"Depends: {', '.join(self.depends)}")
        lines += [f"{k}: {v}" for k, v in self.extra.items()]
        lines += [f"Section: {self.section}", "Priority: optional"]
        body = "\n".join(f" {line}" if line else " ." for line in self.description.splitlines())
        lines.append(f"Description: {STANDIN}: {self.summary}\n{body}")
        return "\n".join(lines) + "\n"


def _payload(name: str) -> bytes:
    return resources.files("racksmith.lab.debs.payload").joinpath(name).read_bytes()


def _describe(what: str) -> str:
    return (
        f"Built by racksmith for GPU-less lab hosts: {what}\n"
        "\n"
        "It is not NVIDIA software. Every line its programs print starts with LAB STAND-IN."
    )


def _unit(description: str, exec_start: str, *, after: str = "", extra: str = "") -> bytes:
    after_line = f"After={after}\n" if after else ""
    return (
        "[Unit]\n"
        f"Description={description} ({STANDIN})\n"
        f"{after_line}"
        "\n[Service]\n"
        f"ExecStart={exec_start}\n"
        f"{extra}"
        "\n[Install]\nWantedBy=multi-user.target\n"
    ).encode()


def _system_user(name: str, home: str) -> str:
    return (
        f"if ! getent passwd {name} >/dev/null; then\n"
        f"  useradd --system --no-create-home --home-dir {home} --shell /usr/sbin/nologin {name}\n"
        "fi\n"
    )


_CTK_CONFIG = b"""\
# LAB STAND-IN: NVIDIA container runtime configuration (layout of toolkit 1.17.8).
#accept-nvidia-visible-devices-as-volume-mounts = false
#accept-nvidia-visible-devices-envvar-when-unprivileged = true
disable-require = false
supported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"

[nvidia-container-cli]
environment = []
ldconfig = "@/sbin/ldconfig"
load-kmods = true

[nvidia-container-runtime]
log-level = "info"
mode = "auto"
runtimes = ["docker-runc", "runc", "crun"]

[nvidia-container-runtime.modes.cdi]
annotation-prefixes = ["cdi.k8s.io/"]
default-kind = "nvidia.com/gpu"
spec-dirs = ["/etc/cdi", "/var/run/cdi"]
"""

_DCGM_COUNTERS = b"""\
# LAB STAND-IN: dcgm-exporter's default collectors (format: DCGM field, Prometheus type, help)
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
"""

_FM_CONFIG = b"""\
# LAB STAND-IN: fabric manager configuration (keys of the 535 branch's fabricmanager.cfg)
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/fabricmanager.log
LOG_APPEND_TO_LOG=1
LOG_FILE_MAX_SIZE=1024
LOG_USE_SYSLOG=0
DAEMONIZE=1
BIND_INTERFACE_IP=127.0.0.1
STARTING_TCP_PORT=16000
FABRIC_MODE=0
FABRIC_MODE_RESTART=0
STATE_FILE_NAME=/var/tmp/fabricmanager.state
FM_CMD_BIND_INTERFACE=127.0.0.1
FM_CMD_PORT_NUMBER=6666
FM_STAY_RESIDENT_ON_FAILURES=0
ACCESS_LINK_FAILURE_MODE=0
TRUNK_LINK_FAILURE_MODE=0
NVSWITCH_FAILURE_MODE=0
ABORT_CUDA_JOBS_ON_FM_EXIT=1
TOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch
"""


COMMON = "racksmith-lab-standin-common"


def common(repo: str) -> Package:
    """The module every stand-in program imports (each repository carries its own copy)."""
    return Package(
        name=COMMON,
        version="1.0",
        summary="shared code of racksmith's stand-in programs",
        description=_describe("the Python module that marks every printed line."),
        repo=repo,
        files=(
            File(
                "/usr/lib/python3/dist-packages/racksmith_standin.py",
                _payload("racksmith_standin.py"),
            ),
        ),
        depends=("python3",),
    )


def toolkit(version: str = "1.17.8-1") -> list[Package]:
    ctk = _payload("nvidia_ctk.py")
    runtime = _payload("nvidia_container_runtime.py")
    base = Package(
        name="nvidia-container-toolkit-base",
        version=version,
        summary="NVIDIA Container Toolkit Base",
        description=_describe(
            "nvidia-ctk edits Docker's daemon.json like the real CLI; no GPU is configured."
        ),
        repo=TOOLKIT_REPO,
        depends=(COMMON,),
        files=(
            File("/usr/bin/nvidia-ctk", ctk, 0o755),
            File("/etc/nvidia-container-runtime/config.toml", _CTK_CONFIG, conffile=True),
        ),
    )
    full = Package(
        name="nvidia-container-toolkit",
        version=version,
        summary="NVIDIA Container toolkit",
        description=_describe(
            "nvidia-container-runtime hands containers to runc unchanged (no GPU to inject)."
        ),
        repo=TOOLKIT_REPO,
        depends=(f"nvidia-container-toolkit-base (= {version})",),
        files=(
            File("/usr/bin/nvidia-container-runtime", runtime, 0o755),
            File("/usr/bin/nvidia-container-runtime-hook", runtime, 0o755),
        ),
    )
    return [common(TOOLKIT_REPO), base, full]


def dcgm(version: str = "1:3.3.9", exporter_version: str = "3.3.9-3.6.1") -> list[Package]:
    program = _payload("dcgm.py")
    engine = Package(
        name="datacenter-gpu-manager",
        version=version,
        summary="NVIDIA Data Center GPU Manager (DCGM)",
        description=_describe(
            "nv-hostengine listens on 127.0.0.1:5555 and serves no GPU data; dcgmi talks to it."
        ),
        repo=CUDA_REPO,
        depends=(COMMON,),
        files=(
            File("/usr/bin/nv-hostengine", program, 0o755),
            File("/usr/bin/dcgmi", program, 0o755),
            File(
                "/lib/systemd/system/nvidia-dcgm.service",
                _unit(
                    "NVIDIA DCGM service",
                    "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm",
                    extra='User=root\nPrivateTmp=false\nEnvironment="DCGM_HOME_DIR=/var/log/'
                    'nvidia-dcgm"\nRestart=on-abort\n',
                ),
            ),
        ),
        postinst=_system_user("nvidia-dcgm", "/var/log/nvidia-dcgm"),
        extra={"Conflicts": "datacenter-gpu-manager-4-core"},
    )
    exporter = Package(
        name="dcgm-exporter",
        version=exporter_version,
        summary="NVIDIA DCGM exporter for Prometheus",
        description=_describe(
            "dcgm-exporter serves /metrics on :9400 with a HELP/TYPE pair per configured field."
        ),
        repo=CUDA_REPO,
        depends=("datacenter-gpu-manager (>= 1:3.3.9)",),
        files=(
            File("/usr/bin/dcgm-exporter", program, 0o755),
            File("/etc/dcgm-exporter/default-counters.csv", _DCGM_COUNTERS, conffile=True),
            File(
                "/lib/systemd/system/dcgm-exporter.service",
                _unit(
                    "NVIDIA DCGM exporter",
                    "/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv",
                    after="nvidia-dcgm.service",
                    extra="Restart=on-failure\nRestartSec=2\n",
                ),
            ),
        ),
    )
    return [common(CUDA_REPO), engine, exporter]


def fabricmanager(branch: str = "535", version: str = "535.216.03-1") -> list[Package]:
    return [
        Package(
            name=f"nvidia-fabricmanager-{branch}",
            version=version,
            summary=f"Fabric Manager for NVSwitch based systems (branch {branch})",
            description=_describe(
                "nv-fabricmanager reads its config, finds no NVSwitch and stops with"
                " NV_WARN_NOTHING_TO_DO, as the real one does on such a host."
            ),
            repo=CUDA_REPO,
            section="libs",
            depends=(COMMON,),
            files=(
                File("/usr/bin/nv-fabricmanager", _payload("fabricmanager.py"), 0o755),
                File("/usr/share/nvidia/nvswitch/fabricmanager.cfg", _FM_CONFIG, conffile=True),
                File(
                    "/lib/systemd/system/nvidia-fabricmanager.service",
                    _unit(
                        "NVIDIA fabric manager service",
                        "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg",
                        after="network-online.target",
                    ),
                ),
            ),
            extra={"Provides": "nvidia-fabricmanager"},
        )
    ]


def all_packages() -> list[Package]:
    """Every stand-in, each repository's common package before the packages that need it."""
    return [*toolkit(), *dcgm(), *fabricmanager()]
