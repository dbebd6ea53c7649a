"""What cloud-init would do on first boot, applied to a test host's root before it boots.

MAAS hands a deployed machine user data, and cloud-init acts on it. The lab image has no
cloud-init (it would wait for a datasource that does not exist), so the lab applies the parts
racksmith relies on: ``write_files``, ``runcmd`` and shell-script user data,
``ssh_authorized_keys``, the apt proxy and the hostname. Anything else is reported as ignored,
never silently dropped. Parsing is pure; :func:`apply` writes into an unpacked root.
"""

from __future__ import annotations

import base64
import binascii
import email
import gzip
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from racksmith.lab.errors import LabError

#: Same paths as a real cloud-init host, so a user grepping a deployed host finds them.
SCRIPT_PATH = "var/lib/cloud/instance/scripts/runcmd"
DONE_MARKER = "var/lib/cloud/instance/boot-finished"
OUTPUT_LOG = "var/log/cloud-init-output.log"
UNIT_NAME = "racksmith-cloud-final.service"
#: curtin writes MAAS's apt proxy here on a deployed Ubuntu host.
APT_PROXY_FILE = "etc/apt/apt.conf.d/90curtin-aptproxy"
SHIM_PATH = "usr/bin/cloud-init"
STATUS_SHIM = f"""#!/bin/sh
# racksmith lab stand-in for `cloud-init status [--wait]` (the lab image has no cloud-init).
[ "${{1:-}}" = status ] || {{ echo "racksmith lab: only 'cloud-init status' exists" >&2; exit 2; }}
wait=0
for arg; do [ "$arg" = --wait ] && wait=1; done
while :; do
  if [ -e /{DONE_MARKER} ]; then echo "status: done"; exit 0; fi
  if [ "$(systemctl show -p ActiveState --value {UNIT_NAME})" = failed ]; then
    echo "status: error"; exit 1
  fi
  [ $wait -eq 1 ] || {{ echo "status: running"; exit 0; }}
  sleep 1
done
"""

_HANDLED = {"write_files", "runcmd", "ssh_authorized_keys", "apt", "apt_proxy", "hostname", "fqdn"}


@dataclass(frozen=True)
class WriteFile:
    path: str
    content: bytes
    permissions: int = 0o644
    owner: str = "root:root"
    append: bool = False


@dataclass(frozen=True)
class UserData:
    hostname: str | None = None
    write_files: tuple[WriteFile, ...] = ()
    #: Shell lines, run in order once on first boot (runcmd entries, then shell scripts).
    commands: tuple[str, ...] = ()
    ssh_authorized_keys: tuple[str, ...] = ()
    apt_proxy: str | None = None
    apt_https_proxy: str | None = None
    ignored: tuple[str, ...] = field(default=())


def parse(data: bytes | str | None) -> UserData:
    """Parse cloud-config YAML, a ``#!`` script, gzip of either, or MIME multipart of them."""
    if data is None:
        return UserData()
    raw = data.encode() if isinstance(data, str) else data
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise LabError(f"user data: gzip content is corrupt: {exc}") from exc
    if not raw.strip():
        return UserData()
    if raw.startswith(b"#cloud-config"):
        return _parse_cloud_config(raw)
    if raw.startswith(b"#!"):
        return UserData(commands=(_script_command(raw),))
    if raw.lstrip().lower().startswith(b"content-type:") or raw.startswith(b"MIME-Version"):
        return _parse_multipart(raw)
    first = raw.splitlines()[0][:40].decode(errors="replace")
    raise LabError(
        f"user data: unsupported format (first line {first!r}); "
        "expected '#cloud-config', '#!' script or MIME multipart"
    )


def _script_command(script: bytes) -> str:
    """A user-data script runs as its own file; encode it so one shell line can run it."""
    encoded = base64.b64encode(script).decode()
    return (
        f'f=$(mktemp) && echo {encoded} | base64 -d > "$f" && chmod +x "$f" '
        '&& "$f"; rc=$?; rm -f "$f"; [ $rc -eq 0 ]'
    )


def _parse_multipart(raw: bytes) -> UserData:
    merged = UserData()
    message = email.message_from_bytes(raw)
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True) or b""
        ctype = part.get_content_type()
        if ctype == "text/cloud-config":
            payload = (
                payload if payload.startswith(b"#cloud-config") else b"#cloud-config\n" + payload
            )
            merged = _merge(merged, _parse_cloud_config(payload))
        elif ctype in ("text/x-shellscript", "text/x-sh"):
            merged = _merge(merged, UserData(commands=(_script_command(payload),)))
        else:
            merged = _merge(merged, UserData(ignored=(f"mime:{ctype}",)))
    return merged


def _merge(a: UserData, b: UserData) -> UserData:
    return UserData(
        hostname=b.hostname or a.hostname,
        write_files=a.write_files + b.write_files,
        commands=a.commands + b.commands,
        ssh_authorized_keys=a.ssh_authorized_keys + b.ssh_authorized_keys,
        apt_proxy=b.apt_proxy or a.apt_proxy,
        apt_https_proxy=b.apt_https_proxy or a.apt_https_proxy,
        ignored=a.ignored + b.ignored,
    )


def _parse_cloud_config(raw: bytes) -> UserData:
    try:
        doc = yaml.safe_load(raw) or {}
    except yaml.YAMLError as exc:
        raise LabError(f"user data: #cloud-config is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise LabError("user data: #cloud-config must be a mapping")
    hostname = doc.get("hostname") or (str(doc["fqdn"]).split(".")[0] if doc.get("fqdn") else None)
    apt = doc.get("apt") or {}
    if not isinstance(apt, dict):
        raise LabError("user data: 'apt' must be a mapping")
    proxy = apt.get("proxy") or apt.get("http_proxy") or doc.get("apt_proxy")
    keys = doc.get("ssh_authorized_keys") or []
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise LabError("user data: 'ssh_authorized_keys' must be a list of strings")
    ignored = tuple(sorted(set(doc) - _HANDLED))
    https = apt.get("https_proxy")
    ignored += tuple(f"apt.{k}" for k in sorted(set(apt) - {"proxy", "http_proxy", "https_proxy"}))
    return UserData(
        hostname=str(hostname) if hostname else None,
        write_files=tuple(
            _write_file(i, entry) for i, entry in enumerate(doc.get("write_files") or [])
        ),
        commands=tuple(_runcmd_line(i, entry) for i, entry in enumerate(doc.get("runcmd") or [])),
        ssh_authorized_keys=tuple(keys),
        apt_proxy=str(proxy) if proxy else None,
        apt_https_proxy=str(https) if https else None,
        ignored=ignored,
    )


def _runcmd_line(index: int, entry: object) -> str:
    """cloud-init semantics: a string is a shell line, a list is an argv (shell-quoted)."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, list) and all(isinstance(a, str | int | float) for a in entry):
        return shlex.join(str(a) for a in entry)
    raise LabError(f"user data: runcmd[{index}] must be a string or a list of strings")


def _write_file(index: int, entry: object) -> WriteFile:
    where = f"user data: write_files[{index}]"
    if not isinstance(entry, dict) or not entry.get("path"):
        raise LabError(f"{where} needs a 'path'")
    path = str(entry["path"])
    if not path.startswith("/") or ".." in PurePosixPath(path).parts:
        raise LabError(f"{where}: path {path!r} must be absolute and must not contain '..'")
    content = entry.get("content", "")
    data = content.encode() if isinstance(content, str) else bytes(content)
    encoding = str(entry.get("encoding", "text")).lower()
    try:
        if encoding in ("b64", "base64"):
            data = base64.b64decode(data, validate=True)
        elif encoding in ("gz", "gzip"):
            data = gzip.decompress(data)
        elif encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
            data = gzip.decompress(base64.b64decode(data, validate=True))
        elif encoding not in ("text", "text/plain"):
            raise LabError(f"{where}: unknown encoding {encoding!r}")
    except (binascii.Error, OSError, EOFError) as exc:
        raise LabError(f"{where}: content does not decode as {encoding}: {exc}") from exc
    perms = entry.get("permissions", "0644")
    try:
        mode = int(str(perms), 8)
    except ValueError as exc:
        raise LabError(f"{where}: permissions {perms!r} is not octal") from exc
    return WriteFile(
        path=path,
        content=data,
        permissions=mode,
        owner=str(entry.get("owner", "root:root")),
        append=bool(entry.get("append", False)),
    )


def runcmd_script(commands: tuple[str, ...]) -> str:
    """The first-boot script; like cloud-init, a failing line does not stop the next one,
    but the script fails if any line failed, so the deploy is reported as failed."""
    lines = ["#!/bin/sh", "# racksmith lab: runcmd and user-data scripts from the deploy", "rc=0"]
    for command in commands:
        lines.append(f"( {command} ) || rc=1")
    lines.append("exit $rc")
    return "\n".join(lines) + "\n"


def unit_text() -> str:
    """Runs the script once, before sshd, so "SSH answers" means "first boot is done"."""
    return f"""\
[Unit]
Description=racksmith lab stand-in for cloud-init's final stage (runcmd)
After=local-fs.target network.target
Before=ssh.service
ConditionPathExists=!/{DONE_MARKER}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c '/{SCRIPT_PATH} >>/{OUTPUT_LOG} 2>&1'
ExecStartPost=/bin/touch /{DONE_MARKER}

[Install]
WantedBy=multi-user.target
"""


def _ids(root: Path, owner: str) -> tuple[int, int]:
    """Resolve ``user:group`` against the *image's* passwd/group, not the controller's."""
    user, _, group = owner.partition(":")
    group = group or user

    def lookup(db: str, name: str) -> int:
        if name.isdigit():
            return int(name)
        for line in (root / "etc" / db).read_text().splitlines():
            fields = line.split(":")
            if fields[0] == name:
                return int(fields[2])
        raise LabError(f"user data: owner {owner!r}: no {db} entry {name!r} in the image")

    return lookup("passwd", user), lookup("group", group)


def _inside(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def apply(user_data: UserData, root: Path, *, default_user: str = "ubuntu") -> None:
    """Write the user data's effect into an unpacked (not yet booted) root."""
    for wf in user_data.write_files:
        target = _inside(root, wf.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "ab" if wf.append else "wb") as handle:
            handle.write(wf.content)
        os.chmod(target, wf.permissions)
        os.chown(target, *_ids(root, wf.owner))
    if user_data.ssh_authorized_keys:
        uid, gid = _ids(root, default_user)
        keys = _inside(root, f"/home/{default_user}/.ssh/authorized_keys")
        keys.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(keys, "a") as handle:
            handle.writelines(k.strip() + "\n" for k in user_data.ssh_authorized_keys)
        os.chmod(keys, 0o600)
        os.chown(keys, uid, gid)
    if user_data.apt_proxy or user_data.apt_https_proxy:
        write_apt_proxy(root, user_data.apt_proxy, user_data.apt_https_proxy)
    install_first_boot(root, user_data.commands)


def install_first_boot(root: Path, commands: tuple[str, ...]) -> None:
    """The first-boot unit (runs ``commands``, then marks boot finished) and a
    ``cloud-init status`` stand-in, so the deploy phase can wait for first boot as it does
    on a real MAAS machine."""
    script = _inside(root, SCRIPT_PATH)
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(runcmd_script(commands))
    script.chmod(0o700)
    unit = _inside(root, f"/etc/systemd/system/{UNIT_NAME}")
    unit.parent.mkdir(parents=True, exist_ok=True)
    unit.write_text(unit_text())
    wants = _inside(root, "/etc/systemd/system/multi-user.target.wants")
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / UNIT_NAME
    link.unlink(missing_ok=True)
    link.symlink_to(f"/etc/systemd/system/{UNIT_NAME}")
    shim = _inside(root, SHIM_PATH)
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(STATUS_SHIM)
    shim.chmod(0o755)


def apt_proxy_lines(http: str | None, https: str | None = None) -> str:
    lines = [f'Acquire::http::Proxy "{http}";\n'] if http else []
    lines += [f'Acquire::https::Proxy "{https}";\n'] if https else []
    return "".join(lines)


def write_apt_proxy(root: Path, http: str | None, https: str | None = None) -> None:
    target = _inside(root, APT_PROXY_FILE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(apt_proxy_lines(http, https))
    target.chmod(0o644)
