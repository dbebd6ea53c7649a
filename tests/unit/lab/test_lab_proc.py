"""PID records: the lab must stop exactly the processes it started, never a stranger."""

import socket
import subprocess
import sys
import time

import pytest

from racksmith.lab import proc
from racksmith.lab.errors import LabError

# A /proc/PID/stat line whose command name contains spaces and a parenthesis.
STAT = (
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 "
    + " ".join(["0"] * 12)
    + " 987654 "
    + "0 " * 30
)


def test_parse_start_time_survives_spaces_in_the_command_name():
    assert proc.parse_start_time(STAT) == 987654


def test_record_round_trips_through_json():
    record = proc.ProcRecord(pid=12, start=34, argv=("a", "b c"))
    assert proc.ProcRecord.from_json(record.to_json()) == record


def _table(*rows: tuple[str, str, int]) -> str:
    """A /proc/net/tcp-style table: (local address, state, inode) per row."""
    lines = [
        "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode"
    ]
    for i, (local, state, inode) in enumerate(rows):
        lines.append(f"{i}: {local} 0:0000 {state} 0:0 00:0 0 0 0 {inode}")
    return "\n".join(lines) + "\n"


TCP = _table(
    ("01FAA8C0:0C46", "0A", 111),  # 192.168.250.1:3142 listening
    ("00000000:0C46", "0A", 222),  # 0.0.0.0:3142 listening
    ("0100007F:0C46", "0A", 333),  # 127.0.0.1:3142 listening
    ("01FAA8C0:0C46", "01", 444),  # an established connection, not a listener
    ("01FAA8C0:0C47", "0A", 555),  # another port
)
TCP6 = _table(
    ("0000000000000000FFFF000001FAA8C0:0C46", "0A", 666),  # ::ffff:192.168.250.1
    ("00000000000000000000000000000000:0C46", "0A", 777),  # [::]
)


def test_parse_listeners_matches_exact_and_wildcard_listen_sockets_only():
    # 192.168.250.1:3142 exact (111) and 0.0.0.0:3142 (222); not loopback, not an
    # established connection, not another port.
    assert proc.parse_listeners(TCP, "192.168.250.1", 3142) == {111, 222}
    assert proc.parse_listeners(TCP, "127.0.0.1", 3142) == {222, 333}
    assert proc.parse_listeners(TCP6, "192.168.250.1", 3142) == {666, 777}


@pytest.fixture
def sleeper(tmp_path):
    pidfile, log = tmp_path / "run" / "s.pid", tmp_path / "s.log"
    record = proc.start_daemon(["sleep", "60"], pidfile=pidfile, logfile=log)
    yield record, pidfile
    proc.stop(pidfile, timeout=2)


def test_start_daemon_records_a_live_process_in_its_own_session(sleeper):
    record, pidfile = sleeper
    assert proc.alive(record)
    assert proc.read_record(pidfile) == record
    assert proc.running(pidfile) == record
    assert (
        subprocess.check_output(["ps", "-o", "sid=", "-p", str(record.pid)]).strip()
        == str(record.pid).encode()
    )


def test_stop_ends_the_recorded_process_and_forgets_it(sleeper):
    record, pidfile = sleeper
    assert proc.stop(pidfile, timeout=5) is True
    assert not proc.alive(record)
    assert not pidfile.exists()
    assert proc.stop(pidfile) is False  # idempotent


def test_a_reused_pid_is_never_signalled(sleeper):
    """A record whose start time does not match is someone else's process."""
    record, pidfile = sleeper
    pidfile.write_text(proc.ProcRecord(record.pid, record.start + 1, record.argv).to_json())
    assert proc.running(pidfile) is None  # stale record removed ...
    assert proc.stop(pidfile) is False
    assert proc.alive(record)  # ... and the process left alone


def test_stop_escalates_to_sigkill_for_a_process_ignoring_sigterm(tmp_path):
    pidfile = tmp_path / "stubborn.pid"
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    record = proc.start_daemon(
        [sys.executable, "-c", code], pidfile=pidfile, logfile=tmp_path / "l"
    )
    time.sleep(0.3)
    t0 = time.monotonic()
    assert proc.stop(pidfile, timeout=0.5)
    assert not proc.alive(record)
    assert time.monotonic() - t0 < 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wait_for_port_accepts_the_daemons_own_listener(tmp_path):
    port = _free_port()
    code = (
        "import socket, time; s = socket.socket(); "
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
        f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(60)"
    )
    pidfile = tmp_path / "srv.pid"
    record = proc.start_daemon(
        [sys.executable, "-c", code], pidfile=pidfile, logfile=tmp_path / "l"
    )
    try:
        proc.wait_for_port("127.0.0.1", port, timeout=10, what="srv", record=record)
        assert proc.owns_listener(record, "127.0.0.1", port)
        assert proc.listener_owner("127.0.0.1", port) == record.pid
    finally:
        proc.stop(pidfile)


def test_wait_for_port_rejects_a_stranger_holding_the_port(tmp_path):
    port = _free_port()
    stranger = socket.socket()
    stranger.bind(("127.0.0.1", port))
    stranger.listen()
    pidfile = tmp_path / "d.pid"
    record = proc.start_daemon(["sleep", "30"], pidfile=pidfile, logfile=tmp_path / "d.log")
    try:
        with pytest.raises(LabError, match="did not answer"):
            proc.wait_for_port("127.0.0.1", port, timeout=1, what="d", record=record)
        with pytest.raises(LabError, match="already taken by pid"):
            proc.ensure_port_free("127.0.0.1", port, what="d")
    finally:
        stranger.close()
        proc.stop(pidfile)


def test_wait_for_port_reports_a_dead_daemon_with_its_log(tmp_path):
    log = tmp_path / "boom.log"
    record = proc.start_daemon(
        ["sh", "-c", "echo 'bind failed: no such address'; exit 3"],
        pidfile=tmp_path / "boom.pid",
        logfile=log,
    )
    with pytest.raises(LabError, match=r"exited before.*\n.*bind failed"):
        proc.wait_for_port(
            "127.0.0.1", _free_port(), timeout=10, what="boom", record=record, logfile=log
        )


def test_run_names_the_failing_command():
    with pytest.raises(LabError, match=r"`sh -c echo nope >&2; exit 4` failed \(rc 4\): nope"):
        proc.run(["sh", "-c", "echo nope >&2; exit 4"])
