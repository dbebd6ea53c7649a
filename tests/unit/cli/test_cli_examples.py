"""Issue 27 item 6: one command-line dialect, and examples in every sub-command's help.

The walk goes through every command ``racksmith`` has (every area, every sub-command, lab
included) and holds each to the same rules:

- its ``--help`` ends with ``examples:``, at least one of them for that very command;
- every example parses against the parser of the command it names (the options exist, take
  the values given, the positionals fit), and uses no deprecated spelling;
- the examples that need nothing but a scratch directory run (``lab fabric`` writes a fabric,
  then ``fabric cabling``/``burnin``/``ufm`` read it; ``lab rack`` writes a rack): their exit
  code is 0 or 1 (1: findings), never a usage error or a traceback, and with ``--json`` their
  stdout is JSON;
- the old spellings (``--env-file``, ``--credentials``, ``--apply``, ``--set``, ``--limit`` in
  ``maas show``, ``--no-validate-certs``, MAAS and bisect ``--timeout``, ``run --interval``)
  still parse to the same setting,
  print a one-line notice on stderr and nothing on stdout, and are hidden from ``--help``.
"""

from __future__ import annotations

import argparse
import io
import json
import shlex
from contextlib import redirect_stderr, redirect_stdout

import pytest

from racksmith import cli
from racksmith.optionspec import deprecated_flags

#: Commands without ``--json``: they serve, start, stop or write, and report nothing to parse.
NO_REPORT = {
    ("lab", "up"): "starts the rack; `lab status --json` reports it",
    ("lab", "down"): "stops the rack",
    ("lab", "host", "up"): "starts a host",
    ("lab", "host", "down"): "stops hosts",
    ("lab", "host", "list"): "names only; `lab status --json` reports",
    ("lab", "vm", "down"): "stops VMs",
    ("lab", "bmc"): "a server, runs until stopped",
    ("lab", "maas"): "a server, runs until stopped",
    ("lab", "rack"): "writes a rack file (YAML) or an inventory",
    ("lab", "check-run"): "a lab assertion over a run; its report is `racksmith report --json`",
    ("lab", "standin"): "writes the stand-in tools",
    ("run",): "runs a playbook; its report is `racksmith report RUN_DIR --json`",
}

#: Spellings that must not be offered in any ``--help`` (their one name is on the right).
OLD_SPELLINGS = {
    "--env-file": "--credentials-file",
    "--credentials": "--credentials-file",
    "--no-validate-certs": "--insecure",
    "--apply": "--yes",
    "--set": "--yes",
    "--timeout": "--read-timeout (MAAS) / --deadline",
    "--interval": "--progress-interval",
}

#: Commands whose examples run in a scratch directory (after ``lab fabric ... --out .``).
RUNNABLE = {("lab", "fabric"), ("lab", "rack"), ("fabric", "cabling"), ("fabric", "burnin")}
#: ...and ``fabric ufm`` when it only plans from a file (no UFM, no tickets).
NEEDS_MORE = {"--from-ufm", "--yes", "--restore", "--repaired", "--before", "--ufm-url"}


def _leaves() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command as (its words after ``racksmith``, its parser)."""
    found = []

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            found.append((words, parser))
            return
        for name, sub in subs[0].choices.items():
            walk(sub, (*words, name))

    for area in cli._area_names():
        top = cli.build_parser(area)
        walk(_sub(top, area), (area,))
    return found


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subs.choices[name]


def _examples(parser: argparse.ArgumentParser) -> list[list[str]]:
    """The example command lines of a help epilog, as argv (``# comments`` and pipes cut)."""
    epilog = parser.epilog or ""
    assert "examples:" in epilog, "no examples in --help"
    out = []
    text = epilog.split("examples:", 1)[1].replace("\\\n", " ")  # shell line continuations
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0] != "racksmith":
            continue
        if "|" in words:
            words = words[: words.index("|")]
        out.append(words[1:])
    return out


LEAVES = _leaves()
IDS = [" ".join(words) for words, _ in LEAVES]


def test_the_walk_sees_every_area():
    areas = {words[0] for words, _ in LEAVES}
    assert areas == set(cli._area_names())
    assert len(LEAVES) >= 37, IDS  # 22 production commands and the lab's


@pytest.mark.parametrize(("words", "parser"), LEAVES, ids=IDS)
def test_every_command_has_examples_that_parse(words, parser):
    examples = _examples(parser)
    assert any(tuple(argv[: len(words)]) == words for argv in examples), (
        f"racksmith {' '.join(words)} --help has no example of itself"
    )
    for argv in examples:
        top = cli.build_parser(argv[0])
        stderr = io.StringIO()
        with redirect_stderr(stderr):
            try:
                args = top.parse_args(argv)
            except SystemExit as exc:  # argparse's usage error
                pytest.fail(
                    f"example does not parse: racksmith {shlex.join(argv)}\n{stderr.getvalue()}"
                )
                raise AssertionError from exc
        assert callable(args.func), argv
        assert "deprecated" not in stderr.getvalue(), f"example uses an old spelling: {argv}"


@pytest.mark.parametrize(("words", "parser"), LEAVES, ids=IDS)
def test_one_dialect(words, parser):
    hidden = deprecated_flags(parser)
    offered = {
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
    }
    for old, new in OLD_SPELLINGS.items():
        assert old not in offered, f"racksmith {' '.join(words)} offers {old}; use {new}"
    assert not (hidden & offered)
    if words not in NO_REPORT:
        assert "--json" in offered, f"racksmith {' '.join(words)} reports but has no --json"
    for action in parser._actions:  # the same name means the same kind of value everywhere
        flags = set(action.option_strings)
        if flags & {"--deadline", "--connect-timeout", "--read-timeout", "--progress-interval"}:
            assert action.metavar == "SECONDS" and action.type("2.5") == 2.5, flags
            with pytest.raises(argparse.ArgumentTypeError):
                action.type("0")
        if flags & {"--credentials-file", "--ca-bundle"}:
            assert action.metavar == "FILE", flags
        if "--ca-bundle" in flags:
            assert "--ca-path" in flags, "ca_path is accepted beside ca_bundle"
        if "--insecure" in flags:
            assert action.nargs == 0 and action.default in (True, False), flags
        if "--yes" in flags:
            assert action.nargs == 0 and action.default is False, flags


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _runnable() -> list[list[str]]:
    first, then = [], []
    for words, parser in LEAVES:
        for argv in _examples(parser):
            if tuple(argv[: len(words)]) != words or NEEDS_MORE & set(argv):
                continue
            if words == ("lab", "fabric") and argv[-1] == ".":
                first.append(argv)  # writes ibnetdiscover.txt, plan.csv, ... into the cwd
            elif words in RUNNABLE or (words == ("fabric", "ufm") and argv[2] == "event.log"):
                then.append(argv)
    return first + then


def test_offline_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ran = []
    for argv in _runnable():
        code, out, err = _run(argv)
        shown = f"racksmith {shlex.join(argv)} -> {code}\n{err[-2000:]}"
        assert code in (0, 1) and "Traceback" not in err, shown
        if "--json" in argv:
            text = out.strip()
            try:
                json.loads(text)
            except json.JSONDecodeError:  # JSON lines
                for line in text.splitlines():
                    json.loads(line)
            assert text, shown
        else:
            assert out.strip(), shown
        ran.append(" ".join(argv[:2]))
    assert (tmp_path / "ibnetdiscover.txt").is_file()
    assert {"lab fabric", "lab rack", "fabric cabling", "fabric burnin", "fabric ufm"} <= set(ran)


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["redfish", "discover", "--bmc", "10.0.0.1", "--env-file", "f"], "credentials_file", "f"),
        (
            ["redfish", "discover", "--bmc", "10.0.0.1", "--no-validate-certs"],
            "validate_certs",
            False,
        ),
        (["redfish", "clock", "--bmc", "10.0.0.1", "--set"], "set", True),
        (["maas", "machines", "--credentials", "f"], "credentials_file", "f"),
        (["maas", "machines", "--timeout", "7"], "read_timeout", 7.0),
        (["maas", "show", "gpu01", "--limit", "5"], "events", 5),
        (["fabric", "ufm", "event.log", "--apply"], "apply", True),
        (["fabric", "ufm", "event.log", "--credentials", "f"], "credentials_file", "f"),
        (["bisect", "--hosts", "h", "--run", "true", "--timeout", "9"], "timeout", 9.0),
        (["run", "site", "-i", "inv/", "--interval", "15"], "interval", 15.0),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_old_spellings_still_work_with_a_notice_on_stderr(argv, dest, value):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        args = cli.build_parser(argv[0]).parse_args(argv)
    assert getattr(args, dest) == value
    old = next(a for a in argv if a.startswith("--") and a in OLD_SPELLINGS | {"--limit": ""})
    notice = err.getvalue().strip()
    assert notice.startswith(f"racksmith: {old} is deprecated; use --") and "\n" not in notice
    assert out.getvalue() == ""


def test_new_spellings_print_no_notice():
    err = io.StringIO()
    with redirect_stderr(err):
        args = cli.build_parser("maas").parse_args(
            ["maas", "show", "gpu01", "--events", "5", "--ca-path", "ca.pem", "--insecure"]
        )
    assert (args.events, args.ca_bundle, args.validate_certs) == (5, "ca.pem", False)
    assert err.getvalue() == ""
