"""Role container_runtime's verify-first decision (racksmith.roles.container_runtime, filters
racksmith.core.container_runtime_probe and container_runtime_drift): nothing drifted only when
the directories, the key, the toolkit files, daemon.json (as data, mode, owner, the nvidia
runtime), the packages, the unit and the /dev/char links are as the role leaves them; each
difference is named; what the probe did not read is drift. The probe's snippets run for real
here (the files, the packages, the device links); systemd does not run here, so the unit's
line is written as systemctl prints it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from racksmith import hostprobe
from racksmith.roles import container_runtime as cr
from racksmith.testing.plugins import plugin_filters

FILTERS = plugin_filters("plugins/filter/container_runtime.py")

RULE = 'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", RUN+="/usr/bin/nvidia-ctk ..."\n'
SOURCE = "deb [signed-by=/etc/apt/keyrings/k.asc] http://mirror/libnvidia-container/ /\n"
DAEMON = {"log-driver": "json-file", "log-opts": {"max-size": "10m"}, "live-restore": True}
# What nvidia-ctk adds, and a key racksmith does not manage (both kept)
NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}},
          "default-runtime": "nvidia", "debug": False}  # fmt: skip
DOCKER_UP = "docker active enabled\n"

# The role leaves its files root's; run by another user, the files section says root for them.
ME = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
MY_GROUP = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()


def _bash_version() -> str:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "bash"], capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def host(tmp_path: Path) -> dict:
    """A converged toolkit host under tmp_path: what the role writes, root's, at its modes."""
    docker, keyrings, rules = (tmp_path / d for d in ("docker", "keyrings", "rules.d"))
    for d in (docker, keyrings, rules):
        d.mkdir()
        d.chmod(0o755)
    files = [{"dest": str(rules / "71-nvidia-dev-char.rules"), "content": RULE},
             {"dest": str(tmp_path / "toolkit.list"), "content": SOURCE}]  # fmt: skip
    for f in files:
        Path(f["dest"]).write_text(f["content"])
    key = keyrings / "toolkit.asc"
    key.write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\n")
    daemon_json = docker / "daemon.json"
    daemon_json.write_text(json.dumps({**DAEMON, **NVIDIA}, indent=4) + "\n")
    for path in [*(Path(f["dest"]) for f in files), key, daemon_json]:
        path.chmod(0o644)
    return {
        "packages": [f"bash={_bash_version()}", "coreutils"],
        "hold": False,
        "dirs": [str(docker), str(keyrings), str(rules)],
        "keyring": str(key),
        "files": files,
        "daemon_json": str(daemon_json),
        "daemon": dict(DAEMON),
        "nvidia": True,
        "nvidia_default": True,
        "service": "docker",
    }


def read(want: dict, devchar: str = "no-driver") -> dict[str, str]:
    """Run the role's probe (its drift sections, and daemon.json as the role reads it) here."""
    sections = cr.probe_sections(want)
    # as roles/container_runtime/vars/main.yml reads it (echo: a file without a final newline
    # must not glue its last line to the next section's marker)
    sections["daemon"] = (
        f"if [ -e {want['daemon_json']} ]; then cat {want['daemon_json']}; echo; fi"
    )
    sections["services"] = f"printf {DOCKER_UP!r}"
    sections["devchar"] = f"echo {devchar}"
    argv = hostprobe.probe_argv(sections)
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout
    found = hostprobe.parse_sections(out, [*cr.SECTIONS, "daemon"])
    found["files"] = found["files"].replace(f" {ME} {MY_GROUP} ", " root root ")
    return found


def test_nothing_drifted_on_a_converged_host(host: dict) -> None:
    assert cr.drift(read(host), host) == []
    assert cr.drift(read(host, "linked"), host) == []


def test_the_filter_says_the_same(host: dict) -> None:
    sections = read(host)
    assert FILTERS["container_runtime_drift"](sections, host) == []
    assert FILTERS["container_runtime_probe"](host) == cr.probe_sections(host)
    with pytest.raises(AnsibleFilterError, match="must be a dict"):
        FILTERS["container_runtime_drift"]("text", host)
    with pytest.raises(AnsibleFilterError, match="must be one word"):
        FILTERS["container_runtime_probe"]({"packages": ["two words"]})


def test_a_daemon_json_key_changed_by_hand_is_drift(host: dict) -> None:
    path = Path(host["daemon_json"])
    edited = {**json.loads(path.read_text()), "live-restore": False}
    path.write_text(json.dumps(edited))
    assert cr.drift(read(host), host) == [f"{path}: live-restore is false, wanted true"]


def test_keys_racksmith_does_not_manage_are_not_drift(host: dict) -> None:
    path = Path(host["daemon_json"])
    path.write_text(json.dumps({**json.loads(path.read_text()), "dns": ["10.0.0.53"]}))
    assert cr.drift(read(host), host) == []


def test_the_nvidia_runtime_missing_or_not_default_is_drift(host: dict) -> None:
    path = Path(host["daemon_json"])
    path.write_text(json.dumps(DAEMON))
    assert cr.drift(read(host), host) == [f"{path}: no nvidia runtime"]
    path.write_text(json.dumps({**DAEMON, "runtimes": NVIDIA["runtimes"]}))
    assert cr.drift(read(host), host) == [f"{path}: nvidia is not the default runtime"]
    # not wanted as the default, or no toolkit here: nvidia-ctk would not run
    assert cr.drift(read(host), {**host, "nvidia_default": False}) == []
    path.write_text(json.dumps(DAEMON))
    assert cr.drift(read(host), {**host, "nvidia": False}) == []


def test_daemon_json_that_is_not_an_object_is_drift(host: dict) -> None:
    path = Path(host["daemon_json"])
    path.write_text("{not json")
    assert f"{path}: not JSON" in cr.drift(read(host), host)
    path.write_text("[]")
    assert f"{path}: not a JSON object" in cr.drift(read(host), host)


def test_every_file_and_directory_the_role_sets_up_is_compared(host: dict) -> None:
    rule, source = (Path(f["dest"]) for f in host["files"])
    rule.write_text(RULE.replace("add", "change"))  # the udev rule edited
    Path(host["keyring"]).chmod(0o600)
    Path(host["daemon_json"]).chmod(0o600)
    Path(host["dirs"][0]).chmod(0o700)
    source.unlink()
    reasons = cr.drift(read(host), host)
    assert f"{rule}: content differs" in reasons
    assert f"{host['keyring']}: mode 600 root:root, wanted 644 root:root" in reasons
    assert f"{host['daemon_json']}: mode 600 root:root, wanted 644 root:root" in reasons
    assert f"{host['dirs'][0]}: mode 700 root:root, wanted 755 root:root" in reasons
    assert f"{source}: missing" in reasons
    assert len(reasons) == 5


def test_the_key_and_toolkit_files_count_only_where_the_toolkit_applies(host: dict) -> None:
    Path(host["keyring"]).unlink()
    no_toolkit = {**host, "keyring": "", "files": [], "dirs": host["dirs"][:1], "nvidia": False}
    assert cr.drift(read(host), no_toolkit) == []
    assert cr.drift(read(host), host) == [f"{host['keyring']}: missing"]


def test_packages_pins_holds_and_the_unit(host: dict) -> None:
    want = {**host, "packages": ["bash=0.0-not-this", "racksmith-no-such-package"], "hold": True}
    sections = read(want)
    reasons = cr.drift(sections, want)
    assert any(r.startswith("bash: version ") for r in reasons)
    assert "bash: not held" in reasons
    assert "racksmith-no-such-package: not installed" in reasons
    sections["services"] = "docker inactive enabled\n"
    assert "docker: inactive enabled, wanted active enabled" in cr.drift(sections, host)


def test_missing_dev_char_links_are_drift_where_the_driver_is_loaded(host: dict) -> None:
    assert cr.drift(read(host, "missing"), host) == [
        "/dev/char: no link to /dev/nvidiactl (nvidia-ctk system create-dev-char-symlinks)"
    ]
    assert cr.drift(read(host, "missing"), {**host, "nvidia": False}) == []
    sections = read(host)
    sections["devchar"] = ""
    assert cr.drift(sections, host) == [
        "/dev/char: could not read the device links (nothing printed)"
    ]


@pytest.mark.parametrize("gone", ["daemon", "devchar", "files", "packages", "services"])
def test_a_section_the_probe_did_not_print_is_drift(host: dict, gone: str) -> None:
    sections = read(host)
    del sections[gone]
    assert cr.drift(sections, host) == [f"the probe did not read {gone}"]


def test_the_dev_char_snippet_reads_the_links(tmp_path: Path) -> None:
    """DEVCHAR_SNIPPET run for real, pointed at a tree under tmp_path instead of /dev."""
    snippet = cr.DEVCHAR_SNIPPET.replace("/dev/nvidiactl", str(tmp_path / "nvidiactl"))
    snippet = snippet.replace("/dev/char", str(tmp_path / "char"))
    assert snippet != cr.DEVCHAR_SNIPPET

    def run() -> str:
        done = subprocess.run(
            ["/bin/sh", "-c", snippet], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    assert run() == "no-driver"
    (tmp_path / "nvidiactl").write_text("")
    assert run() == "missing"  # no /dev/char at all
    (tmp_path / "char").mkdir()
    (tmp_path / "char" / "195:0").symlink_to("../nvidia0")
    assert run() == "missing"
    (tmp_path / "char" / "195:255").symlink_to("../nvidiactl")
    assert run() == "linked"


def test_the_probe_reads_every_path_whether_or_not_the_toolkit_applies(host: dict) -> None:
    files = cr.probe_sections({**host, "nvidia": False})["files"]
    for path in [*host["dirs"], host["keyring"], host["daemon_json"]]:
        assert path in files
    for f in host["files"]:
        assert f["dest"] in files


def test_a_missing_daemon_json_is_one_reason_not_one_per_key(host: dict) -> None:
    path = Path(host["daemon_json"])
    path.unlink()
    assert cr.drift(read(host), host) == [
        f"{path}: missing",
        f"{path}: none of racksmith's keys (log-driver, log-opts, live-restore)",
        f"{path}: no nvidia runtime",
    ]
    path.write_text("")
    path.chmod(0o644)
    assert cr.drift(read(host), {**host, "nvidia": False}) == [
        f"{path}: none of racksmith's keys (log-driver, log-opts, live-restore)"
    ]
