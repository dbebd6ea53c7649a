"""Progress lines from a batch to the screen: the file tail (partial lines, a replaced file,
garbage named with its line number, earlier runs skipped) and what is printed when."""

from __future__ import annotations

import json

from racksmith.maas.fleet import Progress
from racksmith.maas.progress import ProgressPrinter, ProgressTail, ProgressWriter, default_path


def snap(counts, failures=(), elapsed=0.0, final=False, phase="deploy"):
    return Progress(phase, counts, list(failures), elapsed, sum(counts.values()), final)


def test_writer_and_tail_round_trip_partial_lines_and_garbage(tmp_path):
    path = tmp_path / "run" / "progress.jsonl"
    (tmp_path / "run").mkdir()
    path.write_text(json.dumps({"line": "an earlier run"}) + "\n")
    tail = ProgressTail(path)  # starts after what is already there
    write = ProgressWriter(path)
    write(snap({"deploying": 3}))
    with path.open("a") as fh:
        fh.write('{"line": "half')  # a line still being written
    got = tail.poll()
    assert [r["line"] for r in got] == ["deploy: 3 deploying, 0 failed, 0:00:00"]
    with path.open("a") as fh:
        fh.write(' done"}\nnot json\n')
    got = tail.poll()
    assert got[0]["line"] == "half done"
    assert got[1] == {"error": f"{path}:4: not a progress record"}
    path.write_text("")  # replaced by a new run
    write(snap({"deployed": 3}, final=True))
    assert tail.poll()[0]["final"] is True
    assert default_path("/x") is not None and str(default_path("/x")) == "/x/progress.jsonl"


def test_writer_that_cannot_write_keeps_the_error_and_never_raises(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    write = ProgressWriter(blocker / "progress.jsonl")  # parent is a file
    write(snap({"deploying": 1}))
    assert write.error and "progress not written" in write.error
    ProgressWriter(None)(snap({"deploying": 1}))  # outside a run: nothing, no error


def test_printer_failures_and_ends_at_once_counts_at_the_interval():
    p = ProgressPrinter(interval=30)
    rec = lambda *a, **k: snap(*a, **k).as_dict()  # noqa: E731
    assert p.feed([rec({"deploying": 4}, elapsed=1)], now=0) == [
        "deploy: 4 deploying, 0 failed, 0:00:01"
    ]
    assert p.feed([rec({"deploying": 4}, elapsed=12)], now=10) == []  # within the interval
    out = p.feed([rec({"deploying": 3, "failed": 1}, [("gpu03", "grub-install failed")])], now=20)
    assert out == ["deploy: FAILED gpu03: grub-install failed"]
    assert p.feed([], now=31) == ["deploy: 3 deploying, 1 failed, 0:00:00"]  # the latest
    assert p.feed([], now=70) == []  # nothing new: not repeated
    final = rec({"deployed": 3, "failed": 1}, elapsed=600, final=True)
    assert p.feed([final], now=71) == ["deploy: 3 deployed, 1 failed, 0:10:00"]
    # the next batch of the same phase shows its first line at once
    assert p.feed([rec({"starting": 2})], now=72) == ["deploy: 2 starting, 0 failed, 0:00:00"]
    assert p.feed([{"error": "f:3: not a progress record"}], now=73) == [
        "progress: f:3: not a progress record"
    ]
