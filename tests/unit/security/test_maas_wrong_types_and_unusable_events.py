"""Issue 22, smaller items: MAAS answers with wrong-typed fields, and an unusable events answer.

Before: a machine whose ``interface_set`` held strings (or whose ``boot_interface`` was text)
failed with Python's "'str' object has no attribute 'get'"; ``racksmith maas triage`` printed
a cause and exited 0 when the events answer could not be read (a guess presented as a
finding). A scripted MAAS (``routes`` mode of the hostile server) gives each answer.
"""

from __future__ import annotations

import pytest

from racksmith import cli
from racksmith.testing.hostile import Route

API = "/MAAS/api/2.0/"
MACHINE = {"system_id": "abc123", "hostname": "gpu01", "status": 11, "distro_series": "jammy"}


@pytest.fixture
def scripted_maas(hostile, monkeypatch):
    def start(**routes: Route):
        server = hostile("routes", routes={API + k: v for k, v in routes.items()})
        monkeypatch.setenv("MAAS_URL", f"{server.url}/MAAS/")
        monkeypatch.setenv("MAAS_API_KEY", "types-consumer:types-token:types-secret")
        return server

    return start


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("interface_set", ["aa:bb:cc:dd:ee:ff"], "field 'interface_set' should list JSON objects"),
        ("interface_set", "eth0", "field 'interface_set' should be a JSON list"),
        ("boot_interface", "eth0", "field 'boot_interface' should be a JSON object"),
        ("ip_addresses", "10.0.0.5", "field 'ip_addresses' should be a JSON list"),
        ("tag_names", {"gpu": True}, "field 'tag_names' should be a JSON list"),
        ("boot_disk", "sda", "field 'boot_disk' should be a JSON object"),
        ("status", "deployed", "field 'status' should be a number"),
        ("status", 999, "not a MAAS node status"),
        ("status", True, "field 'status' should be a number"),
    ],
)
def test_wrong_typed_machine_field_is_one_clear_error(field, value, said, scripted_maas, capsys):
    scripted_maas(**{"machines/": Route(body=[{**MACHINE, field: value}])})
    assert cli.main(["maas", "machines", "--deadline", "5"]) == 1
    err = capsys.readouterr().err
    assert said in err and "abc123" in err, err
    assert "object has no attribute" not in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_wrong_typed_block_device_field_names_it(scripted_maas, capsys):
    disk = {"id": "first", "name": "nvme0n1", "size": 1}
    scripted_maas(**{"machines/": Route(body=[{**MACHINE, "boot_disk": disk}])})
    assert cli.main(["maas", "machines", "--deadline", "5"]) == 1
    err = capsys.readouterr().err
    assert "field 'id' should be a number" in err and "invalid literal" not in err


@pytest.mark.parametrize(
    "events",
    [
        Route(body={"events": "none today"}),
        Route(body={"events": ["not an event"]}),
        Route(body={"events": [{"id": "x1", "type": "Failed"}]}),
        Route(body=b"<html>login</html>", headers={"Content-Type": "text/html"}),
        Route(status=500, body=b"oops"),
    ],
    ids=["text", "list-of-text", "wrong-id", "html", "http-500"],
)
def test_triage_exits_1_when_the_events_answer_is_unusable(events, scripted_maas, capsys):
    scripted_maas(**{"machines/": Route(body=[MACHINE]), "events/": events})
    code = cli.main(["maas", "triage", "abc123", "--deadline", "5"])
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "events" in err and "Traceback" not in err
    assert '"unread"' in out


def test_triage_exits_0_when_the_evidence_was_read(scripted_maas, capsys):
    """The exit code follows the evidence, not a constant."""
    event = {"id": 7, "level": "ERROR", "type": "Failed deployment", "created": "now"}
    scripted_maas(
        **{"machines/": Route(body=[MACHINE]), "events/": Route(body={"events": [event]})}
    )
    code = cli.main(["maas", "triage", "abc123", "--deadline", "5"])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert "Failed deployment" in out
