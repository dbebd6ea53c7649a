"""racksmith.triage.diagnose.hang, probe and collect on recorded real data
(tests/fixtures/diagnose/).

The recording is a real 4-rank gloo job in which rank 2 stopped before a collective; the
probe's real output for it is split per rank into four "hosts" here, which is exactly what
four hosts with one rank each would answer.
"""

from __future__ import annotations

import copy
import json
import pickle
import time
from pathlib import Path

import pytest

from racksmith.triage.diagnose import collect, probe
from racksmith.triage.diagnose.hang import (
    ProbeError,
    analyse,
    parse_flight_recorder,
    parse_probe,
    parse_py_spy,
    summary,
    unanswered,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "diagnose"
GLOO = FIXTURES / "gloo-hang"


def _doc(name: str = "probe-plain.json") -> dict:
    return json.loads((GLOO / name).read_text())


def _per_host(doc: dict) -> dict[str, dict]:
    """One host per rank: gpu-a holds rank 0, gpu-b rank 1, ..."""
    hosts = {}
    for raw in doc["ranks"]:
        one = copy.deepcopy(doc)
        one["ranks"] = [raw]
        hosts[f"gpu-{'abcd'[int(raw['env']['RANK'])]}"] = one
    return hosts


def _probes(docs: dict[str, dict]):
    return [parse_probe(host, d) for host, d in docs.items()]


def test_the_recording_is_what_the_tests_assume():
    doc = _doc()
    assert [r["env"]["RANK"] for r in doc["ranks"]] == ["0", "1", "2", "3"]
    assert all(r["env"]["WORLD_SIZE"] == "4" for r in doc["ranks"])


def test_one_host_four_ranks_names_rank_2_only_by_stack_and_by_flight_recorder():
    report = analyse([parse_probe("trainer", _doc())])
    assert report.decided
    assert [(s.rank.host, s.rank.rank) for s in report.suspects] == [("trainer", 2)]
    (suspect,) = report.suspects
    assert "wait_for_batch (hang_job.py:" in suspect.reasons[0]
    assert "all_reduce (torch/distributed/distributed_c10d.py:" in suspect.reasons[0]
    assert suspect.reasons[1].startswith("flight recorder: pg 0: enqueued 6, completed 6")
    assert [len(g.ranks) for g in report.stack_groups] == [3, 1]
    assert [[r.rank for r in g.ranks] for g in report.collective_groups] == [[0, 1, 3], [2]]
    assert report.named_hosts == ("trainer",)
    assert report.missing_ranks == ()


def test_four_hosts_one_rank_each_names_the_host_of_rank_2_and_nothing_else():
    report = analyse(_probes(_per_host(_doc())))
    assert report.decided
    assert report.named_hosts == ("gpu-c",)
    assert [s.rank.label for s in report.suspects] == [f"rank 2 (gpu-c, pid {_pid(2)})"]
    doc = report.to_dict()
    assert doc["suspect_hosts"] == ["gpu-c"] and doc["unanswered_hosts"] == []
    assert [n["host"] for n in doc["named_hosts"]] == ["gpu-c"]
    assert json.loads(json.dumps(doc)) == doc
    text = summary(report)
    assert "rank 2 (gpu-c" in text and "named: gpu-c" in text
    assert "gpu-a" not in text.split("stack groups:")[0]


def _pid(rank: int) -> int:
    return next(r["pid"] for r in _doc()["ranks"] if r["env"]["RANK"] == str(rank))


def test_the_native_recording_reads_the_same_and_keeps_native_frames_out_of_the_signature():
    report = analyse(_probes(_per_host(_doc("probe-native.json"))))
    assert report.named_hosts == ("gpu-c",)
    (suspect,) = report.suspects
    assert suspect.rank.native
    assert any(f.native for f in suspect.rank.frames)
    assert all(".py:" in text for text in suspect.rank.signature())
    waiting = [r for r in report.ranks if r.rank != 2]
    assert all(r.notes and "native dump failed" in r.notes[0] for r in waiting)


def test_a_silent_host_is_named_with_its_reason_and_its_rank_is_missing():
    docs = _per_host(_doc())
    probes = [
        *_probes({k: v for k, v in docs.items() if k != "gpu-d"}),
        unanswered("gpu-d", "no answer within 20.0 s"),
    ]
    report = analyse(probes)
    assert not report.decided
    assert report.missing_ranks == (3,)
    assert report.named_hosts == ("gpu-c", "gpu-d")
    assert report.to_dict()["unanswered_hosts"] == [
        {"host": "gpu-d", "error": "no answer within 20.0 s"}
    ]
    assert "host gpu-d did not answer: no answer within 20.0 s" in summary(report)


def test_a_rank_whose_stacks_could_not_be_read_is_named_never_dropped():
    docs = _per_host(_doc())
    docs["gpu-b"]["ranks"][0]["stacks"] = {"error": "py-spy dump failed: Permission denied"}
    report = analyse(_probes(docs))
    assert not report.decided
    assert [r.rank for r in report.unread] == [1]
    assert report.named_hosts == ("gpu-b", "gpu-c")


def test_an_even_split_names_no_suspect_by_stack_and_says_why():
    doc = _doc()
    docs = _per_host(doc)
    docs["gpu-a"]["ranks"][0]["stacks"] = copy.deepcopy(docs["gpu-c"]["ranks"][0]["stacks"])
    for d in docs.values():
        d["ranks"][0]["flight_recorder"] = {}
    report = analyse(_probes(docs))
    assert report.suspects == ()
    assert not report.decided
    assert "no stack holds a majority of the 4 ranks (groups of 2, 2)" in report.undecided


def test_no_training_process_is_undecided_not_healthy():
    doc = _doc()
    doc["ranks"] = []
    report = analyse([parse_probe("idle", doc)])
    assert not report.decided
    assert any("no training process" in why for why in report.undecided)


def test_a_document_that_is_not_the_probes_is_a_host_that_did_not_answer():
    assert not parse_probe("h", {"hello": 1}).answered
    assert parse_probe("h", {"schema": probe.SCHEMA, "error": "probe failed: X"}).error == (
        "probe failed: X"
    )


def test_flight_recorder_dumps_of_a_waiting_and_the_hung_rank():
    waiting = parse_flight_recorder(json.loads((GLOO / "fr_rank_0.json").read_text()))
    hung = parse_flight_recorder(json.loads((GLOO / "fr_rank_2.json").read_text()))
    assert [(c.group, c.last_enqueued, c.last_completed, c.last_op) for c in waiting] == [
        ("0", 7, 6, "gloo:all_reduce")
    ]
    assert [(c.group, c.last_enqueued, c.last_completed) for c in hung] == [("0", 6, 6)]
    entries_only = json.loads((GLOO / "fr_rank_0.json").read_text())
    del entries_only["pg_status"]
    (derived,) = parse_flight_recorder(entries_only)
    assert (derived.last_enqueued, derived.last_op_state) == (7, "scheduled")
    with pytest.raises(ProbeError):
        parse_flight_recorder({"version": "2.10", "entries": []})


def test_the_probe_reads_a_plain_pickle_dump_and_refuses_one_that_names_a_class(tmp_path):
    dump = json.loads((GLOO / "fr_rank_2.json").read_text())
    (tmp_path / "trace_3").write_bytes(pickle.dumps(dump))
    got = probe.flight_recorder(
        {"RANK": "3", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(tmp_path / "trace_")}
    )
    assert got["dump"]["pg_status"] == dump["pg_status"]
    (tmp_path / "trace_4").write_bytes(pickle.dumps(Path("/etc/passwd")))
    bad = probe.flight_recorder({"RANK": "4", "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "trace_")})
    assert "refused: the dump names" in bad["error"]
    assert (
        probe.flight_recorder({"RANK": "5", "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "trace_")})
        == {}
    )


def test_py_spy_main_thread_is_chosen_over_other_threads():
    threads = _doc()["ranks"][0]["stacks"]["threads"]
    assert threads[0]["thread_name"] != "MainThread"
    frames, error = parse_py_spy(threads)
    assert not error and frames[0].name == "all_reduce"
    assert parse_py_spy([])[1] == "py-spy reported no threads"


def test_kernel_lines_of_named_hosts_only():
    docs = _per_host(_doc())
    for host, d in docs.items():
        d["kernel"] = {
            "source": "dmesg",
            "lines": [
                "2026-12-02T05:00:00 eth0: link up",
                f"2026-12-02T05:01:00 NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off"
                f" the bus ({host})",
            ],
        }
    report = analyse(_probes(docs))
    assert list(report.kernel) == ["gpu-c"]
    assert report.kernel["gpu-c"] == (docs["gpu-c"]["kernel"]["lines"][1],)


def test_inventory_hosts_and_connection_variables_from_ansible_inventory():
    full = collect.targets_from_inventory(
        json.loads((FIXTURES / "ansible-inventory-list.json").read_text())
    )
    assert [t.name for t in full] == ["gpu01", "gpu02", "ctl"]
    gpu01, gpu02, ctl = full
    assert (gpu01.address, gpu01.user, gpu01.key) == ("10.0.0.11", "ubuntu", "/keys/id_ed25519")
    assert gpu01.ssh_args == (
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
    )
    assert (gpu02.port, gpu02.user) == (2222, "root")
    assert ctl.local
    limited = collect.targets_from_inventory(
        json.loads((FIXTURES / "ansible-inventory-list-limit-job42.json").read_text())
    )
    assert [t.name for t in limited] == ["gpu01", "gpu02"]

    argv = gpu01.argv(["python3", "-", "{}"], connect_timeout=5)
    assert argv[:5] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    assert argv[-3:] == ["ubuntu@10.0.0.11", "--", "sudo -n python3 - '{}'"]
    root = gpu02.argv(["true"], connect_timeout=5)
    assert root[-3:] == ["root@10.0.0.12", "--", "true"] and "-p" in root


def test_resolve_fails_closed_on_a_bad_inventory_and_an_empty_limit(tmp_path):
    with pytest.raises(collect.InventoryError, match="selects no host"):
        collect.resolve(str(FIXTURES / "inventory.yml"), "nosuchhost")
    assert [t.name for t in collect.resolve(str(FIXTURES / "inventory.yml"), "job42")] == [
        "gpu01",
        "gpu02",
    ]


def test_health_lines_from_the_agents_real_report():
    report = json.loads((FIXTURES.parent / "h200-x1-run" / "held-quick.json").read_text())
    lines = collect.health_lines(report)
    assert lines[0] == "verdict NOT FIT"
    assert lines[1].startswith("FAIL gpu_processes [GPU 0 (00000000:00:06.0)]: process 988")
    assert collect.health_lines({"no": "report"})[0].startswith("UNKNOWN health:")


def test_collect_keeps_to_the_deadline_and_names_a_host_that_does_not_answer():
    # 192.0.2.0/24 is TEST-NET-1: never routed, so SSH either hangs in connect or fails at once
    silent = collect.Target(name="blackhole", address="192.0.2.1", user="root")
    start = time.monotonic()
    (got,) = collect.collect([silent], collect.Settings(deadline=3.0))
    assert time.monotonic() - start < 6.0
    assert not got.answered and got.error


NCCL = FIXTURES / "nccl-h200"


def test_a_real_nccl_dump_is_read_as_a_plain_pickle_by_the_probe(tmp_path):
    raw = (NCCL / "nccl_trace_rank_0").read_bytes()
    assert raw[:1] == b"\x80"  # a pickle, not JSON
    (tmp_path / "nccl_trace_rank_0").write_bytes(raw)
    got = probe.flight_recorder(
        {"RANK": "0", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(tmp_path / "nccl_trace_rank_")}
    )
    assert "error" not in got, got
    (pg,) = parse_flight_recorder(got["dump"])
    assert (pg.group, pg.last_enqueued, pg.last_completed) == ("0", 5, -1)
    assert (pg.last_op, pg.last_op_state) == ("nccl:all_reduce", "completed")


def test_a_real_probe_on_an_h200_names_the_rank_s_gpu_and_reads_native_frames():
    host = parse_probe("h200", json.loads((NCCL / "probe.json").read_text()))
    (rank,) = host.ranks
    assert (rank.rank, rank.local_rank, rank.gpu, rank.native) == (0, 0, "0", True)
    assert rank.signature()[0].startswith("wait_for_batch (")
    assert [c.last_enqueued for c in rank.collectives] == [5]
    report = analyse([host])
    assert report.decided and report.suspects == () and report.named_hosts == ()


def test_the_hung_rank_s_host_is_filed_as_a_training_hang():
    """The ticket names a cause an operator acts on, not 'unclassified': the recorded rank 2
    (host gpu-c) is filed as training_hang, with its rank's reasons and stack as evidence."""
    from racksmith.triage.classify import classify
    from racksmith.triage.diagnose.hang_cli import evidence

    report = analyse(_probes(_per_host(_doc())))
    (record,) = evidence(report, {})
    diagnosis = classify(record)
    assert (diagnosis.host, diagnosis.cause.name) == ("gpu-c", "training_hang")
    assert any(line.source == "hang" and "rank 2" in line.text for line in diagnosis.evidence)
