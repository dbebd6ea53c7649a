"""How long a hostile endpoint can hold each client: wall time per mode, printed as figures.

    python tests/bench/bench_hostile.py          # BMC deadline 5 s, MAAS's default deadline
    python tests/bench/bench_hostile.py --quick  # 1 s deadlines, a few seconds in all

Before the whole-request deadlines (issue 9) a BMC trickling one byte a second held a "5 s"
discovery for 44 s, slow headers 28 s, and a silent MAAS 7.8 minutes.

Issue 22 adds three tables: how long an unsafe credentials file takes to be refused (a FIFO
with no writer used to hang forever, a device to read until MemoryError); how many requests a
hostile link's target (the "collector") receives per link form (it used to get the password);
and how long a BMC that trickles its answers and its logout holds a discovery (8.3 s for a
5 s deadline before).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from racksmith.maas import options as maas_options
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.errors import MaasError
from racksmith.redfish.client import ClientOptions
from racksmith.redfish.credentials import Credentials as BmcCredentials
from racksmith.redfish.discover import DiscoveryOptions, discover_one
from racksmith.redfish.targets import Target
from racksmith.secrets import SecretError, read_credentials_file
from racksmith.testing.hostile import (
    LINK_FORMS,
    MODES,
    SESSIONS,
    SYSTEMS,
    HostileServer,
    Route,
    link_routes,
)


def _unsafe_files(where: Path) -> dict[str, Path]:
    """One credentials file per unsafe kind, all in ``where`` (a fresh private directory)."""
    files: dict[str, Path] = {}
    private = where / "private"
    private.mkdir(mode=0o700)
    os.mkfifo(private / "fifo.env", 0o600)
    files["fifo (no writer)"] = private / "fifo.env"
    try:
        os.mknod(private / "zero.env", stat.S_IFCHR | 0o600, os.makedev(1, 5))
        files["0600 char device 1,5"] = private / "zero.env"
    except OSError:
        files["/dev/zero"] = Path("/dev/zero")
    real = private / "real.env"
    real.write_text("RACKSMITH_BMC_PASSWORD=bench-pw\n")
    real.chmod(0o600)
    (private / "link.env").symlink_to(real)
    files["symlink"] = private / "link.env"
    foreign = private / "foreign.env"
    foreign.write_text("RACKSMITH_BMC_PASSWORD=bench-pw\n")
    foreign.chmod(0o600)
    try:
        os.chown(foreign, 4242, 4242)
        files["foreign owner"] = foreign
    except OSError:
        pass  # not root: cannot give a file away
    shared = where / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "creds.env").write_text("RACKSMITH_BMC_PASSWORD=bench-pw\n")
    (shared / "creds.env").chmod(0o600)
    files["world-writable dir"] = shared / "creds.env"
    return files


def bench_credentials_files() -> None:
    print("\ncredentials file        refused after  error names the file")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in _unsafe_files(Path(tmp)).items():
            started = time.monotonic()
            try:
                read_credentials_file(path)
                verdict = "ACCEPTED"
            except SecretError as exc:
                verdict = "yes" if str(path) in str(exc) else "NO"
            took = (time.monotonic() - started) * 1000
            print(f"{kind:<23} {took:>9.2f} ms  {verdict}")


#: link forms measured: (place, form of racksmith.testing.hostile.LINK_FORMS)
LINKS = {
    "absolute @odata.id": ("member", "absolute"),
    "//host @odata.id": ("member", "scheme_relative"),
    "@host @odata.id": ("member", "at_host"),
    "absolute nextLink": ("next_link", "absolute"),
    "absolute Location": ("location", "absolute"),
}


def bench_origins(creds: BmcCredentials) -> None:
    print("\nhostile link            requests to the collector  secret seen there  BMC error")
    for name, (place, form) in LINKS.items():
        with HostileServer("echo", status=200) as collector:
            link = LINK_FORMS[form].format(c=collector.port, b=0)
            with HostileServer("routes", routes=link_routes(place, link)) as bmc:
                options = DiscoveryOptions(
                    client=ClientOptions(scheme="http", retries=0), deadline=5.0
                )
                result = discover_one(Target("127.0.0.1", bmc.port), creds, options)
            wire = json.dumps([s.headers for s in collector.seen])
            stolen = "hostile-token" in wire or "Basic" in wire
            kind = result.error.kind.value if result.error else "ok"
            print(f"{name:<23} {len(collector.seen):>25}  {'YES' if stolen else 'no':<17}  {kind}")


def bench_logout(creds: BmcCredentials, deadline: float) -> None:
    routes = {
        SESSIONS: Route(201, {}, {"X-Auth-Token": "t", "Location": SESSIONS + "/1"}),
        SESSIONS + "/1": Route(200, b'{"x": "' + b"x" * 100 + b'"}', trickle=True),
        SYSTEMS: Route(body=b'{"Members": []' + b" " * 100 + b"}", trickle=True),
    }
    with HostileServer("routes", routes=routes, interval=1.0) as bmc:
        options = DiscoveryOptions(
            client=ClientOptions(scheme="http", retries=0), deadline=deadline
        )
        started = time.monotonic()
        result = discover_one(Target("127.0.0.1", bmc.port), creds, options)
        took = time.monotonic() - started
    kind = result.error.kind.value if result.error else "ok"
    print(
        f"\nBMC trickling the GET and the logout: {took:.2f} s"
        f" for a {deadline:g} s deadline ({kind})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 s deadlines")
    args = parser.parse_args()
    bmc_deadline = 1.0 if args.quick else 5.0
    maas_deadline = 1.0 if args.quick else maas_options.DEADLINE.default
    creds = BmcCredentials("root", "bench-password-1")
    key = ApiKey("bench-consumer", "bench-token", "bench-secret")
    redfish_head = f"redfish (deadline {bmc_deadline:g}s)"
    maas_head = f"maas (deadline {maas_deadline:g}s)"
    print(f"{'mode':<16} {redfish_head:<24} {maas_head}")
    for mode in MODES:
        with HostileServer(mode, interval=1.0, huge_bytes=50 << 20) as server:
            options = DiscoveryOptions(
                client=ClientOptions(scheme="http", retries=0), deadline=bmc_deadline
            )
            started = time.monotonic()
            result = discover_one(Target("127.0.0.1", server.port), creds, options)
            redfish = time.monotonic() - started
            kind = result.error.kind.value if result.error else "ok"
        with HostileServer(mode, interval=1.0, huge_bytes=50 << 20) as server:
            settings = {"deadline": maas_deadline}
            started = time.monotonic()
            try:
                with maas_options.client_for(
                    Credentials(f"{server.url}/MAAS/", key), True, settings
                ) as client:
                    client.get("machines/")
                maas_kind = "ok"
            except MaasError as exc:
                maas_kind = type(exc).__name__
            maas = time.monotonic() - started
        print(f"{mode:<16} {redfish:>8.2f} s {kind:<13} {maas:>8.2f} s {maas_kind}")
    bench_credentials_files()
    bench_origins(creds)
    bench_logout(creds, bmc_deadline)


if __name__ == "__main__":
    main()
