"""``racksmith lab standin``: the stand-in builder lives in the lab, with clear input errors."""

from __future__ import annotations

from pathlib import Path

from racksmith import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_missing_capture_exits_2_naming_it(tmp_path, capsys):
    code = cli.main(["lab", "standin", "--capture", str(tmp_path / "nope"), "--prefix", "x"])
    assert code == 2
    assert f"--capture {tmp_path / 'nope'}: no such directory" in capsys.readouterr().err


def test_builds_the_replay_tree_with_its_marker(tmp_path, capsys):
    prefix = tmp_path / "standin"
    code = cli.main(
        ["lab", "standin", "--capture", str(FIXTURES / "h200-x2"), "--prefix", str(prefix)]
    )
    assert code == 0
    assert "LAB STAND-IN installed under" in capsys.readouterr().out
    assert (prefix / "bin" / "nvidia-smi").exists() and (prefix / "RACKSMITH_STANDIN").exists()


def test_the_health_agent_no_longer_offers_a_standin():
    from racksmith.health import cli as health_cli

    assert "standin" not in health_cli.build_parser().format_help()
