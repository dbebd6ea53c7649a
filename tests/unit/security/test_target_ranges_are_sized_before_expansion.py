"""Issue 9, case 3: sizes are checked before anything is expanded.

Before: ``--bmc 10.0.0.0/16:1-65535`` grew until memory ran out and ended in a traceback;
``/24:1-65535`` took 1.7 GB before it was refused.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from racksmith import cli
from racksmith.redfish import targets


@pytest.mark.parametrize(
    "spec", ["10.0.0.0/16:1-65535", "10.0.0.0/24:1-65535", "10.0.0.0/8", "10.0.0.1-10.9.0.0"]
)
def test_huge_specs_are_refused_before_expansion(spec):
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(targets.TargetError, match=str(targets.MAX_TARGETS)):
            targets.expand([spec])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 0.5
    assert peak < 1 << 20  # under a megabyte, not gigabytes


def test_many_specs_together_are_sized_first():
    specs = [f"10.{i}.0.0/17" for i in range(3)]  # each fits, together they do not
    with pytest.raises(targets.TargetError, match="in all"):
        targets.expand(specs)


def test_cli_exits_2_with_the_reason(capsys):
    assert cli.main(["redfish", "discover", "--bmc", "10.0.0.0/16:1-65535"]) == 2
    err = capsys.readouterr().err
    assert "10.0.0.0/16:1-65535" in err and "Traceback" not in err
