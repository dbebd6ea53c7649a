"""How long a hostile endpoint can hold each client: wall time per mode, printed as figures.

    python tests/bench/bench_hostile.py          # BMC deadline 5 s, MAAS's default deadline
    python tests/bench/bench_hostile.py --quick  # 1 s deadlines, a few seconds in all

Before the whole-request deadlines (issue 9) a BMC trickling one byte a second held a "5 s"
discovery for 44 s, slow headers 28 s, and a silent MAAS 7.8 minutes.
"""

from __future__ import annotations

import argparse
import time

from racksmith.maas import options as maas_options
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.errors import MaasError
from racksmith.redfish.client import ClientOptions
from racksmith.redfish.credentials import Credentials as BmcCredentials
from racksmith.redfish.discover import DiscoveryOptions, discover_one
from racksmith.redfish.targets import Target
from racksmith.testing.hostile import MODES, HostileServer


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


if __name__ == "__main__":
    main()
