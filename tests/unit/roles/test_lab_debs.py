"""The LAB STAND-IN apt repository: real .debs, a signed index apt accepts, programs that mark
every line they print, and the daemon.json edit nvidia-ctk makes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from racksmith.lab.debs import build, control, packages
from racksmith.lab.debs.payload import dcgm, fabricmanager, nvidia_ctk

PAYLOAD = Path(packages.__file__).parent / "payload"
pytestmark = pytest.mark.skipif(
    shutil.which("dpkg-deb") is None or shutil.which("gpg") is None,
    reason="needs dpkg-deb and gpg (scripts/setup.sh installs them)",
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> build.LabRepo:
    return build.ensure_built(cache=tmp_path_factory.mktemp("cache"))


def test_every_package_is_a_real_deb_named_and_versioned_like_its_record(repo):
    names = {Path(d).name for d in repo.debs}
    assert names == {
        "libnvidia-container1_1.17.8-1_amd64.deb",
        "libnvidia-container-tools_1.17.8-1_amd64.deb",
        "nvidia-container-toolkit-base_1.17.8-1_amd64.deb",
        "nvidia-container-toolkit_1.17.8-1_amd64.deb",
        "datacenter-gpu-manager_3.3.9_amd64.deb",
        "datacenter-gpu-manager-4-core_4.5.2-1_amd64.deb",
        "datacenter-gpu-manager-4-cuda12_4.5.2-1_amd64.deb",
        "datacenter-gpu-manager-exporter_4.8.1-1_amd64.deb",
        "nvidia-fabricmanager-535_535.216.03-1_amd64.deb",
    }
    for deb in repo.debs:
        info = subprocess.run(["dpkg-deb", "--info", str(repo.root / deb)],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert "Description: LAB STAND-IN: " in info
        assert "Metadata replayed from a package record: " in info
    listing = subprocess.run(
        ["dpkg-deb", "--contents", str(repo.root / packages.CUDA_REPO /
                                       "datacenter-gpu-manager-4-core_4.5.2-1_amd64.deb")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "./usr/bin/nv-hostengine -> /usr/lib/racksmith-lab-standin/" in listing
    home = "./usr/lib/racksmith-lab-standin/datacenter-gpu-manager-4-core"
    assert f"{home}/racksmith_standin.py" in listing
    assert "./lib/systemd/system/nvidia-dcgm.service" in listing
    assert "root/root" in listing


def test_stand_in_metadata_is_the_records_not_ours(repo):
    """Every relation field of every .deb is its record's, verbatim, and nothing else: no
    stand-in adds a dependency its real counterpart does not have."""
    for index in control.INDEXES:
        for name, record in control.load_index(index).items():
            (deb,) = [d for d in repo.debs if Path(d).name.startswith(f"{name}_")]
            shown = subprocess.run(["dpkg-deb", "--field", str(repo.root / deb)],
                                   capture_output=True, text=True, check=True)  # fmt: skip
            fields = control.parse_stanzas(shown.stdout)[0]
            assert fields["Version"] == record["Version"]
            for key in control.RELATIONS:
                assert fields.get(key) == record.get(key), (name, key)


def test_a_record_without_a_stand_in_or_the_reverse_is_refused(monkeypatch):
    records = control.load_index("cuda-debian12")
    monkeypatch.setattr(packages, "load_index", lambda name: {
        n: r for n, r in (records if name == "cuda-debian12" else control.load_index(name)).items()
        if n != "nvidia-fabricmanager-535"
    })  # fmt: skip
    with pytest.raises(ValueError, match="no record of nvidia-fabricmanager-535"):
        packages.all_packages()


def test_a_record_must_say_where_it_was_read():
    text = "Package: x\nVersion: 1\nArchitecture: amd64\nX-Racksmith-Record: recorded\n"
    (record,) = control.parse_stanzas(text)
    with pytest.raises(control.RecordError, match="x: no X-Racksmith-Source"):
        control.check_record(record, "f")


def test_index_lists_each_deb_with_its_checksum_and_release_is_signed(repo, tmp_path):
    import hashlib

    cuda = repo.root / packages.CUDA_REPO
    index = (cuda / "Packages").read_text()
    deb = cuda / "datacenter-gpu-manager-exporter_4.8.1-1_amd64.deb"
    assert f"SHA256: {hashlib.sha256(deb.read_bytes()).hexdigest()}" in index
    assert "Filename: ./datacenter-gpu-manager-exporter_4.8.1-1_amd64.deb" in index
    release = (cuda / "Release").read_text()
    assert hashlib.sha256((cuda / "Packages.gz").read_bytes()).hexdigest() in release
    # apt checks InRelease with gpgv against the keyring it is given (signed-by)
    keyring = tmp_path / "lab.gpg"
    subprocess.run(["gpg", "--batch", "--dearmor", "-o", str(keyring), str(cuda / build.KEY_NAME)],
                   check=True)  # fmt: skip
    ok = subprocess.run(["gpgv", "--keyring", str(keyring), str(cuda / "InRelease")],
                        capture_output=True, check=False)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    tampered = tmp_path / "InRelease"
    tampered.write_text((cuda / "InRelease").read_text().replace("amd64", "arm64", 1))
    bad = subprocess.run(["gpgv", "--keyring", str(keyring), str(tampered)],
                         capture_output=True, check=False)  # fmt: skip
    assert bad.returncode != 0


def test_build_is_cached_by_content_and_a_change_makes_a_new_one(repo):
    again = build.ensure_built(cache=repo.root.parent)
    assert again.root == repo.root
    changed = packages.all_packages()
    changed[0] = packages.Package(**{**vars(changed[0]), "version": "1.17.9-1"})
    assert build.digest(changed) != repo.digest


def test_nvidia_ctk_adds_the_runtime_and_keeps_other_settings(tmp_path):
    config = tmp_path / "daemon.json"
    config.write_text(json.dumps({"log-driver": "json-file", "runtimes": {"crun": {"path": "c"}}}))
    assert nvidia_ctk.main(["runtime", "configure", "--runtime=docker",
                            f"--config={config}"]) == 0  # fmt: skip
    data = json.loads(config.read_text())
    assert data["runtimes"]["nvidia"] == {"args": [], "path": "nvidia-container-runtime"}
    assert data["runtimes"]["crun"] == {"path": "c"}
    assert data["log-driver"] == "json-file"
    assert "default-runtime" not in data
    nvidia_ctk.main(["runtime", "configure", f"--config={config}", "--set-as-default"])
    assert json.loads(config.read_text())["default-runtime"] == "nvidia"


def test_dcgm_exporter_collectors_are_parsed_and_bad_lines_named():
    fields = dcgm.parse_collectors("# c\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n",
                                   "f.csv")  # fmt: skip
    text = dcgm.render_metrics(fields, "hello")
    assert "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C). (LAB STAND-IN: no GPU)" in text
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP gauge" in text
    with pytest.raises(dcgm.CollectorsError, match=r"f\.csv:2: type 'gaug'"):
        dcgm.parse_collectors("DCGM_FI_A, gauge, a\nDCGM_FI_B, gaug, b\n", "f.csv")
    with pytest.raises(dcgm.CollectorsError, match=r"f\.csv: no fields"):
        dcgm.parse_collectors("# nothing\n", "f.csv")


def test_fabric_manager_finds_nvswitches_by_pci_class(tmp_path):
    for name, vendor, klass in (("0000:05:00.0", "0x10de", "0x068000"),
                                ("0000:18:00.0", "0x10de", "0x030200"),
                                ("0000:20:00.0", "0x8086", "0x068000")):  # fmt: skip
        dev = tmp_path / name
        dev.mkdir()
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(klass + "\n")
    assert fabricmanager.nvswitches(tmp_path) == ["0000:05:00.0"]


@pytest.mark.parametrize(
    ("program", "args"),
    [
        ("nvidia_ctk.py", ["--version"]),
        ("nvidia_ctk.py", ["cdi", "generate"]),
        ("dcgm.py:dcgmi", ["-v"]),
        ("dcgm.py:dcgmi", ["discovery", "-l", "--host", "127.0.0.1:1"]),
        ("dcgm.py:dcgm-exporter", ["-f", "/nonexistent.csv"]),
        ("fabricmanager.py", ["--version"]),
        ("fabricmanager.py", ["-c", "/dev/null", "--sysfs-pci", "/nonexistent"]),
    ],
)
def test_every_line_the_programs_print_says_lab_standin(tmp_path, program, args):
    script, _, name = program.partition(":")
    exe = tmp_path / (name or script)
    exe.write_bytes((PAYLOAD / script).read_bytes())
    exe.chmod(0o755)
    done = subprocess.run([sys.executable, str(exe), *args], capture_output=True, text=True,
                          timeout=20, check=False)  # fmt: skip
    lines = (done.stdout + done.stderr).splitlines()
    assert lines, "the program printed nothing"
    assert all(line.startswith("LAB STAND-IN") for line in lines), lines


def test_server_serves_the_build_is_idempotent_and_stops(tmp_path, monkeypatch):
    import socket
    import urllib.error

    from racksmith.lab.debs import serve
    from racksmith.lab.paths import LabPaths
    from racksmith.lab.proc import read_record

    monkeypatch.setenv("RACKSMITH_CACHE_DIR", str(tmp_path / "cache"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lab = LabPaths(tmp_path / "lab")
    repo, url = serve.ensure_running(lab, bind="127.0.0.1", port=port)
    try:
        pid = read_record(lab.pidfile(serve.DAEMON)).pid
        assert b"BEGIN PGP SIGNED MESSAGE" in _get(f"{url}/{packages.CUDA_REPO}/InRelease")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            _get(f"{url}/{packages.CUDA_REPO}/")
        again, _ = serve.ensure_running(lab, bind="127.0.0.1", port=port)
        assert again.root == repo.root
        assert read_record(lab.pidfile(serve.DAEMON)).pid == pid  # left running, not restarted
    finally:
        assert serve.stop_serving(lab)
    # nothing answers any more (refused, or reset by a socket closing as the server exits)
    with pytest.raises(OSError):
        _get(f"{url}/{packages.CUDA_REPO}/InRelease")


def _get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 (http on 127.0.0.1)
        return reply.read()
