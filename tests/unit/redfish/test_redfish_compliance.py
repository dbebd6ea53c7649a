"""The compliance check end to end on the lab's emulated BMCs (real sockets, TLS, sushy-static
serving the captures, the behaviour layer on top): discovery with the firmware and BIOS extras,
the baseline file, the verdicts, the exit status and the pure-JSON output.

Versions in the baseline are the captured ones (dgx-h100: VBIOS 96.00.89.00.01; the Dell
models: BIOS 1.8.2), so what drifts is chosen by the baseline, not by editing the BMCs.
"""

from __future__ import annotations

import io
import json

from racksmith.redfish import baseline as bl
from racksmith.redfish import compliance
from racksmith.redfish.discover import DiscoveryOptions

BASELINE = """\
host_types:
  - name: dgx-h100
    match: {vendor: nvidia-dgx, model: DGXH100}
    firmware:
      - {component: "HGX_FW_GPU_SXM_*", minimum: "96.00.89.00.01", target: "96.00.89.00.01"}
    bios:
      VTdSupport: Enable
  - name: xe9680
    match: {vendor: dell}
    firmware:
      - {component: BIOS.Setup.1-1, minimum: "1.9.0", target: "1.9.0"}
"""


def test_compliance_on_the_lab(rack, server, creds, client_options, tmp_path):
    path = tmp_path / "baseline.yml"
    path.write_text(BASELINE)
    servers = [server(1, model="dgx-h100"), server(2, model="hgx-h200-8gpu")]
    lab = rack(servers)
    out = io.StringIO()
    options = DiscoveryOptions(client=client_options, deadline=20.0)
    status = compliance.run(lab.targets(), creds, options, str(path), as_json=True, out=out)
    report = json.loads(out.getvalue())  # one pure JSON document
    assert status == 1  # a drifted host fails the check
    by_type = {h["host_type"]: h for h in report["hosts"]}
    assert by_type["dgx-h100"]["status"] == bl.COMPLIANT
    dell = by_type["xe9680"]
    assert dell["status"] == bl.DRIFT and dell["quarantined"]
    (finding,) = [f for f in dell["findings"] if f["what"] == "firmware"]
    assert (finding["name"], finding["current"], finding["wanted"]) == (
        "BIOS.Setup.1-1",
        "1.8.2",
        "1.9.0",
    )
    assert (finding["action"], finding["activation"]) == ("upgrade", "reboot")
    assert report["quarantined"] == [dell["host"]] == [servers[1].service_tag]
    assert report["summary"] == {bl.COMPLIANT: 1, bl.DRIFT: 1}
    assert any(r["component"] == "HGX_FW_GPU_SXM_1" for r in report["matrix"])

    text = io.StringIO()
    compliance.run(lab.targets(), creds, options, str(path), out=text)
    assert "QUARANTINED" in text.getvalue() and "BIOS.Setup.1-1" in text.getvalue()
