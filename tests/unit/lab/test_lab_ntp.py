"""The lab's NTP server: a reply chrony accepts, and a real round trip on loopback."""

import socket
import threading
import time

import pytest

from racksmith.lab import ntp
from racksmith.lab.errors import LabError


def test_ntp_timestamps_round_trip():
    now = 1_800_000_000.123456
    assert abs(ntp.from_ntp(ntp.to_ntp(now)) - now) < 1e-6
    assert ntp.to_ntp(0) >> 32 == ntp.NTP_EPOCH_OFFSET


def test_reply_echoes_the_client_transmit_time_and_speaks_server_mode():
    request = ntp.request_packet(1_800_000_000.5)
    reply = ntp.build_reply(request, received=1_800_000_001.0, sent=1_800_000_001.25)
    assert reply is not None and len(reply) == 48
    first, stratum, *_, refid, _ref, origin, received, transmitted = ntp._PACKET.unpack(reply)
    assert first & 0x7 == 4 and (first >> 3) & 0x7 == 4 and first >> 6 == 0
    assert stratum == ntp.STRATUM and refid == b"LOCL"
    assert origin == ntp._PACKET.unpack(request)[10]
    assert ntp.from_ntp(received) == pytest.approx(1_800_000_001.0, abs=1e-6)
    assert ntp.from_ntp(transmitted) == pytest.approx(1_800_000_001.25, abs=1e-6)


@pytest.mark.parametrize(
    "packet",
    [b"short", bytes([(4 << 3) | 4]) + bytes(47), bytes([(7 << 3) | 3]) + bytes(47)],
)
def test_non_client_packets_get_no_answer(packet):
    assert ntp.build_reply(packet, 0.0, 0.0) is None


def test_query_against_the_server_on_loopback():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = threading.Thread(target=ntp.serve, args=("127.0.0.1", port), daemon=True)
    server.start()
    time.sleep(0.2)
    assert abs(ntp.query("127.0.0.1", port)) < 0.05  # same clock on both ends


def test_query_without_a_server_fails_with_the_address():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LabError, match=f"127.0.0.1:{port} did not answer"):
        ntp.query("127.0.0.1", port, timeout=0.3)
