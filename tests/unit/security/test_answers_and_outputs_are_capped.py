"""Issue 9, case 8: every read is capped, and the MAAS simulator saves before it acknowledges.

Before: the health agent buffered a tool's output with no cap (``yes`` as ``nvidia-smi`` ran
it out of memory in under 2 s); Redfish answers of 50 MB were read whole; the simulator could
lose a deploy it had acknowledged if killed within its one-second save window.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from sec_support import MARGIN, redfish_options

from racksmith.health.checks import all_checks
from racksmith.health.host import Host
from racksmith.health.outcome import Severity
from racksmith.health.profile import Profile
from racksmith.health.runner import run_checks
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import Store
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasMalformedError
from racksmith.redfish.discover import discover_one
from racksmith.redfish.errors import ErrorKind
from racksmith.redfish.targets import Target


def test_endless_tool_output_is_cut_and_the_check_is_unknown(tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\nexec {shutil.which('yes')}\n")
    fake.chmod(0o755)
    host = Host(env={"PATH": str(tmp_path), "RACKSMITH_HEALTH_MAX_OUTPUT_LINES": "100000"})
    started = time.monotonic()
    (result,) = run_checks({"ecc": all_checks()["ecc"]}, Profile("t", "", {}), host, deadline_s=20)
    assert time.monotonic() - started < 5
    assert result.status == Severity.UNKNOWN
    assert "cap of 100000 lines" in result.findings[0].reason


@pytest.mark.parametrize("declared", [False, True])
def test_redfish_answer_over_the_cap_is_refused(declared, hostile, bmc_creds):
    if declared:  # Content-Length over the cap: refused without reading
        server = hostile("wrong_shape", body=b"[" + b"1," * 600_000 + b"1]")
    else:  # no length: read up to the cap, then refused
        server = hostile("huge", huge_bytes=50 << 20)
    options = redfish_options(max_answer_bytes=1 << 20)
    started = time.monotonic()
    result = discover_one(Target("127.0.0.1", server.port), bmc_creds, options)
    assert time.monotonic() - started < MARGIN
    assert result.error.kind is ErrorKind.MALFORMED
    assert "cap is 1048576 bytes" in result.error.reason


def test_maas_answer_over_the_cap_is_refused(hostile):
    server = hostile("huge", huge_bytes=50 << 20)
    key = ApiKey.parse("consumer-k:token-key-1:token-secret-1")
    with (
        pytest.raises(MaasMalformedError, match="too large"),
        MaasClient(Credentials(f"{server.url}/MAAS/", key), max_answer_bytes=1 << 20) as client,
    ):
        client.get("machines/")


def test_simulator_saves_before_it_acknowledges(tmp_path):
    """No saver thread runs here: what the client was told is done must already be on disk."""
    path = tmp_path / "state.json"
    store = Store(path=path)
    with running(store) as server:
        key = ApiKey.parse(store.admin_key())
        with MaasClient(Credentials(server.url, key), retries=0) as client:
            client.post("tags/", {"name": "acknowledged-tag"})
            saved = json.loads(path.read_text())  # read before anything else happens
    assert "acknowledged-tag" in saved["tags"]
