"""The top-level ``racksmith`` command: lazy areas, --version, usage errors exit 2, and the
lab's dependencies kept out of production commands."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from racksmith import __version__, cli
from racksmith.errors import UsageError


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"racksmith {__version__}"


def test_help_lists_every_area_with_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name, _, _ in cli._AREAS:
        assert name in out
    assert "examples:" in out


def test_unknown_area_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_usage_error_from_a_command_exits_2_with_one_line(monkeypatch, capsys):
    def boom(args):
        raise UsageError("--hosts hosts.txt line 3: '10.0.0.999' is not an address")

    monkeypatch.setattr(cli, "_AREAS", (("x", "racksmith.errors", "test"),))
    import racksmith.errors as errors_module

    def configure(parser):
        parser.set_defaults(func=boom)

    monkeypatch.setattr(errors_module, "configure", configure, raising=False)
    assert cli.main(["x"]) == 2
    err = capsys.readouterr().err
    assert err == "racksmith: error: --hosts hosts.txt line 3: '10.0.0.999' is not an address\n"


_WITHOUT_LAB_EXTRA = textwrap.dedent(
    """
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"sushy_tools", "cryptography"}:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    from racksmith import cli
    code = cli.main(sys.argv[1:])
    assert "racksmith.lab" not in sys.modules or sys.argv[1] == "lab", sorted(sys.modules)
    sys.exit(code)
    """
)


def _without_lab_extra(*argv):
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_LAB_EXTRA, *argv],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_lab_without_its_extra_says_what_to_install_and_exits_2():
    done = _without_lab_extra("lab", "up")
    assert done.returncode == 2, done.stderr
    assert "pip install 'racksmith[lab]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_production_commands_do_not_import_the_lab():
    done = _without_lab_extra("maas", "--help")
    assert done.returncode == 0, done.stderr
    assert "machines" in done.stdout
