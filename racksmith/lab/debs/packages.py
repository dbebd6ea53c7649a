"""What each LAB STAND-IN package contains (pure data; :mod:`racksmith.lab.debs.build` turns
it into .debs).

Two halves, kept apart on purpose:

- **metadata** (name, version, Pre-Depends/Depends/Provides/Conflicts/Breaks/Replaces,
  section) is *generated from recorded package records* (``index/*.Packages.txt``, read by
  :mod:`racksmith.lab.debs.control`), never written here: the lab's apt resolves exactly what a
  site's apt would against NVIDIA's repositories, as far as the records go. Each package's
  description says which record it replays and how that record was obtained.
- **behaviour** (files, systemd units, maintainer scripts) is the stand-in's own: programs that
  act like NVIDIA's as far as a GPU-less host allows and print ``LAB STAND-IN`` on every line.

The lab's hosts run Debian 12, so the records are those of NVIDIA's ``debian12`` CUDA
repository and its distribution-independent container toolkit repository; the Ubuntu 22.04
records the resolution test uses are in ``tests/fixtures/apt-indexes/`` (same format).

The shared Python module of the programs ships inside every package, in that package's own
directory under ``/usr/lib/racksmith-lab-standin/`` beside its programs (``/usr/bin`` holds
symlinks; Python puts the real directory on ``sys.path``), so no package needs a dependency
its real counterpart does not have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

from racksmith.lab.debs.control import RELATIONS, load_index

MAINTAINER = "racksmith lab <lab@racksmith.invalid>"
STANDIN = "LAB STAND-IN"

#: Repository paths, laid out like NVIDIA's flat repositories so a mirror URL is all that
#: differs between the lab and a site.
TOOLKIT_REPO = "libnvidia-container/stable/deb/amd64"
CUDA_REPO = "compute/cuda/repos/debian12/x86_64"


#: Where each package's programs and its copy of the shared module live on the host.
PRIVATE_DIR = "/usr/lib/racksmith-lab-standin"


@dataclass(frozen=True)
class File:
    path: str  # absolute path on the host
    content: bytes = b""
    mode: int = 0o644
    conffile: bool = False
    link: str = ""  # a symlink to this target instead of a file


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    summary: str
    description: str
    repo: str
    files: tuple[File, ...]
    #: relation fields copied from the record ({"Depends": "...", ...})
    relations: dict[str, str] = field(default_factory=dict)
    postinst: str = ""
    section: str = "utils"
    #: how the metadata was obtained (the record's X-Racksmith-Record and -Source)
    provenance: str = ""

    def control(self, installed_kib: int) -> str:
        lines = [
            f"Package: {self.name}",
            f"Version: {self.version}",
            "Architecture: amd64",
            f"Maintainer: {MAINTAINER}",
            f"Installed-Size: {installed_kib}",
        ]
        lines += [f"{k}: {self.relations[k]}" for k in RELATIONS if self.relations.get(k)]
        lines += [f"Section: {self.section}", "Priority: optional"]
        text = self.description
        if self.provenance:
            text += f"\n\nMetadata replayed from a package record: {self.provenance}"
        body = "\n".join(f" {line}" if line else " ." for line in text.splitlines())
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


def _programs(package: str, script: str, names: tuple[str, ...], version: str) -> tuple[File, ...]:
    """``script`` (a payload file) installed once in the package's own directory with the
    shared module and the package's version, and symlinked under each of ``names``."""
    home = f"{PRIVATE_DIR}/{package}"
    return (
        File(f"{home}/{script}", _payload(script), 0o755),
        File(f"{home}/racksmith_standin.py", _payload("racksmith_standin.py")),
        File(f"{home}/VERSION", f"{version}\n".encode()),
        *(File(f"/usr/bin/{name}", link=f"{home}/{script}") for name in names),
    )


def _marker(package: str) -> tuple[File, ...]:
    """A package with nothing to run on a GPU-less host (libraries): one file saying so."""
    return (
        File(
            f"/usr/share/doc/{package}/LAB-STAND-IN",
            f"{STANDIN}: {package} carries no NVIDIA software, only its metadata.\n".encode(),
        ),
    )


_DCGM_UNIT = _unit(
    "NVIDIA DCGM service",
    "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm",
    extra='User=root\nPrivateTmp=false\nEnvironment="DCGM_HOME_DIR=/var/log/nvidia-dcgm"\n'
    "Restart=on-abort\n",
)
#: The exporter's unit as NVIDIA's package names and wires it (nvidia-dcgm-exporter.service,
#: packaging/config-files/systemd/ of github.com/NVIDIA/dcgm-exporter): started after, and
#: wanting, the host engine; logs appended to /var/log/dcgm-exporter.log.
_EXPORTER_UNIT = (
    "[Unit]\n"
    f"Description=NVIDIA DCGM-exporter service ({STANDIN})\n"
    "Wants=nvidia-dcgm.service\nAfter=nvidia-dcgm.service\n"
    "\n[Service]\nUser=root\nPrivateTmp=false\n"
    "StandardOutput=append:/var/log/dcgm-exporter.log\n"
    "StandardError=append:/var/log/dcgm-exporter.log\n"
    "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv\n"
    "Restart=on-abort\n"
    "\n[Install]\nWantedBy=multi-user.target\n"
).encode()
_FM_UNIT = _unit(
    "NVIDIA fabric manager service",
    "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg",
    after="network-online.target",
)


@dataclass(frozen=True)
class Behaviour:
    """What a stand-in does, by package name; its metadata comes from the record."""

    repo: str
    what: str  # one sentence for the description
    files: object  # (package name, version) -> tuple[File, ...]
    postinst: str = ""


#: Every stand-in racksmith builds. A name here without a record (or the reverse) is an error.
BEHAVIOURS: dict[str, Behaviour] = {
    "nvidia-container-toolkit-base": Behaviour(
        TOOLKIT_REPO,
        "nvidia-ctk edits Docker's daemon.json like the real CLI; no GPU is configured.",
        lambda n, v: (
            *_programs(n, "nvidia_ctk.py", ("nvidia-ctk",), v),
            File("/etc/nvidia-container-runtime/config.toml", _CTK_CONFIG, conffile=True),
        ),
    ),
    "nvidia-container-toolkit": Behaviour(
        TOOLKIT_REPO,
        "nvidia-container-runtime hands containers to runc unchanged (no GPU to inject).",
        lambda n, v: _programs(
            n,
            "nvidia_container_runtime.py",
            ("nvidia-container-runtime", "nvidia-container-runtime-hook"),
            v,
        ),
    ),
    "libnvidia-container1": Behaviour(
        TOOLKIT_REPO, "the library has nothing to do without a GPU.", lambda n, v: _marker(n)
    ),
    "libnvidia-container-tools": Behaviour(
        TOOLKIT_REPO, "the CLI has nothing to do without a GPU.", lambda n, v: _marker(n)
    ),
    "datacenter-gpu-manager": Behaviour(
        CUDA_REPO,
        "DCGM 3: nv-hostengine listens on 127.0.0.1:5555 and serves no GPU data; dcgmi talks "
        "to it.",
        lambda n, v: (
            *_programs(n, "dcgm.py", ("nv-hostengine", "dcgmi"), v),
            File("/lib/systemd/system/nvidia-dcgm.service", _DCGM_UNIT),
        ),
        postinst=_system_user("nvidia-dcgm", "/var/log/nvidia-dcgm"),
    ),
    "datacenter-gpu-manager-4-core": Behaviour(
        CUDA_REPO,
        "DCGM 4: nv-hostengine listens on 127.0.0.1:5555 and serves no GPU data; dcgmi talks "
        "to it.",
        lambda n, v: (
            *_programs(n, "dcgm.py", ("nv-hostengine", "dcgmi"), v),
            File("/lib/systemd/system/nvidia-dcgm.service", _DCGM_UNIT),
        ),
        postinst=_system_user("nvidia-dcgm", "/var/log/nvidia-dcgm"),
    ),
    "datacenter-gpu-manager-4-cuda12": Behaviour(
        CUDA_REPO,
        "DCGM's CUDA 12 components have nothing to run without a GPU.",
        lambda n, v: _marker(n),
    ),
    "datacenter-gpu-manager-exporter": Behaviour(
        CUDA_REPO,
        "dcgm-exporter serves /metrics on :9400 with a HELP/TYPE pair per configured field.",
        lambda n, v: (
            *_programs(n, "dcgm.py", ("dcgm-exporter",), v),
            File("/etc/dcgm-exporter/default-counters.csv", _DCGM_COUNTERS, conffile=True),
            File("/lib/systemd/system/nvidia-dcgm-exporter.service", _EXPORTER_UNIT),
        ),
    ),
    "nvidia-fabricmanager-535": Behaviour(
        CUDA_REPO,
        "nv-fabricmanager reads its config, finds no NVSwitch and stops with "
        "NV_WARN_NOTHING_TO_DO, as the real one does on such a host.",
        lambda n, v: (
            *_programs(n, "fabricmanager.py", ("nv-fabricmanager",), v),
            File("/usr/share/nvidia/nvswitch/fabricmanager.cfg", _FM_CONFIG, conffile=True),
            File("/lib/systemd/system/nvidia-fabricmanager.service", _FM_UNIT),
        ),
    ),
}

#: Which record file holds each repository's records.
REPO_INDEX = {TOOLKIT_REPO: "nvidia-container-toolkit", CUDA_REPO: "cuda-debian12"}


def from_record(record: dict[str, str], behaviour: Behaviour) -> Package:
    """The stand-in of one recorded package: the record's metadata, the stand-in's files."""
    name, version = record["Package"], record["Version"]
    summary = record.get("Description", name).splitlines()[0]
    section = record.get("Section", "utils").rsplit("/", 1)[-1]
    return Package(
        name=name,
        version=version,
        summary=summary,
        description=_describe(behaviour.what),
        repo=behaviour.repo,
        files=tuple(behaviour.files(name, version)),
        relations={k: record[k] for k in RELATIONS if record.get(k)},
        postinst=behaviour.postinst,
        section=section,
        provenance=f"{record['X-Racksmith-Record']}; {record['X-Racksmith-Source']} "
        f"(read {record['X-Racksmith-Read']})",
    )


def all_packages() -> list[Package]:
    """Every stand-in, generated from the lab's records (repository by repository)."""
    packages = []
    for repo, index in REPO_INDEX.items():
        records = load_index(index)
        wanted = {n for n, b in BEHAVIOURS.items() if b.repo == repo}
        if missing := sorted(wanted - records.keys()):
            raise ValueError(f"index/{index}.Packages.txt has no record of {', '.join(missing)}")
        if extra := sorted(records.keys() - wanted):
            raise ValueError(f"index/{index}.Packages.txt: no stand-in for {', '.join(extra)}")
        packages += [from_record(records[n], BEHAVIOURS[n]) for n in sorted(wanted)]
    return packages
