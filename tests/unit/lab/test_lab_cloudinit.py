"""User data a MAAS deploy hands a machine, applied the way cloud-init would."""

import base64
import gzip
import os
import subprocess
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import pytest

from racksmith.lab import cloudinit
from racksmith.lab.errors import LabError

ZIPPED = base64.b64encode(gzip.compress(b"zipped"))
CONFIG = b"""#cloud-config
fqdn: l1abcde.maas
write_files:
  - path: /etc/motd
    content: hello
  - path: /etc/secret
    content: aGk=
    encoding: b64
    permissions: '0600'
  - path: /etc/zipped
    content: ZIPPED
    encoding: gz+b64
runcmd:
  - echo one > /tmp/x
  - [touch, "/tmp/with space"]
ssh_authorized_keys: ["ssh-ed25519 AAAA user@site"]
apt:
  proxy: http://10.0.0.5:8000/
package_upgrade: true
""".replace(b"ZIPPED", ZIPPED)


def test_cloud_config_is_parsed_into_what_the_lab_applies():
    ud = cloudinit.parse(CONFIG)
    assert ud.hostname == "l1abcde"
    assert [(w.path, w.content, w.permissions) for w in ud.write_files] == [
        ("/etc/motd", b"hello", 0o644),
        ("/etc/secret", b"hi", 0o600),
        ("/etc/zipped", b"zipped", 0o644),
    ]
    assert ud.commands == ("echo one > /tmp/x", "touch '/tmp/with space'")
    assert ud.ssh_authorized_keys == ("ssh-ed25519 AAAA user@site",)
    assert ud.apt_proxy == "http://10.0.0.5:8000/"
    assert ud.ignored == ("package_upgrade",)  # reported, never silently dropped


def test_none_and_empty_mean_no_user_data():
    assert cloudinit.parse(None) == cloudinit.UserData()
    assert cloudinit.parse(b"  \n") == cloudinit.UserData()


def test_gzip_and_multipart_user_data():
    assert cloudinit.parse(gzip.compress(b"#cloud-config\nhostname: h1\n")).hostname == "h1"
    msg = MIMEMultipart()
    msg.attach(MIMEText("hostname: h2\nruncmd: [date]\n", "cloud-config"))
    msg.attach(MIMEText("#!/bin/sh\necho hi\n", "x-shellscript"))
    msg.attach(MIMEText("whatever", "x-unknown"))
    ud = cloudinit.parse(msg.as_bytes())
    assert ud.hostname == "h2"
    assert ud.commands[0] == "date" and "base64 -d" in ud.commands[1]
    assert ud.ignored == ("mime:text/x-unknown",)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"#cloud-config\n: [", "not valid YAML"),
        (b"#cloud-config\n- a\n", "must be a mapping"),
        (b"#cloud-config\nwrite_files: [{path: etc/x}]\n", "must be absolute"),
        (b"#cloud-config\nwrite_files: [{path: /etc/../x}]\n", "must not contain"),
        (b"#cloud-config\nwrite_files: [{path: /x, encoding: rot13}]\n", "unknown encoding"),
        (
            b"#cloud-config\nwrite_files: [{path: /x, content: '!!', encoding: b64}]\n",
            "does not decode",
        ),
        (b"#cloud-config\nwrite_files: [{path: /x, permissions: '0999'}]\n", "not octal"),
        (b"#cloud-config\nruncmd: [{a: 1}]\n", r"runcmd\[0\]"),
        (b"#cloud-config\nssh_authorized_keys: key\n", "list of strings"),
        (b"hello world\n", "unsupported format"),
        (b"\x1f\x8bnot gzip", "gzip"),
    ],
)
def test_bad_user_data_is_rejected_with_the_field_named(data, message):
    with pytest.raises(LabError, match=message):
        cloudinit.parse(data)


def test_runcmd_script_runs_every_line_and_fails_if_any_failed(tmp_path):
    marker = tmp_path / "ran"
    script = tmp_path / "runcmd"
    script.write_text(cloudinit.runcmd_script(("false", f"echo yes > {marker}")))
    assert subprocess.run(["sh", str(script)], check=False).returncode == 1
    assert marker.read_text() == "yes\n"
    script.write_text(cloudinit.runcmd_script(("true",)))
    assert subprocess.run(["sh", str(script)], check=False).returncode == 0


def test_script_user_data_runs_as_a_file(tmp_path):
    out = tmp_path / "out"
    ud = cloudinit.parse(f'#!/bin/sh\necho "$0 ran" > {out}\nexit 0\n'.encode())
    assert subprocess.run(["sh", "-c", ud.commands[0]], check=False).returncode == 0
    assert out.read_text().endswith(" ran\n")


def _root(tmp_path):
    uid, gid = os.getuid(), os.getgid()
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text(
        f"root:x:0:0::/root:/bin/sh\nubuntu:x:{uid}:{gid}::/home/ubuntu:/bin/bash\n"
    )
    (tmp_path / "etc/group").write_text(f"root:x:0:\nubuntu:x:{gid}:\n")
    return tmp_path


def test_apply_writes_files_keys_proxy_and_the_first_boot_unit(tmp_path):
    root = _root(tmp_path)
    ud = cloudinit.parse(
        b"#cloud-config\n"
        b"write_files: [{path: /etc/a/b, content: x, permissions: '0640', owner: ubuntu}]\n"
        b"ssh_authorized_keys: [k1]\napt: {proxy: 'http://p:1'}\nruncmd: [date]\n"
    )
    cloudinit.apply(ud, root)
    target = root / "etc/a/b"
    assert target.read_text() == "x" and oct(target.stat().st_mode & 0o777) == "0o640"
    assert target.stat().st_uid == os.getuid()
    assert (root / "home/ubuntu/.ssh/authorized_keys").read_text() == "k1\n"
    assert (root / cloudinit.APT_PROXY_FILE).read_text() == 'Acquire::http::Proxy "http://p:1";\n'
    link = root / "etc/systemd/system/multi-user.target.wants" / cloudinit.UNIT_NAME
    assert link.is_symlink()
    assert "Before=ssh.service" in (root / "etc/systemd/system" / cloudinit.UNIT_NAME).read_text()
    assert "( date ) || rc=1" in (root / cloudinit.SCRIPT_PATH).read_text()
    assert "status: done" in (root / cloudinit.SHIM_PATH).read_text()


def test_the_first_boot_unit_is_installed_even_without_commands(tmp_path):
    cloudinit.apply(cloudinit.parse(None), _root(tmp_path))
    assert (tmp_path / cloudinit.SCRIPT_PATH).read_text().endswith("exit $rc\n")
    assert (
        tmp_path / "etc/systemd/system/multi-user.target.wants" / cloudinit.UNIT_NAME
    ).is_symlink()


def test_https_proxy_is_written_too(tmp_path):
    ud = cloudinit.parse(
        b"#cloud-config\napt: {http_proxy: 'http://p:1', https_proxy: 'http://p:1'}\n"
    )
    assert ud.ignored == ()
    cloudinit.apply(ud, _root(tmp_path))
    assert (tmp_path / cloudinit.APT_PROXY_FILE).read_text() == (
        'Acquire::http::Proxy "http://p:1";\nAcquire::https::Proxy "http://p:1";\n'
    )


def test_apply_rejects_an_owner_the_image_does_not_know(tmp_path):
    root = _root(tmp_path)
    ud = cloudinit.parse(b"#cloud-config\nwrite_files: [{path: /x, owner: 'nobody9:nobody9'}]\n")
    with pytest.raises(LabError, match="no passwd entry 'nobody9'"):
        cloudinit.apply(ud, root)
