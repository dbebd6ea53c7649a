"""The BMC password never reaches logs, exceptions, CLI output or module results.

Everything runs at DEBUG on every logger (urllib3 included) through success, 401, TLS failure,
session-limit backoff, resets and a malformed BMC; then the captured text is grepped.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from racksmith.lab.bmc.behaviour import Faults
from racksmith.redfish import actions
from racksmith.redfish.client import ClientOptions, RedfishClient
from racksmith.redfish.credentials import Credentials
from racksmith.redfish.discover import DiscoveryOptions, discover
from racksmith.secrets import MASK, redact


def test_credentials_do_not_print_their_password(creds):
    for text in (repr(creds), str(creds), f"{creds}", f"{creds!r}"):
        assert creds.password_value() not in text and "redacted" in text
    assert redact(f"token for {creds.password_value()} here") == f"token for {MASK} here"
    assert "***" in redact(
        "Authorization: Basic cm9vdDpzZWNyZXQ="
    ) and "cm9vdDpzZWNyZXQ" not in redact("Authorization: Basic cm9vdDpzZWNyZXQ=")


def test_password_absent_from_logs_and_errors(rack, server, creds, client_options, caplog):
    caplog.set_level(logging.DEBUG)  # root: racksmith, urllib3, the emulator, everything
    lab = rack(
        [
            server(1),
            server(2, faults=("bmc_malformed",)),
            server(3, faults=("bmc_reset",)),
            server(4, faults=("bmc_busy",)),
        ],
        faults={"gpu01": Faults(busy_cycle=2)},
    )
    results = discover(lab.targets(), creds, DiscoveryOptions(client=client_options, deadline=5))
    wrong = discover(
        lab.targets()[:1],
        Credentials(creds.username, creds.password_value() + "-wrong"),
        DiscoveryOptions(client=client_options),
    )
    untrusted = discover(
        lab.targets()[:1], creds, DiscoveryOptions(client=ClientOptions(read_timeout=2))
    )
    with RedfishClient(lab.target("gpu01"), creds, client_options) as c:
        actions.power(c, "on", wait=3, poll=0.1)
        actions.boot_once(c)
        actions.clock(c, correct=True)
    outcomes = [r.as_dict() for r in results + wrong + untrusted]
    assert [o["error_kind"] for o in outcomes] == [
        None,
        "malformed",
        "reset",
        "busy",
        "auth_failed",
        "tls",
    ]
    text = (
        caplog.text
        + json.dumps(outcomes)
        + "".join(repr(r.error) for r in results + wrong + untrusted)
    )
    assert len(caplog.records) > 50  # the run really was logged in detail
    for secret in (creds.password_value(), creds.password_value() + "-wrong"):
        assert secret not in text
    # Basic credentials in base64 must not appear either (urllib3 never logs headers; we check)
    import base64

    assert (
        base64.b64encode(f"{creds.username}:{creds.password_value()}".encode()).decode() not in text
    )


def test_cli_output_and_stderr_hold_no_password(rack, server, creds, lab_dir):
    lab = rack([server(1), server(7, faults=("bmc_auth_failed",))])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACKSMITH_BMC_")}
    env["MY_BMC_PASSWORD"] = creds.password_value()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "racksmith",
            "redfish",
            "discover",
            "-vv",
            "--json",
            "--bmc",
            str(lab.target("gpu01")),
            "--bmc",
            str(lab.target("gpu07")),
            "--username",
            creds.username,
            "--password-env",
            "MY_BMC_PASSWORD",
            "--ca-bundle",
            str(lab_dir / "ca" / "ca.pem"),
            "--deadline",
            "10",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 2
    assert "DEBUG" in done.stderr  # verbose run, yet:
    assert creds.password_value() not in done.stdout + done.stderr
