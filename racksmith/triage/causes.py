"""The named causes a failed host can have, and the action each one calls for.

One table, so that the triage rules, the tickets, the report's filters and the docs all use
the same names. A cause names what an operator does next, not just what broke: the action is
one of a small, fixed set (reseat, vendor RMA, datacenter ticket, firmware update,
reprovision, retry, and investigate for what no rule recognised). ``lab_fault`` exists only in
the test lab: a simulated server's test host that never booted is the lab's failure, never the
server's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Action(str, enum.Enum):
    RESEAT = "reseat"
    RMA = "vendor RMA"
    DATACENTER = "datacenter ticket"
    FIRMWARE = "firmware update"
    REPROVISION = "reprovision"
    RETRY = "retry"
    INVESTIGATE = "investigate"


@dataclass(frozen=True)
class Cause:
    name: str  # stable identifier: filters, metrics labels, ticket files
    title: str  # what a person reads
    action: Action
    advice: str  # the first concrete step

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "title": self.title,
            "action": self.action.value,
            "advice": self.advice,
        }


_TABLE = (
    # First: when the lab itself failed (a test host that never booted), nothing else the
    # evidence says is about the server, so this outranks every other cause.
    Cause("lab_fault", "LAB FAULT: the test lab failed, not the server", Action.RETRY,
          "Fix the lab (read the test host's console log named in the evidence), then rerun."),
    Cause("bmc_unreachable", "BMC unreachable", Action.DATACENTER,
          "Check the BMC's network cable, switch port and standby power; then rerun discover."),
    Cause("bmc_auth", "BMC rejects the credentials", Action.DATACENTER,
          "Reset the BMC account to the site's credentials (or fix the vault entry)."),
    Cause("bmc_error", "BMC answers, but not with usable Redfish", Action.RETRY,
          "Rerun discover; if it persists, reset the BMC (racadm racreset) or update firmware."),
    Cause("bmc_duplicate", "Identity reported by two BMCs", Action.DATACENTER,
          "Two BMCs claim one MAC, serial or service tag: check the cabling and the inventory."),
    Cause("clock_skew", "Clock skew", Action.DATACENTER,
          "Point the BMC (or host) at the site NTP servers; update BMC firmware if it refuses."),
    Cause("psu_fault", "Power supply fault", Action.RMA,
          "Open a vendor case for the failed PSU with the BMC's SEL entry."),
    Cause("power_control", "MAAS cannot power-control the server", Action.DATACENTER,
          "Check the BMC power parameters MAAS holds and that the BMC answers IPMI/Redfish."),
    Cause("gpu_missing", "GPU not detected (count below the model's)", Action.RESEAT,
          "Reseat the missing GPU (or its baseboard); RMA it if it stays missing."),
    Cause("gpu_model", "Unexpected GPU model", Action.DATACENTER,
          "The server does not carry the GPUs its model should: check the build order."),
    Cause("nic_missing", "NIC or HCA not detected", Action.RESEAT,
          "Reseat the adapter and its cables; RMA it if it stays missing."),
    Cause("pcie_degraded", "PCIe link degraded", Action.RESEAT,
          "Reseat the device or riser whose link trained below its width or speed."),
    Cause("disk_fault", "NVMe fault or missing disk", Action.RMA,
          "Check the drive in the BMC's storage view; replace it under the vendor case."),
    Cause("thermal", "Thermal events", Action.DATACENTER,
          "Check fans, airflow and inlet temperature of the rack position."),
    Cause("hardware_critical", "BMC reports the hardware Critical", Action.RMA,
          "Read the BMC's event log (SEL) and open a vendor case for the failed part."),
    Cause("firmware_drift", "Firmware or BIOS differs from the site's baseline", Action.FIRMWARE,
          "Roll the baseline out to the host (playbooks/firmware.yml, a dry run first); the "
          "evidence names each component with its current and wanted version."),
    Cause("boot_failure", "Boot or PXE failure", Action.RETRY,
          "Retry the deployment; if it repeats, check PXE on the boot NIC and the boot order."),
    Cause("commissioning_failed", "Commissioning failure", Action.RETRY,
          "Retry commissioning; read the MAAS events in the ticket for the failing script."),
    Cause("deploy_failed", "Deployment failure", Action.REPROVISION,
          "Re-provision the host (playbooks/reprovision.yml -l HOST) after reading the log."),
    Cause("configure_failed", "Configuration failure", Action.RETRY,
          "Rerun configure for the host; the ticket quotes the task that failed."),
    Cause("host_unreachable", "Deployed host unreachable", Action.RETRY,
          "Check the host answers SSH on its deployed address; re-provision if it does not."),
    Cause("health_gpu_errors", "GPU errors (Xid, ECC, row remapping)", Action.RMA,
          "Open a vendor case for the GPU named in the evidence."),
    Cause("health_links", "NVLink or InfiniBand link problem", Action.RESEAT,
          "Reseat the cable or module of the link named in the evidence."),
    Cause("health_software", "Host software or configuration check failed", Action.REPROVISION,
          "Re-provision the host; the evidence names the check (driver, governor, disk space)."),
    Cause("health_load", "Load checks or the smoke test failed", Action.RETRY,
          "Rerun validate for the host; if the figure stays low, bisect the job's hosts."),
    Cause("health_undecided", "Health checks could not decide", Action.RETRY,
          "Find why the check could not run (see the evidence); the host is not fit until it can."),
    Cause("training_hang", "A training rank stopped where the others did not (hang)", Action.RETRY,
          "Leave the host out of the restart (racksmith restart-plan), then rerun validate on it;"
          " the evidence quotes where its rank stopped."),
    Cause("site_config", "No hardware expectation for the server's model", Action.RETRY,
          "Add the model to racksmith_expected_hardware (GPU count and model), then rerun."),
    Cause("unclassified", "No rule recognised the failure", Action.INVESTIGATE,
          "Read the evidence; add a triage rule once the cause is known."),
)

CAUSES: dict[str, Cause] = {c.name: c for c in _TABLE}


def cause(name: str) -> Cause:
    """The cause called ``name``; an unknown name is a programming error, not a fallback."""
    return CAUSES[name]
