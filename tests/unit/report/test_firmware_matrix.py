"""The rack report's firmware matrix (issue 21): every firmware inventory member of the real DGX
H100 and Supermicro HGX captures appears, as component x version x host count."""

from __future__ import annotations

import json

from racksmith.lab.bmc.tree import DATA_DIR
from racksmith.redfish import parse
from racksmith.report import RunReport
from racksmith.report.html import render_html


def _inventory(capture: str) -> list[dict]:
    """The capture's firmware inventory as discovery reports it (host variable
    ``redfish_firmware``), parsed from the files."""
    root = DATA_DIR / capture / "redfish" / "v1"

    def load(uri: str) -> dict:
        rel = uri.removeprefix("/redfish/v1").strip("/")
        return json.loads((root / rel / "index.json").read_text())

    members = load("/redfish/v1/UpdateService/FirmwareInventory")["Members"]
    return [i.public() for i in parse.firmware_inventory(load(m["@odata.id"]) for m in members)]


def test_every_member_of_the_dgx_and_supermicro_inventories_is_in_the_report():
    report = RunReport(run_id="r1", run_dir="/tmp/r1", started="2026-12-01T00:00:00Z")
    inventories = {
        "dgx1": _inventory("nvidia-dgx-h100"),
        "dgx2": _inventory("nvidia-dgx-h100"),
        "smc1": _inventory("supermicro-hgx-h100"),
    }
    for host, firmware in inventories.items():
        report.record(host, "discover", "ok")
        report.annotate(host, {"redfish_model": "x", "redfish_firmware": firmware})
    data = json.loads(report.to_json())
    rows = {(r["component"], r["version"]): r["hosts"] for r in data["firmware_matrix"]}
    for host, firmware in inventories.items():
        for item in firmware:  # every member: running images and staged/backup copies
            name = (
                item["component"]
                if item["role"] == "active"
                else (f"{item['component']} [{item['role']}: {item['id']}]")
            )
            assert (name, item["version"] or "?") in rows, (host, item["id"])
    assert rows[("HGX_FW_GPU_SXM_1", "96.00.89.00.01")] == 2  # both DGX
    assert rows[("HGX_FW_GPU_SXM_1", "96.00.61.00.01")] == 1  # the Supermicro
    assert rows[("BMC [staged: Staging_BMC]", "11.01.01")] == 1
    assert rows[("BIOS [backup: Golden_BIOS]", "BIOS Date: 05/04/2023 Ver 1.3")] == 1
    html = render_html(report)
    assert 'id="firmware-matrix"' in html and "HGX_FW_NVSwitch_0" in html
    again = RunReport.from_dict(data)  # report.json read back: the matrix is rebuilt
    assert again.firmware_matrix() == data["firmware_matrix"]


def test_no_inventory_no_matrix():
    report = RunReport(run_id="r1", run_dir="/tmp/r1", started="2026-12-01T00:00:00Z")
    report.record("h1", "discover", "ok")
    assert report.to_dict()["firmware_matrix"] == []
    assert 'id="firmware-matrix"' not in render_html(report)
