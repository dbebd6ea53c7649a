"""One fleet-wide pace for power actions (racksmith.pacing): slots across processes, the
deadline, clear setting errors, and actions.power taking its slot before it posts a reset."""

from __future__ import annotations

import subprocess
import sys
import time
from itertools import pairwise

import pytest

from racksmith import pacing
from racksmith.lab.bmc.behaviour import Settings
from racksmith.redfish import actions
from racksmith.redfish.client import RedfishClient
from racksmith.redfish.errors import ErrorKind, RedfishError
from racksmith.transport import Deadline


@pytest.mark.parametrize("text", ["abc", "-1", "nan", "inf"])
def test_a_wrong_setting_is_a_clear_error(text):
    with pytest.raises(pacing.PacingError, match="RACKSMITH_POWER_ACTIONS_PER_MINUTE"):
        pacing.rate_from(text)


def test_the_default_and_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE")
    assert pacing.from_environment().per_minute == pacing.DEFAULT_PER_MINUTE == 20.0
    monkeypatch.setenv("RACKSMITH_POWER_ACTIONS_PER_MINUTE", "6")
    assert pacing.from_environment().interval == 10.0
    assert pacing.from_environment(per_minute=0).interval == 0.0


def test_slots_are_spaced_across_processes(tmp_path):
    """Four processes (as Ansible forks) take slots at once: each a full interval apart."""
    state = tmp_path / "pace"
    code = (
        "import sys; from pathlib import Path; from racksmith import pacing; "
        "print(pacing.take_slot(pacing.Pace(120.0, Path(sys.argv[1]))))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(state)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    slots = sorted(float(p.communicate(timeout=60)[0]) for p in procs)
    gaps = [b - a for a, b in pairwise(slots)]
    assert all(abs(g - 0.5) < 1e-3 for g in gaps), gaps


def test_a_wait_longer_than_the_budget_is_refused_before_sending(tmp_path):
    pace = pacing.Pace(1.0, tmp_path / "pace")  # one a minute
    clock = [1000.0]
    first = pacing.wait_turn(pace, "a", now=lambda: clock[0], sleep=lambda s: None)
    assert first == 0.0
    with pytest.raises(pacing.PacingTimeout, match="would hold it 60s, longer than the 5s left"):
        pacing.wait_turn(pace, "b", budget=5, now=lambda: clock[0], sleep=lambda s: None)
    waits: list[float] = []
    clock[0] += 200.0  # later on, the slots are free again (a refused wait takes no slot)
    assert pacing.wait_turn(pace, "c", now=lambda: clock[0], sleep=waits.append) == 0.0


def test_power_actions_take_their_slot(rack, server, creds, client_options, tmp_path):
    lab = rack([server(1)], settings=Settings(power_delay=0.1))
    pace = pacing.Pace(30.0, tmp_path / "pace")  # a slot every 2 s
    started = time.time()
    with RedfishClient(lab.target("gpu01"), creds, client_options) as c:
        on = actions.power(c, "on", wait=5, poll=0.1, pace=pace)
        off = actions.power(c, "off", wait=5, poll=0.1, pace=pace)
    assert on.details["paced_seconds"] == 0.0
    # the second reset waited for its slot, two seconds after the first one's
    assert 0.0 < off.details["paced_seconds"] <= 2.0
    assert float(pace.state_file.read_text()) >= started + 2.0


def test_a_reset_the_pace_would_delay_past_the_deadline_is_not_sent(
    rack, server, creds, client_options, tmp_path
):
    lab = rack([server(1)], settings=Settings(power_delay=0.1))
    pace = pacing.Pace(1.0, tmp_path / "pace")
    pacing.take_slot(pace)  # someone else just powered a server: the next slot is a minute away
    client = RedfishClient(lab.target("gpu01"), creds, client_options, deadline=Deadline(10))
    with client as c, pytest.raises(RedfishError) as held:
        actions.power(c, "on", wait=1, poll=0.1, pace=pace)
    assert held.value.kind is ErrorKind.TIMEOUT and "not sent" in held.value.reason
    assert lab.bmc("gpu01").stats["reset_On"] == 0
