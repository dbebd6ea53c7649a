"""Issue 27 item 6: an error names the limit that really ran out, and MAAS names where.

Before: a BMC that accepted the TCP connection and never answered failed after the connect
timeout (CPython runs the TLS handshake under it) with "the read timeout of 30s ran out"; MAAS
said "connection failed: ConnectionError" without host, port or errno. Real sockets here: a
listener that accepts and says nothing, and a port nobody listens on.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from racksmith.credentials import BmcCredentials
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.errors import MaasError
from racksmith.redfish import options as redfish_options
from racksmith.redfish import targets
from racksmith.redfish.client import ClientOptions, Deadline, RedfishClient
from racksmith.redfish.errors import RedfishError
from racksmith.transport import describe_connection_error


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # bound, never listened: connecting is refused
    return port


def _redfish(port: int, scheme: str) -> tuple[float, str]:
    params = {o.name: o.default for o in redfish_options.MODULE}
    params.update(scheme=scheme, connect_timeout=1.0, read_timeout=6.0, retries=0, auth="basic")
    target = targets.parse(f"127.0.0.1:{port}", 443)[0]
    started = time.monotonic()
    with pytest.raises(RedfishError) as caught:
        with RedfishClient(
            target,
            BmcCredentials("u", "p"),
            ClientOptions.from_params(params),
            deadline=Deadline(20),
        ) as client:
            client.get("/redfish/v1/")
    return time.monotonic() - started, caught.value.reason


def test_a_bmc_that_accepts_and_never_answers_names_the_connect_timeout(silent_port):
    elapsed, reason = _redfish(silent_port, "https")
    assert elapsed < 5, reason  # the handshake is bounded by the 1 s connect timeout
    assert "no TLS handshake" in reason and "connect timeout of 1s ran out" in reason, reason
    assert "read timeout" not in reason


def test_a_silent_answer_after_connecting_names_the_read_timeout(silent_port):
    elapsed, reason = _redfish(silent_port, "http")
    assert elapsed >= 5.5, reason
    assert "no answer: the read timeout of 6s ran out" in reason, reason


def _maas(url: str) -> str:
    client = MaasClient(
        Credentials(url, ApiKey.parse("a:b:c")),
        verify=True,
        timeout=(1.0, 3.0),
        deadline=8,
        retries=0,
    )
    with pytest.raises(MaasError) as caught:
        client.get("machines/")
    return str(caught.value)


def test_maas_refused_names_host_port_and_errno():
    port = _closed_port()
    message = _maas(f"http://127.0.0.1:{port}/MAAS/")
    assert f"connection to 127.0.0.1:{port} failed: [Errno 111]" in message, message
    assert "(ECONNREFUSED)" in message
    assert "ConnectionError" not in message


def test_maas_silent_tls_names_where_and_the_connect_timeout(silent_port):
    message = _maas(f"https://127.0.0.1:{silent_port}/MAAS/")
    assert f"127.0.0.1:{silent_port}" in message and "no TLS handshake" in message, message
    assert "connect timeout of 1s ran out" in message


def test_describe_names_the_system_error_down_the_chain():
    inner = ConnectionRefusedError(111, "Connection refused")
    try:
        try:
            raise inner
        except OSError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as outer:
        text = describe_connection_error(outer, "https://[fd00::5]/MAAS/")
    assert (
        text == "connection to [fd00::5]:443 failed: [Errno 111] Connection refused (ECONNREFUSED)"
    )
