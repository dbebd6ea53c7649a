"""The GPU-host roles' Ubuntu 22.04 paths, exercised in check mode against Ubuntu facts (issue 10:
"The Ubuntu paths are written from the vendors' documentation, exercised in check mode against
Ubuntu facts").

The lab is Debian 12, so nothing else runs these paths. This test runs the real
``playbooks/configure.yml`` (every role, in its order, through ``apply_role.yml``) with
``--check --diff`` on a local connection, for four HGX H200 hosts at once: ``hgx-jammy``
(Ubuntu 22.04 facts, ``tests/fixtures/ubuntu-22.04/``; the driver from Canonical's archive,
``nvidia_driver_source: ubuntu``), ``hgx-bookworm`` (Debian 12 facts, ``tests/fixtures/debian-12/``,
so that a wrong choice of vars files cannot pass unnoticed), both with every role;
``hgx-jammy-cuda`` (Ubuntu, the driver from NVIDIA's CUDA repository at an exact version) and
``hgx-jammy-pinned`` (Ubuntu, an exact version on Canonical's archive, which preflight must
refuse), with the driver role only (configure.yml's ``racksmith_configure_roles``). One run,
about 110 s of CPU; it needs root, as the roles' check mode does (get_url checks that it could
write /etc/apt/keyrings), and python3-apt.

What the roles would read from the host is pointed at fixtures, never at this machine:

- facts: seeded into a jsonfile fact cache in the test's directory (gathering is ``smart``, so
  the play's fact gathering keeps them);
- the PCI bus: each role's ``<role>_sysfs_root`` points at a sysfs tree built from
  ``pci-sysfs.txt`` (8 H200 GPUs, 4 NVSwitches, 8 ConnectX-7 InfiniBand, 2 ConnectX-7 Ethernet,
  an ASPEED BMC display controller);
- apt and dpkg: ``APT_CONFIG`` and ``DPKG_ADMINDIR`` point at an empty package database and at
  a package list (``apt/``) holding only Canonical's precompiled modules for kernel
  5.15.0-125-generic, so the host is "new" (nothing installed) whatever this machine has;
- the repositories' signing keys: the site mirror variables point at ``file://`` copies;
- the ZFS disk decision (``zfs_pool_create``, which reads ``lsblk``, ``/dev/disk/by-id`` and
  ``zpool``) is left out with ``--skip-tags``: on a local connection it would judge this
  machine's disks. It is unit-tested on a real server's data (tests/unit/roles/
  test_zfs_disk_plan.py); here zfs_pool runs its preflight and must record nothing.

Tasks marked ``check_mode: false`` really run on this machine: each of them only reads (the PCI
probes read the fixture tree, ``apt-cache policy`` the fixture lists, ``findmnt`` this machine's
mounts); none writes. Nothing is installed. No install of the GPU-host roles fails or is
ignored (issue 20): where apt does not know a package yet (a repository this run adds, or, here,
lists that lack it) check mode says what a real run would install, and the test asserts exactly
that list; where apt knows them, the apt task itself runs in check mode. Whether the names and
versions resolve against the real Ubuntu and NVIDIA indexes is the apt-resolution test's part
(racksmith.gpupkgs.install_plan over the recorded indexes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from racksmith.testing.sysfs import write_pci_tree

REPO = Path(__file__).resolve().parents[2]
CALLBACKS = Path(__file__).resolve().parent / "callback_plugins"
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
FIXTURES = REPO / "tests" / "fixtures"
UBUNTU = FIXTURES / "ubuntu-22.04"
SYSTEM_PYTHON = "/usr/bin/python3"  # where python3-apt lives; the apt module respawns there

PRECOMPILED_KERNEL = "5.15.0-125-generic"  # the facts' kernel (flavour generic)
NEWER_KERNEL = "5.15.0-126-generic"
CUDA_VERSION = "580.95.05"  # hgx-jammy-cuda's exact pin (the CUDA repository keeps releases)
RELEASE_SHA256 = "0" * 63 + "1"  # never compared: check mode fetches nothing

#: host -> (facts fixture, facts that differ from it)
_OTHER_HOST = {
    "ansible_kernel": NEWER_KERNEL,
    "ansible_cmdline": {"BOOT_IMAGE": f"/boot/vmlinuz-{NEWER_KERNEL}", "ro": True},
    "ansible_proc_cmdline": {"BOOT_IMAGE": f"/boot/vmlinuz-{NEWER_KERNEL}", "ro": True},
}
HOSTS = {
    "hgx-jammy": ("ubuntu-22.04", {}),
    "hgx-jammy-pinned": ("ubuntu-22.04", {**_OTHER_HOST, "ansible_hostname": "hgx-h200-04"}),
    "hgx-jammy-cuda": (
        "ubuntu-22.04",
        {
            "ansible_kernel": NEWER_KERNEL,
            "ansible_cmdline": {"BOOT_IMAGE": f"/boot/vmlinuz-{NEWER_KERNEL}", "ro": True},
            "ansible_proc_cmdline": {"BOOT_IMAGE": f"/boot/vmlinuz-{NEWER_KERNEL}", "ro": True},
            "ansible_hostname": "hgx-h200-03",
            "ansible_nodename": "hgx-h200-03",
            "ansible_fqdn": "hgx-h200-03.rack.example",
        },
    ),
    "hgx-bookworm": ("debian-12", {}),
}
UBUNTU_HOSTS = ("hgx-jammy", "hgx-jammy-cuda", "hgx-jammy-pinned")
FULL_HOSTS = ("hgx-jammy", "hgx-bookworm")  # every role; the others: nvidia_driver only

ROLES = [
    "base",
    "nvidia_driver",
    "gdr",
    "zfs_pool",
    "container_runtime",
    "dcgm",
    "node_exporter",
]
ROLES_OF = {
    "hgx-jammy": ROLES,
    "hgx-jammy-cuda": ["nvidia_driver", "node_exporter"],
    "hgx-jammy-pinned": ["nvidia_driver"],
    "hgx-bookworm": ROLES,
}
#: configure.yml's one argument-spec check per host (racksmith.core.role_arguments)
ARGSPEC_CHECK = "Check the inputs of the roles this host selects against their argument specs"
RUN_HOSTS = ("hgx-jammy", "hgx-jammy-cuda", "hgx-bookworm")  # the refused host stops at preflight

#: the roles that read the PCI bus (through <role>_sysfs_root)
PCI_ROLES = ("nvidia_driver", "gdr", "container_runtime", "dcgm")
#: Each role's one preflight task (racksmith.core.role_preflight), by name.
CR_PREFLIGHT = (
    "Preflight | Facts, the inputs, the PCI bus, the data root's"
    " filesystem, daemon.json and apt's view, what drifted"
)
DCGM_PREFLIGHT = (
    "Preflight | Facts, the platform, the versions, the exporter and"
    " its fields; the host; what drifted"
)
BASE_PREFLIGHT = (
    "Preflight | Facts, the inputs, the host (what base decides on,"
    " and everything it sets up), what drifted"
)
NE_PREFLIGHT = (
    "Preflight | Facts, the inputs, and what the last run left"
    " (package, hold, flags, directory, unit, apt)"
)
#: roles whose one read of the host (racksmith.hostprobe) has the PCI bus as a section
SECTION_PROBES = {
    "container_runtime": (CR_PREFLIGHT),
    "dcgm": DCGM_PREFLIGHT,
}


def _apt(root: Path) -> dict[str, str]:
    """An apt and dpkg of their own: no package installed, lists from the fixture."""
    dpkg = root / "dpkg"
    for sub in ("updates", "info"):
        (dpkg / sub).mkdir(parents=True)
    for name in ("status", "available"):
        (dpkg / name).write_text("")
    for sub in ("cache", "parts", "preferences.d"):
        (root / sub).mkdir()
    conf = root / "apt.conf"
    conf.write_text(
        "\n".join(
            f'{key} "{value}";'
            for key, value in (
                ("Dir::Etc::SourceList", UBUNTU / "apt" / "sources.list"),
                ("Dir::Etc::SourceParts", root / "parts"),
                ("Dir::Etc::Preferences", root / "preferences"),
                ("Dir::Etc::PreferencesParts", root / "preferences.d"),
                ("Dir::State::Lists", UBUNTU / "apt" / "lists"),
                ("Dir::State::status", dpkg / "status"),
                ("Dir::Cache", root / "cache"),
                ("APT::Architecture", "amd64"),
            )
        )
        + '\nAPT::Architectures { "amd64"; };\n'
    )
    return {"APT_CONFIG": str(conf), "DPKG_ADMINDIR": str(dpkg)}


def _seed_facts(cache_dir: Path, env: dict[str, str]) -> None:
    """Store each host's facts through Ansible's own fact cache (its on-disk format is Ansible's
    business), marked gathered so that the play's smart gathering keeps them."""
    facts = {}
    for host, (fixture, changes) in HOSTS.items():
        base = json.loads((FIXTURES / fixture / "facts.json").read_text())
        facts[host] = {**base, **changes, "_ansible_facts_gathered": True}
    seed = (
        "import json, sys\n"
        "from ansible import constants as C\n"
        "from ansible.plugins.loader import cache_loader\n"
        "cache = cache_loader.get(C.CACHE_PLUGIN)  # as ansible-playbook's VariableManager\n"
        "for host, facts in json.load(sys.stdin).items():\n"
        "    cache.set(host, facts)\n"
    )
    subprocess.run(
        [sys.executable, "-c", seed],
        input=json.dumps(facts), env=env, text=True, check=True, timeout=60,
    )  # fmt: skip
    if len(list(cache_dir.iterdir())) != len(HOSTS):
        raise RuntimeError(f"fact cache {cache_dir} holds {sorted(os.listdir(cache_dir))}")


def _inventory(path: Path, sysfs: Path, mirror: Path) -> None:
    site = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        # configure.yml says become: true; this process already has the user it has.
        "ansible_become": False,
        # the sysfs tree the PCI probes read
        **{f"{role}_sysfs_root": str(sysfs) for role in PCI_ROLES},
        # an air-gapped site's mirrors (here: local copies of the keys; nothing is fetched)
        "container_runtime_toolkit_repo_mirror": f"file://{mirror}",
        "container_runtime_toolkit_repo_key_url": f"file://{mirror}/libnvidia-container/gpgkey",
        "dcgm_repo_mirror": f"file://{mirror}",
        "dcgm_repo_key_url": f"file://{mirror}/cuda.pub",
        "base_chrony_servers": ["ntp1.rack.example"],
        # GPUDirect over DMA-BUF with the open modules (this machine has no DOCA-OFED's openibd)
        "gdr_method": "dmabuf",
        "nvidia_driver_modules": "open",
    }
    hosts = {host: {} for host in HOSTS}
    # configure.yml's own variable, per host: these two only need the driver role
    for host in ("hgx-jammy-cuda", "hgx-jammy-pinned"):
        hosts[host]["racksmith_configure_roles"] = [
            f"racksmith.core.{role}" for role in ROLES_OF[host]
        ]
    hosts["hgx-jammy-cuda"].update(
        nvidia_driver_source="cuda",
        nvidia_driver_branch="580",
        nvidia_driver_version=CUDA_VERSION,
        # node_exporter from the upstream release at the site's mirror (here a file: nothing is
        # fetched in check mode, and nothing is unpacked)
        node_exporter_install_method="release",
        node_exporter_release_url=f"file://{mirror}/node_exporter-1.9.1.linux-amd64.tar.gz",
        node_exporter_release_sha256=RELEASE_SHA256,
    )
    # an exact version on Canonical's archive: preflight refuses it, saying why
    hosts["hgx-jammy-pinned"].update(nvidia_driver_version="580.95.05")
    path.write_text(json.dumps({"maas_deployed": {"hosts": hosts, "vars": site}}))


#: Every file the roles would write, remove or create on the host (their vars), and the live
#: sysctls base would set: on a local connection that host is this machine, so the test
#: records their state before and after the run (test_check_mode_wrote_nothing).
WRITE_TARGETS = (
    "/etc/ansible/facts.d",
    "/etc/ansible/facts.d/",  # gdr's template loop writes its fact into the folder
    "/etc/ansible/facts.d/racksmith_base.fact",
    "/etc/apt/apt.conf.d/95racksmith-proxy",
    "/etc/apt/keyrings",
    "/etc/apt/keyrings/racksmith-cuda.asc",
    "/etc/apt/keyrings/racksmith-nvidia-container-toolkit.asc",
    "/etc/apt/preferences.d/racksmith-nvidia-driver",
    "/etc/apt/preferences.d/racksmith-cuda",
    "/etc/apt/apt.conf.d/51racksmith-nvidia-driver-unattended",
    "/etc/ansible/facts.d/racksmith_gdr.fact",
    "/etc/systemd/system/nvidia-persistenced.service.d",
    "/etc/systemd/system/nvidia-persistenced.service.d/racksmith.conf",
    "/etc/udev/rules.d",
    "/etc/default/node_exporter",
    "/etc/systemd/system/node_exporter.service",
    "/usr/local/bin/node_exporter",
    "/var/cache/racksmith",
    "/var/cache/racksmith/node_exporter.tar.gz",
    "/usr/local/lib/racksmith/node_exporter-0000000000000000",
    "/etc/udev/rules.d/71-nvidia-dev-char.rules",
    "/etc/apt/sources.list.d/racksmith-cuda.list",
    "/etc/apt/sources.list.d/racksmith-nvidia-container-toolkit.list",
    "/etc/chrony",
    "/etc/chrony/chrony.conf",
    "/etc/dcgm-exporter/racksmith-counters.csv",
    "/etc/default/chrony",
    "/etc/default/grub.d/90-racksmith-gdr.cfg",
    "/etc/default/prometheus-node-exporter",
    "/etc/docker",
    "/etc/docker/daemon.json",
    "/etc/modprobe.d/racksmith-blacklist-nouveau.conf",
    "/etc/sysctl.d/90-racksmith-base.conf",
    "/etc/systemd/system/chrony.service.d/racksmith.conf",
    "/etc/systemd/system/nvidia-dcgm-exporter.service.d",
    "/etc/systemd/system/nvidia-dcgm-exporter.service.d/racksmith.conf",
    "/etc/systemd/system/racksmith-disable-acs.service",
    "/etc/systemd/system/racksmith-nvidia-peermem.service",
    "/usr/local/sbin/racksmith-cpu-governor",
    "/usr/local/sbin/racksmith-disable-acs",
    "/var/lib/prometheus/node-exporter",
)
SYSCTLS = (
    "kernel/numa_balancing",
    "vm/swappiness",
    "net/core/somaxconn",
    "net/ipv4/tcp_mtu_probing",
)


def _snapshot() -> dict[str, object]:
    """What this machine has at each write target (type, size, mtime) and its live sysctls."""
    state: dict[str, object] = {}
    for path in WRITE_TARGETS:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            state[path] = None
        else:
            state[path] = (st.st_mode, st.st_size, st.st_mtime_ns)
    for key in SYSCTLS:
        proc = Path("/proc/sys") / key
        state[str(proc)] = proc.read_text() if proc.exists() else None
    return state


@pytest.fixture(scope="module")
def check_run(tmp_path_factory):
    """One ansible-playbook --check --diff of configure.yml on the three hosts."""
    if (
        not Path(SYSTEM_PYTHON).exists()
        or subprocess.run(
            [SYSTEM_PYTHON, "-c", "import apt"], capture_output=True, check=False
        ).returncode
    ):
        pytest.skip(f"the apt module's check mode needs python3-apt for {SYSTEM_PYTHON}")
    if not shutil.which("apt-cache") or not shutil.which("dpkg"):
        pytest.skip("needs apt-cache and dpkg (a Debian-family controller)")
    if os.geteuid() != 0:
        # get_url's check mode refuses a destination directory it could not write
        # (/etc/apt/keyrings); check mode itself writes nothing (test_check_mode_wrote_nothing)
        pytest.skip("the roles' check mode needs root (get_url checks /etc/apt/keyrings)")
    tmp = tmp_path_factory.mktemp("ubuntu-check")
    sysfs = tmp / "sys"
    assert write_pci_tree(UBUNTU / "pci-sysfs.txt", sysfs) == 50
    mirror = tmp / "mirror"
    (mirror / "libnvidia-container").mkdir(parents=True)
    for key in (mirror / "libnvidia-container" / "gpgkey", mirror / "cuda.pub"):
        key.write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\n(test: never imported)\n")
    # node_exporter's release at the "mirror": check mode neither fetches nor unpacks it
    (mirror / "node_exporter-1.9.1.linux-amd64.tar.gz").write_bytes(b"(test: never unpacked)\n")
    (tmp / "apt").mkdir()
    cache = tmp / "facts"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "APT_", "DPKG_"))}
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_CACHE_PLUGIN="jsonfile",
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(cache),
        ANSIBLE_GATHERING="smart",
        # tests/integration/callback_plugins/results_by_host.py: each result under its own host
        # and task (ansible.posix.json misfiles some under the free strategy)
        ANSIBLE_CALLBACK_PLUGINS=f"{REPO / 'plugins' / 'callback'}:{CALLBACKS}",
        ANSIBLE_STDOUT_CALLBACK="results_by_host",
        # no run report: the JSON document is the only output (naming the stdout callback
        # is how to enable nothing else; an empty list is refused)
        ANSIBLE_CALLBACKS_ENABLED="results_by_host",
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_REMOTE_TMP=str(tmp / "module-tmp"),  # the local connection's module files
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS="3",
        # The hosts run different role lists; each keeps its own order under any strategy
        # (configure.yml's loop_control: extended; test_configure_role_order.py).
        ANSIBLE_STRATEGY="free",
        ANSIBLE_INTERNAL_POLL_INTERVAL="0.05",  # the free strategy's loop spins at 0.001 s
        ANSIBLE_PIPELINING="True",
        RACKSMITH_RUN_DIR=str(tmp / "run"),
        **_apt(tmp / "apt"),
    )
    _seed_facts(cache, env)
    inventory = tmp / "inventory.json"
    _inventory(inventory, sysfs, mirror)
    before = _snapshot()
    done = subprocess.run(
        [PLAYBOOK, str(REPO / "playbooks" / "configure.yml"), "-i", str(inventory),
         "--check", "--diff", "--skip-tags", "zfs_pool_create"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    (tmp / "run.json").write_text(done.stdout)  # kept with the test's directory, to read
    # 2: a host failed, which must be hgx-jammy-pinned's refusal alone (the tests check stats)
    assert done.returncode == 2, done.stdout[-6000:] + done.stderr[-3000:]
    document = json.loads(done.stdout)
    failed = {host for host, stats in document["stats"].items() if stats["failures"]}
    assert failed == {"hgx-jammy-pinned"}, document["stats"]
    return Run(document, sysfs, before, _snapshot())


class Run:
    """The JSON document of the run, by host: (role, task name, result) in the order run."""

    def __init__(self, document: dict, sysfs: Path, before: dict, after: dict) -> None:
        self.stats = document["stats"]
        self.sysfs = sysfs
        self.before, self.after = before, after
        self.tasks: dict[str, list[tuple[str, str, dict]]] = {host: [] for host in HOSTS}
        for record in document["results"]:
            result = record["result"]
            # configure.yml imports racksmith's roles statically: a role the host does not
            # select (racksmith_configure_roles) walks its tasks as skips; those did not run
            if result.get("skipped") and "racksmith_configure_roles" in str(
                result.get("false_condition", "")
            ):
                continue
            role, _, name = record["task"].rpartition(" : ")
            self.tasks[record["host"]].append(
                (role.removeprefix("racksmith.core."), name, record["result"])
            )

    def result(self, host: str, role: str, name: str) -> dict:
        found = [r for ro, n, r in self.tasks[host] if ro == role and n == name]
        assert len(found) == 1, f"{host}: {role} : {name} ran {len(found)} times"
        return found[0]

    def fact(self, host: str, role: str, name: str, key: str):
        return self.result(host, role, name)["ansible_facts"][key]

    def failed(self, host: str) -> dict[tuple[str, str], dict]:
        return {(ro, n): r for ro, n, r in self.tasks[host] if r.get("failed")}


OS_VARS = "Preflight | Load the OS-specific values"
NV_PREFLIGHT = "Preflight | Facts, the PCI bus, the inputs and what the source can serve"
GDR_PREFLIGHT = "Preflight | Facts, the PCI bus, the platform, the kernel parameters and the method"
WOULD = "Say what check mode cannot ask apt about"


def _item(result: dict, key: str, value: str) -> dict:
    """The result of the loop item of a looped file task whose item has key == value."""
    (found,) = [r for r in result["results"] if r["item"][key] == value]
    return found


def _requested(result: dict) -> list[str]:
    """The package names (with version pins) an apt or dpkg_selections task asked for."""
    if result.get("results"):
        return [item["item"] for item in result["results"]]
    name = result["invocation"]["module_args"]["name"]
    return name if isinstance(name, list) else [name]


#: (role, install task, its check-mode report) -> what each host's install asks for, in order.
#: the driver and fabric manager of exactly its version are one install (issue 25)
DRIVER_TASK = (
    "nvidia_driver",
    "Driver | Install the driver, and fabric manager of exactly its version where it applies",
    f"Driver | {WOULD}",
)
#: the files the driver role writes: one looped template task
DRIVER_FILES = (
    "Driver | Write the version pin, the unattended-upgrades exclusion, the blacklist"
    " and the drop-in"
)
#: gdr says what check mode leaves to the real run in its one assert after the changes
GDR_FINAL = "GDR | Assert DOCA-OFED and what NCCL needs; say what check mode leaves to the real run"
GDR_TASK = ("gdr", "GDR | Install the distribution's RDMA stack (DMA-BUF)", GDR_FINAL)
#: container_runtime installs Docker and the toolkit in one apt task; one debug says what check
#: mode cannot ask apt about (and, when it differs, why the storage driver does)
CONTAINER_TASK = (
    "container_runtime",
    "Install Docker and the toolkit at the pinned versions",
    "Preflight | Say why the storage driver differs from the site's, and what check mode cannot"
    " ask apt about",
)
DCGM_TASK = ("dcgm", "Install | Install DCGM", f"Install | {WOULD}")
NODE_TASK = (
    "node_exporter",
    "Install | Install the node exporter package",
    f"Install | {WOULD}",
)
TOOLKIT = ["nvidia-container-toolkit=1.17.8-1", "nvidia-container-toolkit-base=1.17.8-1"]
DCGM4 = ["datacenter-gpu-manager-4-cuda12", "datacenter-gpu-manager-exporter"]
EXPECTED = {
    "hgx-jammy": {
        # Canonical's archive: the open modules through the kernel flavour's metapackage (a
        # kernel update brings its modules); no version anywhere (the archive keeps only the
        # newest). Before issue 20: linux-modules-nvidia-535-server-<uname -r> and =535.216.03-*.
        DRIVER_TASK: [
            "nvidia-headless-no-dkms-580-server-open",
            "nvidia-utils-580-server",
            "linux-modules-nvidia-580-server-open-generic-hwe-22.04",
            # fabric manager of the driver's version, in the same install
            "nvidia-fabricmanager-580",
            "libnvidia-nscq-580",
        ],
        GDR_TASK: ["rdma-core", "ibverbs-utils"],
        CONTAINER_TASK: ["docker.io", *TOOLKIT],  # before: docker.io=24.0.7-0ubuntu2~22.04.1
        DCGM_TASK: DCGM4,  # before: datacenter-gpu-manager=1:3.3.9, dcgm-exporter=3.3.9-3.6.1
        NODE_TASK: ["prometheus-node-exporter"],
    },
    "hgx-jammy-cuda": {
        # NVIDIA's CUDA repository keeps releases: the exact version, DKMS with the flavour's
        # headers, and 580's unbranched fabric manager names
        DRIVER_TASK: [
            f"nvidia-headless-580-open={CUDA_VERSION}-*",
            f"nvidia-utils-580={CUDA_VERSION}-*",
            "linux-headers-generic-hwe-22.04",
            f"nvidia-fabricmanager={CUDA_VERSION}-*",
            f"libnvidia-nscq={CUDA_VERSION}-*",
            f"libnvsdm={CUDA_VERSION}-*",
        ],
    },
    "hgx-bookworm": {
        DRIVER_TASK: [
            "nvidia-tesla-535-smi",
            "libnvidia-tesla-535-cuda1",
            "libnvidia-tesla-535-ml1",
            # nvidia-persistenced's cfg library, of the driver's version
            "libnvidia-tesla-535-cfg1",
            "nvidia-tesla-535-kernel-dkms",
            "linux-headers-6.1.0-28-amd64",
            "nvidia-persistenced",
            "nvidia-fabricmanager-535",
            "libnvidia-nscq-535",
        ],
        GDR_TASK: ["rdma-core", "ibverbs-utils"],
        CONTAINER_TASK: ["docker.io=20.10.24+dfsg1-1+deb12u1+b6", *TOOLKIT],
        DCGM_TASK: DCGM4,
        NODE_TASK: ["prometheus-node-exporter"],
    },
}


def _planned(run, host: str, task: tuple[str, str, str]) -> list[str]:
    """What an install asked for: the apt task's package list where apt knew the packages (it
    ran in check mode), then the specs of the check-mode report ("would install [...]") for
    those it did not know. No package is both installed and reported."""
    role, install, report = task
    apt = run.result(host, role, install)
    said = run.result(host, role, report)
    installed = [] if apt.get("skipped") else _requested(apt)
    messages = [] if said.get("skipped") else said["msg"]
    reported = []
    # a list where one debug says several things (container_runtime: the storage driver too)
    for msg in [messages] if isinstance(messages, str) else messages:
        if isinstance(messages, str):
            assert msg.startswith(f"{role} would install "), msg
        elif not msg.startswith(f"{role} would install "):
            continue
        listed = msg.removeprefix(f"{role} would install ").split("; apt does not know")[0]
        # one package, named as it is, or a list
        reported += json.loads(listed.replace("'", '"')) if listed.startswith("[") else [listed]
    assert installed or reported, (host, install, "neither installed nor reported")
    assert not set(installed) & set(reported), (host, install, "both installed and reported")
    return installed + reported


@pytest.mark.parametrize("host", RUN_HOSTS)
def test_every_role_runs_and_no_install_fails_or_is_ignored(check_run, host):
    """Before issue 20 every install ran with ignore_errors in check mode; now no task of any
    role fails and none is ignored (base's chrony install, its chrony and governor services
    included: they say why they wait for the real run)."""
    stats = check_run.stats[host]
    assert (stats["failures"], stats["rescued"], stats["unreachable"]) == (0, 0, 0), stats
    # each role's own entry point, in configure.yml's order: every role's main.yml opens with
    # its one preflight task, racksmith.core.role_preflight (dcgm's 'repo' entry point, which
    # nvidia_driver includes for the CUDA repository, does not; configure.yml checks the
    # argument specs once, before the first role, so there is no per-role validation task)
    order = list(dict.fromkeys(
        role for role, name, _ in check_run.tasks[host]
        if name.startswith("Preflight | Facts")
    ))  # fmt: skip
    assert check_run.result(host, "", ARGSPEC_CHECK)["roles_checked"] == [
        f"racksmith.core.{role}" for role in ROLES_OF[host]
    ]
    assert order == ROLES_OF[host]
    assert set(check_run.failed(host)) == set()
    assert stats["ignored"] == 0, stats


@pytest.mark.parametrize("host", [host for host in RUN_HOSTS if "base" in ROLES_OF[host]])
def test_base_says_what_its_check_run_leaves_to_the_real_run(check_run, host):
    """The hosts are new (the fixture lists lack chrony): base skips the chrony install and
    its service with a said reason instead of an ignored failure."""
    # one report of what base leaves to the real run (issue 25: one debug, not five)
    (said, waits, *_) = check_run.result(host, "base", "Say what the role did not apply")["msg"]
    assert said.startswith("base would install chrony; apt does not know ['chrony'] yet")
    assert check_run.result(host, "base", "Time | Install chrony").get("skipped")
    assert waits == "chrony is not installed on this host yet; the real run installs and starts it"
    units = check_run.result(
        host, "base", "Units | Enable and start chrony, enable the governor at boot"
    )
    chrony = [r for r in units["results"] if r["item"]["name"] == "chrony"]
    assert [r.get("skipped") for r in chrony] == [True]


@pytest.mark.parametrize("host", RUN_HOSTS)
def test_each_install_asks_for_the_plan_of_its_source_and_branch(check_run, host):
    planned = {task: _planned(check_run, host, task) for task in EXPECTED[host]}
    assert planned == EXPECTED[host]


def test_an_exact_version_on_canonicals_archive_is_refused_before_anything_runs(check_run):
    """Before issue 20 the role pinned =535.216.03-* on Canonical's archive, which keeps only
    the newest version: the pin failed on the first real host."""
    host = "hgx-jammy-pinned"
    assert check_run.stats[host]["rescued"] == 1
    (failed,) = [r for (role, _), r in check_run.failed(host).items() if role == "nvidia_driver"]
    assert "keeps only the newest version of each package" in failed["msg"]
    assert "nvidia_driver_source: cuda" in failed["msg"]
    names = [name for role, name, _ in check_run.tasks[host] if role == "nvidia_driver"]
    assert not [name for name in names if name.startswith(("Driver |", "Fabric manager |"))]


def test_the_cuda_repository_comes_before_the_first_package_from_it(check_run):
    """Before issue 20 fabric manager and a CUDA-repository driver needed the repository that
    dcgm adds after nvidia_driver ran. Now nvidia_driver includes dcgm's repository tasks
    first: on a host that runs the driver role only."""
    host = "hgx-jammy-cuda"
    tasks = [(role, name) for role, name, _ in check_run.tasks[host]]
    source = tasks.index(
        ("dcgm", "Repo | Add the repository, trusted for its own key only (signed-by)")
    )
    assert source < tasks.index(("nvidia_driver", DRIVER_TASK[1]))
    diff = check_run.result(
        host, "dcgm", "Repo | Add the repository, trusted for its own key only (signed-by)"
    )["diff"][0]
    assert "/compute/cuda/repos/ubuntu2204/x86_64/ /" in diff["after"]
    written = check_run.result(host, "nvidia_driver", DRIVER_FILES)
    pin = _item(written, "dest", "/etc/apt/preferences.d/racksmith-nvidia-driver")["diff"][0][
        "after"
    ]
    assert f"Pin: version {CUDA_VERSION}-*" in pin
    # the CUDA repository preferred for every package (NVIDIA's own pin): fabric manager 535
    # would otherwise come from Canonical's transitional 535.309.01 (-> 580) packages
    prefs = check_run.result(
        host, "dcgm", "Repo | Keep the driver's packages on the driver's source"
    )
    assert (
        "Package: *\nPin: release l=NVIDIA CUDA\nPin-Priority: 600\n" in prefs["diff"][0]["after"]
    )
    # on Canonical's archive the CUDA repository serves no driver package
    prefs = check_run.result(
        "hgx-jammy", "dcgm", "Repo | Keep the driver's packages on the driver's source"
    )
    assert (
        "Package: nvidia-* libnvidia-*\nPin: release l=NVIDIA CUDA\nPin-Priority: -1\n"
        in (prefs["diff"][0]["after"])
    )
    # on Canonical's archive there is no version pin, and none is left behind
    paths = check_run.result(
        "hgx-jammy",
        "nvidia_driver",
        "Driver | Create the drop-in directory and remove a version pin the site no longer sets",
    )
    removed = _item(paths, "path", "/etc/apt/preferences.d/racksmith-nvidia-driver")
    assert removed["item"]["state"] == "absent"
    assert removed["path"] == "/etc/apt/preferences.d/racksmith-nvidia-driver"
    written = check_run.result("hgx-jammy", "nvidia_driver", DRIVER_FILES)
    assert "/etc/apt/preferences.d/racksmith-nvidia-driver" not in [
        r["item"]["dest"] for r in written["results"]
    ]


@pytest.mark.parametrize("host", RUN_HOSTS)
def test_kernel_and_driver_move_together(check_run, host):
    """Before issue 20 unattended-upgrades could move the kernel without its NVIDIA modules."""
    said = check_run.result(
        host,
        "nvidia_driver",
        NV_PREFLIGHT,
    )["msg"]
    assert "held; unattended-upgrades skips packages matching linux-, nvidia-, libnvidia-" in said
    written = check_run.result(host, "nvidia_driver", DRIVER_FILES)
    unattended = "/etc/apt/apt.conf.d/51racksmith-nvidia-driver-unattended"
    after = _item(written, "dest", unattended)["diff"][0]["after"]
    assert 'Unattended-Upgrade::Package-Blacklist {\n    "linux-";\n    "nvidia-";' in after


@pytest.mark.parametrize("host", RUN_HOSTS)
def test_persistence_mode_is_on(check_run, host):
    """Before issue 20 the stock unit's --no-persistence-mode stood."""
    written = check_run.result(host, "nvidia_driver", DRIVER_FILES)
    result = _item(
        written, "dest", "/etc/systemd/system/nvidia-persistenced.service.d/racksmith.conf"
    )
    dropin = {**result["diff"][0], "invocation": result["invocation"]}
    assert dropin["invocation"]["module_args"]["dest"] == (
        "/etc/systemd/system/nvidia-persistenced.service.d/racksmith.conf"
    )
    user = "nvpd" if host == "hgx-bookworm" else "nvidia-persistenced"
    start = f"ExecStart=/usr/bin/nvidia-persistenced --user {user} --persistence-mode --verbose\n"
    assert f"ExecStart=\n{start}" in dropin["after"]
    assert "--no-persistence-mode" not in dropin["after"].split("[Service]")[1]


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_gdr_dmabuf_loads_no_peermem(check_run, host):
    """DMA-BUF with the open modules needs no nvidia-peermem: no unit is written for it."""
    written = check_run.result(
        host,
        "gdr",
        "GDR | Write the units, the ACS script, the kernel parameters and the local fact",
    )
    by_dest = {r["item"]["dest"]: r for r in written["results"]}
    assert by_dest["/etc/systemd/system/racksmith-nvidia-peermem.service"].get("skipped")
    # the copy into the folder names the file after the template: racksmith_gdr.fact
    fact = by_dest["/etc/ansible/facts.d/"]
    assert fact["diff"][0]["after_header"].endswith("racksmith_gdr.fact")
    assert json.loads(fact["diff"][0]["after"]) == {"method": "dmabuf", "module": ""}


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_docker_is_set_up_for_training(check_run, host):
    """Before issue 20: no daemon-wide memlock, and nothing against nvidia-docker#1730."""
    daemon = check_run.result(
        host,
        "container_runtime",
        "Docker | Write racksmith's daemon options, keeping keys it does not manage",
    )["diff"][0]["after"]
    ulimits = json.loads(daemon)["default-ulimits"]
    assert ulimits["memlock"] == {"Name": "memlock", "Hard": -1, "Soft": -1}
    (rule,) = [
        item["diff"][0]
        for item in check_run.result(
            host,
            "container_runtime",
            "Toolkit | Add the repository (signed-by) and the udev rule that links the NVIDIA"
            " device nodes",
        )["results"]
        if item["item"]["dest"].startswith("/etc/udev/")
    ]
    assert rule["after_header"] == "/etc/udev/rules.d/71-nvidia-dev-char.rules"
    assert "nvidia-ctk system create-dev-char-symlinks --create-all" in rule["after"]


#: the vars file each role chose: Ubuntu's where racksmith has one (node_exporter has none:
#: Debian's packaging is Ubuntu's), Debian 12's on the Debian host
VARS_FILES = {
    "ubuntu": {},
    "debian": {},
}


@pytest.mark.parametrize("host", list(HOSTS))
def test_each_role_chose_its_os_vars(check_run, host):
    os_name = "ubuntu" if host in UBUNTU_HOSTS else "debian"
    chosen = {}
    for role in [role for role in VARS_FILES[os_name] if role in ROLES_OF[host]]:
        result = check_run.result(host, role, OS_VARS)
        (path,) = result["ansible_included_var_files"]
        assert Path(path).parent.parts[-2:] == (role, "vars")
        chosen[role] = Path(path).name
    assert chosen == {r: f for r, f in VARS_FILES[os_name].items() if r in ROLES_OF[host]}


@pytest.mark.parametrize("host", RUN_HOSTS)
def test_the_driver_and_fabric_manager_apply_by_the_pci_bus(check_run, host):
    """8 GPUs (the ASPEED BMC display is no NVIDIA GPU) and 4 NVSwitches, read from the fixture
    tree, not this machine's /sys; nothing is skipped."""
    # the driver role reads the bus first and keeps the counts for the roles after it
    counts = check_run.fact(host, "nvidia_driver", NV_PREFLIGHT, "racksmith_pci_counts")
    assert (counts["gpu"], counts["nvswitch"]) == (8, 4)
    assert counts["root"] == str(check_run.sysfs)
    # fabric manager applies: not skipped, and installed with the driver (EXPECTED)
    assert check_run.result(
        host, "nvidia_driver", "Say why fabric manager is skipped on this host"
    ).get("skipped")
    for role in [role for role in PCI_ROLES if role in ROLES_OF[host]]:
        if role in SECTION_PROBES:  # the PCI bus is one section of the role's one read
            read = check_run.result(host, role, SECTION_PROBES[role])
            if "### racksmith-probe:pci\n" not in read["stdout"]:
                # an earlier role counted the bus under the same root (racksmith_pci_counts)
                assert f"{check_run.sysfs}/bus/pci" not in read["cmd"][-1]
                continue
            assert f"for d in {check_run.sysfs}/bus/pci/devices/*;" in read["cmd"][-1]
            pci = read["stdout"].split("### racksmith-probe:pci\n")[1].split("### ")[0]
            assert len(pci.splitlines()) == 50
            continue
        if role == "gdr":  # it reused the driver role's counts: its preflight read no bus
            found = check_run.result(host, "gdr", GDR_PREFLIGHT).get("ansible_facts", {})
            assert "racksmith_pci_counts" not in found
    assert [r["racksmith_skip"] for _, _, r in check_run.tasks[host] if "racksmith_skip" in r] == []


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_gdr_the_toolkit_and_dcgm_apply_by_the_pci_bus(check_run, host):
    """GPUs and ConnectX-7 InfiniBand on the bus: GDR, the toolkit and DCGM all apply."""
    # gdr applies: no skip said, and it went on to read the host (racksmith_pci_counts from the
    # driver role, the same fixture tree)
    assert "racksmith_skip" not in check_run.result(host, "gdr", GDR_PREFLIGHT)
    assert not check_run.result(host, "gdr", "GDR | Probe the host (DOCA-OFED, units, apt)").get(
        "skipped"
    )
    # the toolkit applies: no skip said, and the install asks for it (EXPECTED)
    assert check_run.result(
        host, "container_runtime", "Say why the NVIDIA toolkit is skipped on this host"
    ).get("skipped")
    assert set(TOOLKIT) <= set(_planned(check_run, host, CONTAINER_TASK))
    # DCGM applies: no skip said; the host is new, so everything drifted and the role runs on
    drifted = check_run.result(host, "dcgm", DCGM_PREFLIGHT)
    assert "racksmith_skip" not in drifted
    assert "datacenter-gpu-manager-4-cuda12: not installed" in drifted["drift"]
    assert drifted["msg"] == drifted["drift"]
    assert _planned(check_run, host, DCGM_TASK) == DCGM4


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_repositories_follow_the_os(check_run, host):
    release = "ubuntu2204" if host in UBUNTU_HOSTS else "debian12"
    # the last of them: on Debian nvidia_driver includes the same tasks first (fabric manager
    # comes from the CUDA repository there)
    add = ("dcgm", "Repo | Add the repository, trusted for its own key only (signed-by)")
    (*_, last) = [r for role, name, r in check_run.tasks[host] if (role, name) == add]
    source = last["diff"][0]
    assert source["after_header"] == "/etc/apt/sources.list.d/racksmith-cuda.list"
    assert (
        "deb [signed-by=/etc/apt/keyrings/racksmith-cuda.asc] "
        f"file://{check_run.sysfs.parent}/mirror/compute/cuda/repos/{release}/x86_64/ /"
    ) in source["after"]


@pytest.mark.parametrize("host", FULL_HOSTS)
def test_zfs_pool_decides_nothing_here(check_run, host):
    """The disk decision reads lsblk, /dev/disk/by-id and zpool on the host, which here is this
    machine: it is left out (--skip-tags zfs_pool_create; unit-tested on a real server's data).
    What runs: the preflight (bare metal, so no skip) and the Ubuntu or Debian package list; the
    local fact is not written, since nothing was decided."""
    # the per-OS package list (vars/main.yml's _zfs_pool_by_os), said by preflight
    said = check_run.result(host, "zfs_pool", "Preflight | Facts, the platform and the inputs")
    assert said["msg"].endswith(
        "ZFS tools zfsutils-linux" if host in UBUNTU_HOSTS
        else "ZFS tools linux-headers-6.1.0-28-amd64, zfs-dkms, zfsutils-linux"
    )  # fmt: skip
    # bare metal: not skipped, and the role does not end early
    assert "racksmith_skip" not in said
    names = [name for role, name, _ in check_run.tasks[host] if role == "zfs_pool"]
    assert not [name for name in names if name.startswith("Pool |")]
    assert check_run.result(host, "zfs_pool", "Facts | Record what the role did").get("skipped")


def test_check_mode_wrote_nothing(check_run):
    """Every file task's target is one the test watched, and none of them (nor a live sysctl)
    changed on this machine: check mode wrote nothing."""
    targets = set()
    for tasks in check_run.tasks.values():
        for _, _, result in tasks:
            for each in result.get("results") or [result]:
                if each.get("skipped") or result["action"].endswith(".stat"):
                    continue
                args = each.get("invocation", {}).get("module_args", {})
                targets |= {args[k] for k in ("dest", "path", "sysctl_file") if args.get(k)}
    assert targets <= set(WRITE_TARGETS), sorted(targets - set(WRITE_TARGETS))
    assert check_run.after == check_run.before


#: Every task of the seven roles that runs for real in check mode (check_mode: false), and why
#: it cannot write. A new one fails test_every_check_mode_false_task_is_audited until it is
#: read and listed here.
READ_ONLY_IN_CHECK_MODE = {
    (
        "base",
        "main.yml",
        BASE_PREFLIGHT,
    ): (
        "one /bin/sh (racksmith.hostprobe): [ -e ] of two paths, [ -w /proc/sys/KEY ] per key,"
        " dpkg-query -W (DPKG_ADMINDIR's database), apt-cache policy (APT_CONFIG's lists),"
        " sha1sum/stat of the role's directories and files, systemctl is-active/is-enabled,"
        " sysctl -n, racksmith-cpu-governor --check (only reports), grep of the sysctl file,"
        " chronyc waitsync 1 (one question, asked only while chrony runs)"
    ),
    ("base", "main.yml", "CPU | Set the governor on every CPU where it differs"): (
        "in check mode racksmith-cpu-governor --check only reports (it sets the governor only "
        "when the run is not check mode); says absent while the script is; no cpufreq here"
    ),
    ("nvidia_driver", "main.yml", NV_PREFLIGHT): (
        "racksmith.core.role_preflight: setup (facts, only when missing), cat of vendor/class"
        " under nvidia_driver_sysfs_root (here the fixture tree)"
    ),
    (
        "nvidia_driver",
        "driver.yml",
        "Driver | Ask apt for the driver's and fabric manager's packages",
    ): ("apt-cache policy (here APT_CONFIG's lists)"),
    ("gdr", "main.yml", "GDR | Probe the host (DOCA-OFED, units, apt)"): (
        "[ -e ] of openibd, the unit files and the peermem module, systemctl"
        " is-enabled/is-active, reads of /proc/driver/nvidia/version and /proc/cmdline,"
        " apt-cache policy"
    ),
    ("dcgm", "install.yml", "Install | Ask apt for DCGM's packages"): "apt-cache policy",
    (
        "node_exporter",
        "main.yml",
        NE_PREFLIGHT,
    ): (
        "dpkg-query -W (DPKG_ADMINDIR's database), apt-cache policy (APT_CONFIG's lists), "
        "sha1sum and stat of two paths, systemctl is-active/is-enabled"
    ),
    ("gdr", "main.yml", GDR_PREFLIGHT): (
        "racksmith.core.role_preflight: setup (only when facts are missing), cat under"
        " gdr_sysfs_root; not run here (racksmith_pci_counts from the driver role)"
    ),
    ("zfs_pool", "main.yml", "Preflight | Facts, the platform and the inputs"): (
        "racksmith.core.role_preflight: setup (only when facts are missing); nothing else"
    ),
    ("zfs_pool", "pool.yml", "Pool | Ask apt for the ZFS tools"): (
        "apt-cache policy; not run here (--skip-tags zfs_pool_create)"
    ),
    (
        "zfs_pool",
        "pool.yml",
        "Pool | List the disks, their by-id links and the pools, once udev settled",
    ): (
        "udevadm settle waits, lsblk, find -printf, zpool list, zpool import without a pool name "
        "only lists; not run here (--skip-tags zfs_pool_create)"
    ),
    (
        "container_runtime",
        "main.yml",
        CR_PREFLIGHT,
    ): (
        "one /bin/sh (racksmith.hostprobe): cat under container_runtime_sysfs_root (the fixture"
        " tree), findmnt of this machine's mounts, cat of daemon.json, apt-cache policy"
        " (APT_CONFIG's lists), test -e /dev/nvidiactl, dpkg-query (DPKG_ADMINDIR's empty"
        " database), sha1sum/stat of the role's directories and files, systemctl"
        " is-active/is-enabled docker, find -lname under /dev/char"
    ),
    (
        "dcgm",
        "preflight.yml",
        DCGM_PREFLIGHT,
    ): (
        "one /bin/sh (racksmith.hostprobe): cat under dcgm_sysfs_root (the fixture tree),"
        " dpkg-query (DPKG_ADMINDIR's empty database), sha1sum/stat of the role's files,"
        " systemctl is-active/is-enabled, a GET of the metrics endpoint"
    ),
    (
        "dcgm",
        "repo.yml",
        "Repo | Ask apt whether it knows the packages (an earlier refresh may have failed)",
    ): ("apt-cache policy (APT_CONFIG's lists)"),
}


def _tasks(items: list) -> list[dict]:
    """Tasks of a task file, those inside blocks included."""
    found = []
    for item in items or []:
        found.append(item)
        for key in ("block", "rescue", "always"):
            found += _tasks(item.get(key, []))
    return found


def test_every_check_mode_false_task_is_audited():
    found = set()
    for role in ROLES:
        for kind in ("tasks", "handlers"):
            for path in sorted((REPO / "roles" / role / kind).glob("*.yml")):
                for task in _tasks(yaml.safe_load(path.read_text())):
                    if task.get("check_mode") is False:
                        found.add((role, path.name, task["name"]))
    assert found == set(READ_ONLY_IN_CHECK_MODE)


#: The GPU-host roles of issue 20 (base and zfs_pool are other areas').
GPU_ROLES = ("nvidia_driver", "gdr", "container_runtime", "dcgm", "node_exporter")


def test_no_gpu_host_role_ignores_errors():
    """Before issue 20 every install ran with ignore_errors in check mode, which hid every
    name and version apt could not serve."""
    found = [
        (role, path.name, task["name"])
        for role in GPU_ROLES
        for kind in ("tasks", "handlers")
        for path in sorted((REPO / "roles" / role / kind).glob("*.yml"))
        for task in _tasks(yaml.safe_load(path.read_text()))
        if "ignore_errors" in task
    ]
    assert found == []


#: Modules that install or remove software: none may run with ignore_errors (issue 20).
INSTALL_MODULES = {
    f"{prefix}{name}"
    for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    for name in ("apt", "package", "dpkg_selections", "pip", "deb822_repository", "apt_repository")
}


def test_no_install_anywhere_ignores_errors():
    """Issue 20: `grep -rn ignore_errors roles/` shows no install task. Every role of the
    checkout (base and zfs_pool included), tasks and handlers: no task that installs carries
    ignore_errors, so check mode says what it would install instead of hiding a failure."""
    paths = sorted((REPO / "roles").glob("*/tasks/*.yml"))
    paths += sorted((REPO / "roles").glob("*/handlers/*.yml"))
    installs = [
        (path.relative_to(REPO).as_posix(), task["name"], "ignore_errors" in task)
        for path in paths
        for task in _tasks(yaml.safe_load(path.read_text()))
        if INSTALL_MODULES & set(task)
    ]
    # the walk finds the installs it guards (base's chrony, zfs_pool's tools among them)
    assert ("roles/base/tasks/main.yml", "Time | Install chrony", False) in installs
    assert ("roles/zfs_pool/tasks/pool.yml", "Pool | Install the ZFS tools", False) in installs
    assert [(path, name) for path, name, ignored in installs if ignored] == []


def test_no_handler_reloads_systemd_without_the_detach_guard():
    """NVIDIA/nvidia-docker#1730: a daemon-reload detaches GPUs from running containers unless
    the device-node symlinks exist. Every handler that reloads systemd listens on a topic whose
    first handler refuses while containers run without container_runtime's udev rule."""
    for role in GPU_ROLES:
        path = REPO / "roles" / role / "handlers" / "main.yml"
        handlers = yaml.safe_load(path.read_text()) or []
        for handler in handlers:
            module = handler.get("ansible.builtin.systemd_service") or {}
            if not module.get("daemon_reload"):
                continue
            first = next(h for h in handlers if h.get("listen") == handler["listen"])
            assert first["name"].startswith("Refuse to reload systemd"), (role, handler["name"])
            assert "71-nvidia-dev-char.rules" in str(first) or "dev_char_rule" in str(first)


def test_node_exporter_from_the_upstream_release_at_the_sites_mirror(check_run):
    """Before issue 20 node_exporter was jammy's 1.3.1 package only. The release method fetches
    from the site's URL with the sha256 checked, unpacks into a directory named by it, and runs
    its own hardened unit with the same flags."""
    host = "hgx-jammy-cuda"
    fetch = check_run.result(
        host,
        "node_exporter",
        "Release | Fetch the release from the site's mirror and check its sha256",
    )
    assert fetch["invocation"]["module_args"]["checksum"] == f"sha256:{RELEASE_SHA256}"
    assert fetch["invocation"]["module_args"]["url"].startswith("file://")
    unit = check_run.result(host, "node_exporter", "Release | Write the exporter's unit")
    after = unit["diff"][0]["after"]
    assert "ExecStart=/usr/local/bin/node_exporter $ARGS" in after
    assert "User=node-exp" in after and "ProtectSystem=strict" in after
    flags = check_run.result(host, "node_exporter", "Configure | Write the exporter's flags")
    assert flags["invocation"]["module_args"]["dest"] == "/etc/default/node_exporter"
    # no package install ran, and nothing was unpacked in check mode
    installs = [
        r for role, name, r in check_run.tasks[host]
        if role == "node_exporter" and name.startswith("Install |")
    ]  # fmt: skip
    assert installs and all(r.get("skipped") for r in installs)
    assert check_run.result(host, "node_exporter", "Release | Unpack the binary").get("skipped")
