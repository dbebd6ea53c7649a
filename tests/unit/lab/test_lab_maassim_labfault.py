"""A test host that cannot boot is a lab fault, never the server's install failure.

The MAAS simulator boots the deployed server's nspawn host through an injected boot step;
here that step fails (or hangs) the way issue 11 saw it: systemd in the container died with
"Too many open files". No real nspawn runs: the decision under test is the simulator's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from racksmith.lab import spec
from racksmith.lab.errors import LabError
from racksmith.lab.maassim.clock import SimClock
from racksmith.lab.maassim.labhosts import LabFault, LabHosts
from racksmith.lab.maassim.server import running
from racksmith.lab.maassim.state import Store
from racksmith.lab.paths import LabPaths
from racksmith.maas import triage as maas_triage
from racksmith.maas.auth import ApiKey, Credentials
from racksmith.maas.client import MaasClient
from racksmith.maas.clock import ScaledClock
from racksmith.maas.model import Machine, NodeStatus
from racksmith.triage.classify import classify, evidence_from_report

SPEED = 3000.0
POWER = {"power_address": "127.0.0.1:1", "power_user": "root", "power_pass": "x"}
SYSTEMD_DIED = "Failed to create control group inotify object: Too many open files"


def _console(lab_dir, server: str, *lines: str):
    path = LabPaths(lab_dir).machine(server) / "console.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{ln}\n" for ln in lines))
    return path


def _failing_boot(rack, server, *, user_data, lab_dir):
    """What racksmith.lab.hosts.boot does when systemd in the container dies."""
    log = _console(lab_dir, server.name, "Spawning container ...", SYSTEMD_DIED,
                   "[!!!!!!] Failed to allocate manager object.", "Exiting PID 1...")  # fmt: skip
    raise LabError(
        f"test host {server.name}: exited before SSH answered; console log {log}:\n{SYSTEMD_DIED}"
    )


def _boots(hosts: LabHosts, server: str, timeout: float = 10.0):
    got: list[LabFault | None] = []
    done = threading.Event()

    def record(fault):
        got.append(fault)
        done.set()

    hosts.boot(server, None, record)
    assert done.wait(timeout), "the boot was never reported"
    return got


def test_a_boot_that_raises_is_a_lab_fault_with_the_console_tail(tmp_path):
    rack = spec.load()
    (fault,) = _boots(LabHosts(rack, tmp_path, boot_host=_failing_boot), "gpu01")
    assert isinstance(fault, LabFault)
    console = LabPaths(tmp_path).machine("gpu01") / "console.log"
    assert fault.summary() == (
        "LAB FAULT: test host gpu01 did not boot: LabError: exited before SSH answered; "
        f"console log: {console}"
    )
    assert fault.console_tail[-1] == "Exiting PID 1..."
    assert SYSTEMD_DIED in fault.console_tail
    assert SYSTEMD_DIED in fault.log_text()


def test_a_boot_that_hangs_past_the_bound_is_a_lab_fault_reported_once(tmp_path):
    rack = spec.load()
    release = threading.Event()

    def hanging(rack, server, *, user_data, lab_dir):
        _console(lab_dir, server.name, "Welcome to Debian GNU/Linux 12 (bookworm)!")
        release.wait(5)
        raise LabError("test host gpu02: stopped")  # after the bound: must not be reported

    hosts = LabHosts(rack, tmp_path, boot_host=hanging, bound=0.2)
    got = _boots(hosts, "gpu02")
    release.set()
    time.sleep(0.2)
    assert len(got) == 1
    assert got[0] is not None
    assert got[0].reason == "no answer (SSH and cloud-init) within 0.2s of starting its boot"
    assert got[0].console_tail == ("Welcome to Debian GNU/Linux 12 (bookworm)!",)


def test_a_boot_that_answers_is_no_fault(tmp_path):
    rack = spec.load()
    assert _boots(LabHosts(rack, tmp_path, boot_host=lambda *a, **k: None), "gpu03") == [None]


def test_a_missing_console_log_is_said_not_hidden(tmp_path):
    rack = spec.load()

    def no_log(rack, server, *, user_data, lab_dir):
        raise OSError("nspawn: not found")

    (fault,) = _boots(LabHosts(rack, tmp_path, boot_host=no_log), "gpu04")
    assert fault.reason == "OSError: nspawn: not found"
    assert fault.console_tail[0].startswith("(console log unreadable:")


def _ready_machine(store: Store, server: spec.Server) -> str:
    admin = store.users["admin"]
    with store.lock:
        m = store.create_machine(
            hostname=server.service_tag.lower(),
            macs=[server.pxe_mac],
            architecture="amd64/generic",
            power_type="redfish",
            power_parameters=POWER,
            commission=False,
            user=admin,
            extra={},
        )
        store._discover_hardware(m)
        store.set_status(m, NodeStatus.READY, user="admin")
        assert m.lab_server == server.name
        return m.system_id


def test_the_simulator_reports_a_lab_fault_and_triage_files_it_as_one(tmp_path):
    """End to end over the API: MAAS's event, error description, installation log, the
    client's triage cause and the report triage all name the lab, not curtin."""
    rack = spec.load()
    server = rack.server("gpu01")
    assert not server.faults  # a healthy server: nothing of this is its fault
    hosts = LabHosts(rack, tmp_path, boot_host=_failing_boot)
    store = Store(clock=SimClock(SPEED), rack=rack, hosts=hosts, seed=7)
    sid = _ready_machine(store, server)
    with running(store) as http:
        key = ApiKey.parse(store.admin_key())
        with MaasClient(Credentials(http.url, key), clock=ScaledClock(SPEED)) as client:
            client.post(f"machines/{sid}/", {"distro_series": "jammy"}, op="deploy")
            deadline = time.monotonic() + 20
            while True:
                machine = Machine.from_json(client.get(f"machines/{sid}/"))
                if machine.status is not NodeStatus.DEPLOYING or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            assert machine.status is NodeStatus.FAILED_DEPLOYMENT
            assert machine.error_description.startswith("LAB FAULT: test host gpu01 did not boot")
            found = maas_triage.collect(client, machine, "deploy")
    assert found.cause.startswith("Lab fault - LAB FAULT: test host gpu01 did not boot:")
    assert "console log: " in found.cause and "curtin" not in found.cause
    assert any(SYSTEMD_DIED in line for line in found.log_tail)
    diagnosis = classify(evidence_from_report(machine.hostname, {
        "result": "FAILED:deploy", "failed_phase": "deploy", "failure_reason": found.cause,
        "maas": {"cause": found.cause, "events": found.events, "log_tail": found.log_tail},
    }))  # fmt: skip
    assert diagnosis.cause.name == "lab_fault"
    assert any("LAB FAULT: test host gpu01" in line.text for line in diagnosis.evidence)


def test_a_state_file_from_before_lab_faults_still_names_the_lab(tmp_path):
    """A saved op with ``boot: failed: <text>`` (older simulator) ends as a lab fault too."""
    from racksmith.lab.maassim import state as st

    m = st.SimMachine(system_id="abc", hostname="h", architecture="amd64/generic",
                      power_type="redfish", power_parameters={}, macs=[],
                      lab_server="gpu05")  # fmt: skip
    fault = st._lab_fault(m, {"boot": "failed: LabError: SSH did not answer"})
    assert fault is not None and fault.summary().startswith(
        "LAB FAULT: test host gpu05 did not boot: LabError: SSH did not answer"
    )
    assert st._lab_fault(m, {"boot": "done"}) is None
    assert st._lab_fault(m, {"boot": "none"}) is None


def test_a_host_that_answers_after_its_lab_fault_is_powered_off(tmp_path):
    """The machine already ended Failed deployment: a late host must not stay up unowned."""
    rack = spec.load()
    release, stopped = threading.Event(), threading.Event()

    class Recording(LabHosts):
        def shutdown(self, server):
            stopped.set()

    def slow(rack, server, *, user_data, lab_dir):
        release.wait(5)

    hosts = Recording(rack, tmp_path, boot_host=slow, bound=0.1)
    (fault,) = _boots(hosts, "gpu06")
    assert fault is not None and not stopped.is_set()
    release.set()
    assert stopped.wait(5)


def test_a_failed_user_data_quotes_cloud_inits_output_not_the_console():
    from racksmith.lab.maassim.labhosts import fault_from_error

    exc = LabError("test host gpu07: user-data runcmd failed; /var/log/cloud-init-output.log:\n"
                   "+ apt-get install -y chrony\nE: Unable to locate package chrony\n")
    fault = fault_from_error("gpu07", exc, Path("/nonexistent/console.log"))
    assert fault.reason == "LabError: user-data runcmd failed; /var/log/cloud-init-output.log"
    assert fault.console_tail == ("+ apt-get install -y chrony",
                                  "E: Unable to locate package chrony")
