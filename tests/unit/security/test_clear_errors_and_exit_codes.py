"""Issue 9, case 7: a clear error, never a traceback, and the documented exit codes.

Before: ``racksmith maas machines`` against an HTML page or JSON that is not a list died with
``AttributeError: 'str' object has no attribute 'get'``; ``--bmc ''`` exited 0 having asked
nothing; usage errors exited 1 where the docs say 2; ``--deadline nan`` turned the deadline off.
"""

from __future__ import annotations

import pytest

from racksmith import cli


@pytest.fixture
def maas_env(hostile, monkeypatch):
    def point(mode: str, **kwargs):
        server = hostile(mode, **kwargs)
        monkeypatch.setenv("MAAS_URL", f"{server.url}/MAAS/")
        monkeypatch.setenv("MAAS_API_KEY", "consumer-k:token-key-1:token-secret-1")
        return server

    return point


@pytest.mark.parametrize(
    ("mode", "body", "said"),
    [
        ("html", None, "an HTML page"),
        ("wrong_shape", b'{"machines": []}', "a JSON object"),
        ("wrong_shape", b'["abc", 1]', "machine: expected a JSON object, got text ('abc')"),
        ("wrong_shape", b'[{"hostname": "x"}]', "missing field 'system_id'"),
        ("wrong_shape", b'[{"system_id": "a", "status": "x"}]', "machine a:"),
        ("wrong_shape", b"[[[[[" * 40000, "does not parse"),
        ("error500", None, "HTTP 500"),
        ("huge", None, "too large"),
    ],
)
def test_maas_machines_on_garbage_is_one_error_line(mode, body, said, maas_env, capsys):
    maas_env(mode, body=body, huge_bytes=80 << 20)
    code = cli.main(["maas", "machines", "--max-answer-bytes", str(4 << 20), "--deadline", "5"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert said in err and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["redfish", "discover", "--bmc", ""],
        ["redfish", "discover", "--bmc", " "],
        ["redfish", "discover", "--bmc", "127.0.0.1", "--deadline", "nan"],
        ["redfish", "discover", "--bmc", "127.0.0.1", "--deadline", "-1"],
        ["redfish", "discover", "--bmc", "127.0.0.1", "--read-timeout", "inf"],
        ["redfish", "discover", "--bmc", "127.0.0.1", "--concurrency", "0"],
        ["redfish", "power", "on", "--bmc", "10.0.0.0/30", "--dry-run"],
        ["maas", "machines", "--deadline", "nan"],
        ["maas", "machines", "--timeout", "0"],
    ],
)
def test_usage_errors_exit_2(argv, capsys, monkeypatch):
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "usage-pw-1")
    monkeypatch.setenv("MAAS_URL", "http://127.0.0.1:9/MAAS/")
    monkeypatch.setenv("MAAS_API_KEY", "a-a:b-b:c-c")
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_maas_missing_credentials_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("MAAS_URL", raising=False)
    monkeypatch.delenv("MAAS_API_KEY", raising=False)
    assert cli.main(["maas", "machines"]) == 2
    assert "MAAS_URL" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["html", "wrong_shape", "error500", "reset"])
def test_redfish_discover_on_garbage_exits_1_with_a_reason(mode, hostile, monkeypatch, capsys):
    server = hostile(mode)
    monkeypatch.setenv("RACKSMITH_BMC_USERNAME", "root")
    monkeypatch.setenv("RACKSMITH_BMC_PASSWORD", "garbage-pw-1")
    argv = ["redfish", "discover", "--scheme", "http", "--bmc", server.address, "--json"]
    assert cli.main([*argv, "--retries", "0", "--deadline", "3"]) == 1
    out, err = capsys.readouterr()
    assert '"error_kind"' in out and "Traceback" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["redfish", "discover"],
        ["redfish", "power"],
        ["redfish", "boot-once"],
        ["redfish", "clock"],
        ["maas", "machines"],
        ["maas", "deploy"],
        ["maas", "release"],
    ],
)
def test_help_of_every_command_renders(command, capsys):
    """Generated option help ('%' in a description once broke argparse's --help)."""
    with pytest.raises(SystemExit) as exc:
        cli.main([*command, "--help"])
    assert exc.value.code == 0
    assert "--deadline" in capsys.readouterr().out
