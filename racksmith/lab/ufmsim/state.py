"""What the UFM simulator knows: ports (from a topology), unhealthy marks, jobs, events."""

from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass, field

from racksmith.fabric.model import SWITCH, Topology, port_label

#: UFM's words for an up port (``"Link Up"``, with a space, in a recorded answer)
LINK_UP = "Link Up"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class UfmState:
    username: str
    password: str
    ports: dict[str, dict] = field(default_factory=dict)
    unhealthy: dict[str, str] = field(default_factory=dict)  # port name -> action
    events: list[dict] = field(default_factory=list)
    jobs: dict[int, dict] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_topology(cls, topo: Topology, username: str, password: str) -> UfmState:
        state = cls(username, password)
        for link in topo.links:
            for mine, theirs in ((link.a, link.b), (link.b, link.a)):
                node, other = topo.nodes[mine.guid], topo.nodes[theirs.guid]
                name = f"{node.guid}_{mine.port}"
                is_switch = node.kind == SWITCH
                kind = "Switch" if is_switch else "Computer"
                dname = port_label(mine.port) if is_switch else f"HCA-1/{mine.port}"
                state.ports[name] = {  # the fields of a recorded UFM answer (fixtures README)
                    "name": name,
                    "guid": node.guid,
                    "systemID": node.guid,
                    "system_name": node.name,
                    "node_description": node.description,
                    "description": f"{kind} IB Port",
                    "number": mine.port,
                    "external_number": mine.port,
                    "dname": dname,
                    "path": f"default / {kind}: {node.name} / NA / {dname}",
                    "lid": node.lid,
                    "logical_state": "Active",
                    "physical_state": LINK_UP,
                    "peer": f"{other.guid}_{theirs.port}",
                    "peer_guid": other.guid,
                    "peer_node_guid": other.guid,
                    "peer_lid": other.lid,
                    "peer_node_name": other.name,
                    "peer_node_description": other.description,
                    "active_speed": link.speed or "NDR",
                    "active_width": f"{link.width or 4}x",
                    "severity": "Info",
                    "capabilities": ["healthy_operations", "reset", "disable"],
                }
        return state

    # --- API handlers (called under the lock) ----------------------------------------------

    def list_ports(self) -> list[dict]:
        return [dict(p) for _, p in sorted(self.ports.items())]

    def list_unhealthy(self) -> list[dict]:
        out = []
        for name, action in sorted(self.unhealthy.items()):
            port = self.ports[name]
            peer = self.ports.get(port["peer"], {})
            out.append(
                {
                    "UnhealthyGUID": port["guid"],
                    "UnhealthyPortNumber": port["number"],
                    "UnhealthyNode": port["system_name"],
                    "PeerGUID": peer.get("guid"),
                    "PeerPortNumber": peer.get("number"),
                    "PeerNode": peer.get("system_name"),
                    "Condition": ["MANUAL"],
                    "State": "Warning",
                    "Action": action,
                }
            )
        return out

    def set_unhealthy(self, body: dict) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("ports"), list):
            raise ApiError(400, "ports must be a list")
        policy = body.get("ports_policy")
        if policy not in ("UNHEALTHY", "HEALTHY"):
            raise ApiError(400, "ports_policy must be UNHEALTHY or HEALTHY")
        unknown = [p for p in body["ports"] if p not in self.ports]
        if unknown:
            raise ApiError(400, f"Unknown ports: {', '.join(map(str, unknown))}")
        for name in body["ports"]:
            port = self.ports[name]
            if policy == "UNHEALTHY":
                action = body.get("action", "isolate")
                if action not in ("isolate", "no_discover"):
                    raise ApiError(400, f"unknown action {action}")
                self.unhealthy[name] = action
                port["logical_state"] = "Down"
                port["severity"] = "Warning"
            else:
                self.unhealthy.pop(name, None)
                if port["physical_state"] == LINK_UP:
                    port["logical_state"] = "Active"
                port["severity"] = "Info"

    def action(self, body: dict) -> int:
        try:
            action, port_id = body["action"], body["params"]["port_id"]
            systems = body["object_ids"]
        except (KeyError, TypeError):
            raise ApiError(400, "action, params.port_id and object_ids are required") from None
        port = self.ports.get(port_id)
        if port is None or port["guid"] not in systems:
            raise ApiError(400, f"port {port_id} is not a port of {systems}")
        if action == "disable":
            port["physical_state"], port["logical_state"] = "Disabled", "Down"
        elif action == "enable":
            port["physical_state"] = LINK_UP
            port["logical_state"] = "Down" if port_id in self.unhealthy else "Active"
        elif action != "reset":
            raise ApiError(400, f"unsupported action {action}")
        job = len(self.jobs) + 1
        self.jobs[job] = {
            "ID": str(job),
            "Operation": action,
            "Status": "Completed",
            "Progress": 100,
        }
        return job

    def add_event(
        self, code: int, port: str | None, message: str, severity: str = "Warning"
    ) -> None:
        """Test helper: append to the event feed (``port`` is a port name)."""
        p = self.ports.get(port or "")
        path = f"default / Switch: {p['system_name']} / {p['dname']}" if p else "default"
        self.events.append(
            {
                "id": len(self.events) + 1,
                "event_type": code,
                "severity": severity,
                "timestamp": datetime.datetime(2026, 11, 20, 0, 0, 0)
                .__add__(datetime.timedelta(seconds=len(self.events) * 10))
                .strftime("%Y-%m-%d %H:%M:%S"),
                "type": "IBPort" if p else "Site",
                "object_path": path,
                "object_name": p["guid"] if p else "",
                "description": message,
                "category": "Hardware",
            }
        )
