"""The second 2 x H200 session's captures (tests/fixtures/h200-x2-topology, h200-x2-run2):
how the GPUs are joined, the busy-GPU faults the stress rules had to find, and the --json
output taken on the real host while torchrun ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racksmith.gpu import rules, topology
from racksmith.gpu.sku import lookup
from racksmith.health.outcome import Severity
from racksmith.health.parsers import ParseError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TOPO = FIXTURES / "h200-x2-topology"
RUN2 = FIXTURES / "h200-x2-run2"
H200 = lookup("NVIDIA H200")
PEER = {0: "00000000:00:07.0", 1: "00000000:00:06.0"}


def text(path: Path) -> str:
    return path.read_text()


def real_pci():
    return topology.parse_pci_functions(text(TOPO / "pci-all-sysfs.txt"))


def test_topology_matrix_of_all_three_captures():
    for capture in ("h200-x2-topology", "h200-x2", "h200x2"):
        matrix = topology.parse_topo_matrix(text(FIXTURES / capture / "topo-m.txt"))
        assert matrix == {
            "GPU0": {"GPU0": "X", "GPU1": "NV18"},
            "GPU1": {"GPU0": "NV18", "GPU1": "X"},
        }
        assert topology.nvlinks_per_pair(matrix) == {(0, 1): 18}
    p2p = topology.parse_topo_matrix(text(TOPO / "topo-p2p-n.txt"))
    assert p2p["GPU0"]["GPU1"] == p2p["GPU1"]["GPU0"] == "OK"


def test_every_link_ends_outside_the_machine():
    remote = topology.parse_remote_links(text(TOPO / "nvlink-R.txt"))
    assert sorted(remote) == [0, 1]
    assert [len(links) for links in remote.values()] == [18, 18]
    assert {
        (link.remote_bus, link.remote_link, link.visible) for g in remote.values() for link in g
    } == {("FFFFFFFF:FF:FF.0", 0, False)}
    by_p = topology.parse_remote_links(text(TOPO / "nvlink-p.txt"))
    assert [(link.link, link.remote_bus, link.remote_link) for link in by_p[1]][-1] == (
        17,
        "FFFFFFFF:FF:FF.0",
        None,
    )


def test_pci_functions_two_gen5_x16_gpus_and_no_nvswitch():
    pci = real_pci()
    assert len(pci) == 8
    gpus = [f for f in pci if f.kind == "gpu"]
    assert [(f.address, f.gen, f.width, f.max_gen, f.max_width) for f in gpus] == [
        ("0000:00:06.0", 5, 16, 5, 16),
        ("0000:00:07.0", 5, 16, 5, 16),
    ]
    assert not [f for f in pci if f.kind == "nvswitch"]


def test_the_test_host_is_a_vm_on_part_of_a_switched_board():
    fabric = topology.classify(
        topology.parse_topo_matrix(text(TOPO / "topo-m.txt")),
        topology.parse_remote_links(text(TOPO / "nvlink-R.txt")),
        real_pci(),
    )
    assert fabric.kind == "outside"
    assert fabric.describe() == (
        "outside: 2 GPUs, NV18 between pairs, link far ends: 36 at hidden; "
        "0 NVSwitch PCI functions visible"
    )
    assert fabric.to_dict()["links_per_gpu"] == {"0": 18, "1": 18}
    # ... and the GPUs' fabric state says a Fabric Manager (the hypervisor host's) set them up
    rows = text(TOPO / "query-fabric.csv").splitlines()[1:]
    assert [r.split(", ")[2:] for r in rows] == [["Completed", "Success"]] * 2
    assert "not found" in text(TOPO / "fabricmanager.txt")
    assert "nvswitch" not in text(TOPO / "dev.txt").lower()


def test_the_load_report_records_the_topology_measured_on_the_host():
    """``gpu run --only nvlink`` on a third GPU pair of the same machine kind."""
    r = report("nvlink-only.json")
    assert r["verdict"] == "FIT"
    assert r["figures"]["nvlink_topology"]["kind"] == "outside"
    assert r["figures"]["nvlink_topology"]["far_ends"] == {"hidden": 36}
    assert r["figures"]["nvlink_p2p_gbs"] == {"0->1": 392.2, "1->0": 391.1}


def test_direct_links_and_visible_switches_classify_as_such():
    """The same capture with the far ends edited the two other ways a host can be built."""
    matrix = topology.parse_topo_matrix(text(TOPO / "topo-m.txt"))
    remote = topology.parse_remote_links(text(TOPO / "nvlink-R.txt"))
    direct = {
        gpu: [topology.RemoteLink(gpu, lk.link, PEER[gpu], lk.link) for lk in links]
        for gpu, links in remote.items()
    }
    assert topology.classify(matrix, direct, real_pci()).kind == "direct"
    switch = "0000:00:08.0 vendor=0x10de device=0x22a3 class=0x068000 driver=nvidia-nvswitch"
    pci = topology.parse_pci_functions(text(TOPO / "pci-all-sysfs.txt") + switch + "\n")
    switched = {
        gpu: [topology.RemoteLink(gpu, lk.link, "00000000:00:08.0", lk.link) for lk in links]
        for gpu, links in remote.items()
    }
    fabric = topology.classify(matrix, switched, pci)
    assert (fabric.kind, fabric.nvswitches_visible, fabric.far_ends) == (
        "nvswitch",
        1,
        {"nvswitch": 36},
    )
    mixed = {0: direct[0], 1: remote[1]}
    assert topology.classify(matrix, mixed, real_pci()).kind == "mixed"
    assert topology.classify(matrix, {0: [], 1: []}, real_pci()).kind == "none"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("", "empty topology matrix"),
        ("\tCPU Affinity\nGPU0\t0-31\n", "line 1: no GPU columns"),
        ("\tGPU0\tGPU1\nGPU0\t X \n", "line 2: GPU0 has 1 cells, expected 2"),
        ("\tGPU0\tGPU1\nnonsense\n", "line 2: expected a device row"),
    ],
)
def test_topology_matrix_bad_input_names_the_line(bad, message):
    with pytest.raises(ParseError, match=message):
        topology.parse_topo_matrix(bad)


def test_remote_links_and_pci_bad_input():
    with pytest.raises(ParseError, match="line 2: unexpected 'Link 0: somewhere'"):
        topology.parse_remote_links("GPU 0: NVIDIA H200 (UUID: GPU-x)\n\t Link 0: somewhere\n")
    with pytest.raises(ParseError, match="line 1: expected key=value, got 'vendor'"):
        topology.parse_pci_functions("0000:00:06.0 vendor\n")
    with pytest.raises(ParseError, match="not a PCI address: 'gpu0'"):
        topology.parse_pci_functions("gpu0 vendor=0x10de\n")


def test_throughput_counters_cover_every_link_and_were_read_before_load():
    """``nvidia-smi nvlink -gt d``: a Tx and an Rx line per link, 18 links per GPU, all zero
    (the topology step ran before any load; the README says so)."""
    lines = [ln.strip() for ln in text(TOPO / "nvlink-gt-d.txt").splitlines() if "Link" in ln]
    assert len(lines) == 2 * 36
    assert {ln.split(": ", 1)[1] for ln in lines} == {"Data Tx: 0 KiB", "Data Rx: 0 KiB"}


# --- the busy-GPU faults (issue 14, item 3) --------------------------------------------------


def report(name: str) -> dict:
    return json.loads(text(RUN2 / name))


@pytest.mark.parametrize("busy", [0, 1])
def test_a_busy_gpu_is_named_and_only_it(busy):
    """Recorded verdicts: a second process kept GPU ``busy`` time-sliced during the stress
    test; the report must fail that GPU, and name no other."""
    r = report(f"fault-{busy}.json")
    assert (r["verdict"], r["exit_code"]) == ("NOT FIT", 1)
    named = {
        f.get("subject")
        for c in r["checks"]
        for f in c["findings"]
        if f["severity"] not in ("OK", "SKIPPED")
    }
    assert named == {f"GPU {busy}"}
    assert r["reasons"][0].startswith(f"FAIL stress [GPU {busy}]: bf16 matmul 3")


@pytest.mark.parametrize("busy", [0, 1])
def test_the_rules_reach_the_same_verdict_from_the_recorded_measurements(busy):
    r = report(f"fault-{busy}.json")
    gpus = [rules.GpuStress(**g) for g in r["figures"]["stress"]["per_gpu"]]
    result = rules.stress(gpus, H200, r["figures"]["stress"]["seconds"])
    assert result.status == Severity.FAIL
    assert {f.subject for f in result.findings} == {f"GPU {busy}"}
    reasons = [f.reason for f in result.findings]
    assert reasons == [f["reason"] for f in r["checks"][0]["findings"]]
    idle = gpus[1 - busy]
    assert idle.tflops > 690 and idle.copy_tbs > 4.2  # the other GPU ran at full rate
    loaded = gpus[busy]
    assert 0.4 < loaded.tflops / idle.tflops < 0.5  # about half: the GPU was time-sliced


def test_the_same_session_without_a_fault_is_fit():
    r = report("json-load.stdout")
    assert (r["verdict"], r["exit_code"]) == ("FIT", 0)
    gpus = [rules.GpuStress(**g) for g in r["figures"]["stress"]["per_gpu"]]
    assert rules.stress(gpus, H200, 15).status == Severity.OK
    for g in gpus:  # the targets: within 5 % of the steady rate, 10 % of the best copy
        assert abs(g.tflops / g.steady_tflops - 1) <= 0.05
        assert g.copy_tbs >= 0.9 * g.ref_copy_tbs


# --- --json on the real host (issue 8, item 7) -----------------------------------------------


@pytest.mark.parametrize("name", ["json-load.stdout", "json-quick.stdout", "fault-0.json"])
def test_recorded_json_stdout_is_one_document(name):
    raw = text(RUN2 / name)
    doc, end = json.JSONDecoder().raw_decode(raw)
    assert raw[end:].strip() == ""
    assert doc["schema"] == "racksmith.health/v1"


def test_child_output_went_to_stderr_and_logs_not_stdout():
    stderr = text(RUN2 / "json-load.stderr")
    assert "[smoke] step   59 loss" in stderr and "[nccl] Setting OMP_NUM_THREADS" in stderr
    smoke_log = text(RUN2 / "json-load-smoke-2gpu.log")
    assert "step   59 loss" in smoke_log and "[smoke]" not in smoke_log
    assert "OMP_NUM_THREADS" in text(RUN2 / "json-load-nccl-torchrun.log")
    assert "loss  " not in text(RUN2 / "json-load.stdout")  # no per-step line
