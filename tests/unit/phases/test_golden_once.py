"""The golden set is judged once, in the play (issue 24): the health role's verdict becomes the
host's entry (filter ``golden_entry``), the set is assembled from entries (``golden_set``), and
the result is what the by-hand path (report files -> ``racksmith.health golden``) gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from racksmith.health import golden
from racksmith.phases import validate
from racksmith.testing.plugins import plugin_filters

REPO = Path(__file__).resolve().parents[3]
RUN = REPO / "tests" / "fixtures" / "h200-x2-run"
FIT = plugin_filters("plugins/filter/fit.py")
PHASES = plugin_filters("plugins/filter/phases.py")


def _read(name):
    return json.loads((RUN / name).read_text())


@pytest.mark.parametrize(
    ("load_file", "required"),
    [("load-report.json", True), ("run1-load-report.json", True), (None, False), (None, True)],
)
def test_in_play_entry_equals_the_entry_read_from_files(load_file, required):
    quick, load = _read("quick.json"), _read(load_file) if load_file else {}
    fitness = FIT["health_fit"](quick, load=load, load_required=required, load_why_not="lab")
    in_play = FIT["golden_entry"](quick, fitness=fitness, host="h1", load=load)
    spec = {"report": str(RUN / "quick.json"), "load_required": required, "load_skip_reason": "lab"}
    if load_file:
        spec["load_report"] = str(RUN / load_file)
    assert in_play == golden.host_entry("h1", spec)


def test_hosts_that_never_reached_the_checks_are_judged_in_the_set():
    hosts = {
        "fit": {"health_golden_entry": FIT["golden_entry"](
            _read("quick.json"),
            fitness=FIT["health_fit"](_read("quick.json"), load=_read("load-report.json")),
            host="fit", load=_read("load-report.json"),
        )},
        "deployfail": {"racksmith_failure_reason": "deploy: curtin failed"},
        "unreached": {"health_golden_entry": {"failure": "unreachable: no route"}},
    }  # fmt: skip
    result = FIT["golden_set"](PHASES["golden_inputs"](hosts), run_id="r1", generated="T")
    assert result["golden"] == ["fit"] and result["not_fit"] == ["deployfail", "unreached"]
    assert result["hosts"]["unreached"]["reasons"] == [
        "failed before validation: unreachable: no route"
    ]
    files = FIT["golden_files"](result)
    assert json.loads(files["golden-set.json"]) == result
    assert "1 of 3 hosts are fit" in files["golden-set.md"]


def test_an_input_that_is_neither_entry_nor_failure_is_refused():
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="h9: neither a judged entry nor a failure"):
        FIT["golden_set"]({"h9": {"report": "/x/quick.json"}})


def test_hca_guids_keep_infiniband_ports_with_a_guid():
    out = (
        "mlx5_0 InfiniBand b83f:d203:00a1:b2c4\n"
        "mlx5_1 Ethernet b83f:d203:00a1:b2c5\n"
        "mlx5_2 InfiniBand -\n\n"
    )
    assert validate.hca_guids(out) == {"mlx5_0": "b83f:d203:00a1:b2c4"}
    with pytest.raises(ValueError, match="HCA probe line 1"):
        validate.hca_guids("mlx5_0 InfiniBand\n")
    argv = PHASES["hca_probe_argv"](None)
    assert argv[:2] == ["/bin/sh", "-c"] and "/sys/class/infiniband/*" in argv[2]
