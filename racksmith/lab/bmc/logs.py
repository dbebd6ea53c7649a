"""The emulated BMC's own log services: the capture's, a stand-in where a capture has none, and
the ``bmc_sel_psu`` fault's entry.

Why: discovery's extra ``bmc_health`` (racksmith.redfish.bmc_health) reads every log service
the manager links and calls a BMC whose logs it cannot read UNKNOWN, never healthy. The
Supermicro and DGX captures link ``Managers/*/LogServices`` but hold no such documents (their
capture stopped there), so served unchanged those BMCs answer 404 and the lab's healthy servers
of those models could never pass. Where the capture has no log service collection this layer
serves one log service with no entries, marked LAB STAND-IN in its ``Description``: written
from the DMTF LogService/LogEntryCollection schemas, not recorded. The iDRAC captures keep their
real SEL and Lifecycle log unchanged.

The fault ``bmc_sel_psu`` adds one Critical entry: a power supply whose input was lost, in the
Lifecycle log of an iDRAC (shaped like the capture's ``Lclog/Entries/83432``; ``PSU0003`` and
its text are from Dell's Event and Error Message Reference, not from a capture) or in the
stand-in log elsewhere. racksmith must quarantine that server with the triage cause
``psu_fault``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from racksmith.lab.bmc.tree import Variant

STAND_IN = (
    "LAB STAND-IN: the capture holds no log service; an empty one, written from the DMTF "
    "LogService schema, not recorded"
)
MANAGERS = "/redfish/v1/Managers"
PSU_ENTRY_ID = "90001"
PSU_MESSAGE_ID = "IDRAC.2.7.PSU0003"
PSU_MESSAGE = "The power input for power supply 2 is lost."


class LabLogs:
    """Log services of one emulated BMC (documents only: the logs never change while it runs)."""

    def __init__(self, variant: Variant, *, psu_fault: bool, created: datetime) -> None:
        self.variant = variant
        self.services = self._services(variant.layout.manager)
        #: every manager's log service collection the capture lacks (a DGX has two managers)
        self.stand_ins = set()
        managers = variant.document(MANAGERS) or {}
        for member in managers.get("Members") or []:
            uri = self._services(str(member.get("@odata.id")))
            if uri and variant.document(uri) is None:
                self.stand_ins.add(uri)
        self.entries: str | None = None
        if self.services:
            captured = f"{self.services}/Lclog"
            log = captured if variant.document(captured) is not None else f"{self.services}/Log"
            self.entries = f"{log}/Entries"
        self.entry: dict[str, Any] | None = None
        if psu_fault and self.entries:
            self.entry = {
                "@odata.id": f"{self.entries}/{PSU_ENTRY_ID}",
                "@odata.type": "#LogEntry.v1_9_0.LogEntry",
                "Created": created.isoformat(timespec="seconds"),
                "Description": f"Log Entry {PSU_ENTRY_ID} (LAB FAULT bmc_sel_psu)",
                "EntryType": "Oem",
                "Id": PSU_ENTRY_ID,
                "Links": {},
                "Message": PSU_MESSAGE,
                "MessageId": PSU_MESSAGE_ID,
                "Name": f"Log Entry {PSU_ENTRY_ID}",
                "Severity": "Critical",
            }

    def resource(self, path: str) -> dict[str, Any] | None:
        """This layer's document at ``path``, or None when the capture serves it as is."""
        for services in self.stand_ins:
            doc = self._stand_in(services, path)
            if doc is not None:
                return doc
        if self.entry is not None and path == self.entries:
            doc = self.variant.document(path) or self._collection(path, [])
            doc["Members"] = [json.loads(json.dumps(self.entry)), *(doc.get("Members") or [])]
            doc["Members@odata.count"] = len(doc["Members"])
            return doc
        if self.entry is not None and path == self.entry["@odata.id"]:
            return json.loads(json.dumps(self.entry))
        return None

    def _services(self, manager: str) -> str | None:
        link = (self.variant.document(manager) or {}).get("LogServices")
        return str(link.get("@odata.id")) if isinstance(link, dict) else None

    def _stand_in(self, services: str, path: str) -> dict[str, Any] | None:
        log = f"{services}/Log"
        if path == services:
            doc = self._collection(path, [{"@odata.id": log}])
            doc["@odata.type"] = "#LogServiceCollection.LogServiceCollection"
            return doc
        if path == log:
            return {
                "@odata.id": log,
                "@odata.type": "#LogService.v1_1_3.LogService",
                "Id": "Log",
                "Name": "Event Log",
                "Description": STAND_IN,
                "LogEntryType": "Event",
                "ServiceEnabled": True,
                "Status": {"State": "Enabled", "Health": "OK"},
                "Entries": {"@odata.id": f"{log}/Entries"},
            }
        if path == f"{log}/Entries" and (self.entry is None or path != self.entries):
            return self._collection(path, [])
        return None

    @staticmethod
    def _collection(path: str, members: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "@odata.id": path,
            "@odata.type": "#LogEntryCollection.LogEntryCollection",
            "Name": "Log Entries",
            "Description": STAND_IN,
            "Members": members,
            "Members@odata.count": len(members),
        }
