"""A minimal NTP server on the lab bridge, so test hosts have a time source to sync with.

Test hosts have no route off the bridge, so without it chrony could only be checked for
being configured, never for actually synchronising, and clock skew is a field lesson that
breaks TLS and apt. This serves the controller's own clock (RFC 5905 server mode, the subset
SNTP clients and chrony use) at stratum 10, like chrony's ``local`` directive: honest about
not being an upstream reference. Packet building is pure and unit-tested; ``serve`` is I/O.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
from collections.abc import Sequence

from racksmith.lab.errors import LabError
from racksmith.lab.paths import LabPaths
from racksmith.lab.proc import alive, log_tail, running, start_daemon, stop

NTP_EPOCH_OFFSET = 2208988800  # seconds from 1900-01-01 (NTP era 0) to 1970-01-01
STRATUM = 10
PORT = 123
_PACKET = struct.Struct("!BBbbII4sQQQQ")  # 48 bytes, RFC 5905 figure 8 without extensions


def to_ntp(unix_time: float) -> int:
    """64-bit NTP timestamp: 32 bits of seconds since 1900, 32 bits of fraction."""
    seconds = unix_time + NTP_EPOCH_OFFSET
    whole = int(seconds)
    return (whole << 32) | int((seconds - whole) * (1 << 32))


def from_ntp(stamp: int) -> float:
    return (stamp >> 32) - NTP_EPOCH_OFFSET + (stamp & 0xFFFFFFFF) / (1 << 32)


def build_reply(request: bytes, received: float, sent: float) -> bytes | None:
    """The server's answer to a client (mode 3) request, or None for anything else.

    Origin timestamp = the client's transmit timestamp, copied bit for bit: chrony matches
    replies to its requests by it.
    """
    if len(request) < _PACKET.size:
        return None
    first, *_rest, client_transmit = _PACKET.unpack_from(request)
    version, mode = (first >> 3) & 0x7, first & 0x7
    if mode != 3 or not 1 <= version <= 4:
        return None
    return _PACKET.pack(
        (0 << 6) | (version << 3) | 4,  # leap 0 (no warning), client's version, mode 4 (server)
        STRATUM,
        6,  # poll: 64 s
        -20,  # precision: about a microsecond
        0,  # root delay
        0x00000100,  # root dispersion: 1/256 s
        b"LOCL",  # reference id: the local clock
        to_ntp(sent - 1.0),  # reference timestamp: last "set" a second ago
        client_transmit,  # origin
        to_ntp(received),  # receive
        to_ntp(sent),  # transmit
    )


def request_packet(now: float | None = None) -> bytes:
    return _PACKET.pack((4 << 3) | 3, 0, 0, 0, 0, 0, b"\0" * 4, 0, 0, 0, to_ntp(now or time.time()))


def query(host: str, port: int = PORT, timeout: float = 1.0) -> float:
    """Ask ``host`` for the time; return the offset (server - local) in seconds."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        t1 = time.time()
        request = request_packet(t1)
        try:
            sock.sendto(request, (host, port))
            data, _ = sock.recvfrom(512)
        except OSError as exc:
            raise LabError(f"NTP server {host}:{port} did not answer: {exc}") from exc
        t4 = time.time()
    if len(data) < _PACKET.size:
        raise LabError(f"NTP server {host}:{port} sent a short reply ({len(data)} bytes)")
    fields = _PACKET.unpack_from(data)
    origin, received, transmitted = fields[8], fields[9], fields[10]
    if origin != _PACKET.unpack_from(request)[10] or fields[0] & 0x7 != 4:
        raise LabError(f"NTP server {host}:{port} sent a reply that does not match the request")
    return ((from_ntp(received) - t1) + (from_ntp(transmitted) - t4)) / 2


DAEMON = "ntp"


def ensure_running(lab: LabPaths, *, bind: str, port: int = PORT, timeout: float = 10.0) -> None:
    """Serve time on ``bind`` unless this lab's server answers already."""
    pidfile = lab.pidfile(DAEMON)
    record = running(pidfile)
    if record is not None:
        try:
            query(bind, port, timeout=0.5)
            return
        except LabError:
            stop(pidfile)
    logfile = lab.logfile(DAEMON)
    record = start_daemon(
        [sys.executable, "-m", "racksmith.lab.ntp", "--listen", bind, "--port", str(port)],
        pidfile=pidfile,
        logfile=logfile,
    )
    deadline = time.monotonic() + timeout
    while True:
        if not alive(record):
            raise LabError(f"the lab NTP server exited; log tail:\n{log_tail(logfile)}")
        try:
            query(bind, port, timeout=0.3)
            return
        except LabError:
            if time.monotonic() > deadline:
                raise LabError(
                    f"the lab NTP server did not answer on {bind}:{port} within {timeout:.0f}s;"
                    f" log tail:\n{log_tail(logfile)}"
                ) from None
            time.sleep(0.1)


def serve(listen: str, port: int = PORT) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((listen, port))
        print(f"racksmith lab ntp: serving the controller clock on {listen}:{port}", flush=True)
        while True:
            data, peer = sock.recvfrom(512)
            received = time.time()
            reply = build_reply(data, received, time.time())
            if reply is not None:
                sock.sendto(reply, peer)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m racksmith.lab.ntp", description=__doc__)
    parser.add_argument("--listen", required=True, help="address to bind (the bridge address)")
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    try:
        serve(args.listen, args.port)
    except OSError as exc:
        print(
            f"racksmith lab ntp: cannot serve on {args.listen}:{args.port}: {exc}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
