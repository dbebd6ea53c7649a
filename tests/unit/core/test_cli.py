"""The racksmith command wires every built area and fails usefully on bad usage."""

from __future__ import annotations

import pytest

from racksmith import cli


def test_help_lists_lab_area(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "lab" in capsys.readouterr().out


def test_missing_area_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    assert "AREA" in capsys.readouterr().err
