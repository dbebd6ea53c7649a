"""The nspawn restart wrapper: restart on exit 133 (in-host reboot), stop on request."""

import signal
import subprocess
import sys
import time

from racksmith.lab import supervise
from racksmith.lab.proc import ProcRecord


def test_restarts_after_a_reboot_exit_and_passes_the_final_code(tmp_path):
    counter = tmp_path / "n"
    script = (
        f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n+1)) > {counter};"
        " [ $n -ge 2 ] && exit 7; exit 133"
    )
    rc = supervise.main(["--child-pidfile", str(tmp_path / "pid"), "--", "sh", "-c", script])
    assert rc == 7
    assert counter.read_text().strip() == "3"  # two reboots, then the final exit
    record = ProcRecord.from_json((tmp_path / "pid").read_text())
    assert record.argv == ("sh", "-c", script) and record.start > 0


def test_gives_up_on_a_boot_loop(tmp_path):
    counter = tmp_path / "n"
    script = f"echo x >> {counter}; exit 133"
    assert supervise.main(["--", "sh", "-c", script]) == 133
    assert len(counter.read_text().split()) == supervise.MAX_RESTARTS_PER_MINUTE + 1


def test_sigterm_is_forwarded_once_and_not_restarted(tmp_path):
    marker = tmp_path / "got-term"
    child = f"trap 'echo term > {marker}; exit 133' TERM; sleep 60 & wait"
    proc = subprocess.Popen(
        [sys.executable, "-m", "racksmith.lab.supervise", "--grace", "5", "--", "sh", "-c", child]
    )
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 133  # the child's code, and no restart after a stop
    assert marker.read_text() == "term\n"


def test_escalates_when_the_child_ignores_sigterm():
    child = "trap '' TERM; sleep 60 & wait; sleep 60"
    proc = subprocess.Popen(
        [sys.executable, "-m", "racksmith.lab.supervise", "--grace", "0.5", "--", "sh", "-c", child]
    )
    time.sleep(1.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) != 0
    assert time.monotonic() - t0 < 10
