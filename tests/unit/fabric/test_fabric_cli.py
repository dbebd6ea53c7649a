"""`racksmith fabric ...` end to end on generated data: pure JSON on stdout, exit codes, and
bad input reported with file and line (exit 2)."""

from __future__ import annotations

import json
import subprocess

import pytest

from racksmith import cli


def _run(args, capsys):
    rc = cli.main(["lab", *args] if args[0] == "fabric" else ["fabric", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def gen(tmp_path, capsys):
    def make(*faults, hcas=64, tiers=3):
        out = tmp_path / ("f-" + "-".join(faults or ("clean",)))
        args = [
            "fabric",
            "--hcas",
            str(hcas),
            "--tiers",
            str(tiers),
            "--radix",
            "8",
            "--hcas-per-host",
            "4",
            "--seed",
            "3",
            "--out",
            str(out),
            "--json",
        ]
        for f in faults:
            args += ["--fault", f]
        rc, stdout, _ = _run(args, capsys)
        assert rc == 0
        summary = json.loads(stdout)
        assert summary["switches"] == 40 and summary["hcas"] == hcas
        return out

    return make


def test_generate_cabling_json(gen, capsys):
    clean = gen()
    for name in ("ibnetdiscover.txt", "iblinkinfo.txt", "plan.csv", "event.log", "hosts.json"):
        assert (clean / name).stat().st_size > 0
    rc, out, _ = _run(
        [
            "cabling",
            "--topology",
            str(clean / "ibnetdiscover.txt"),
            "--plan",
            str(clean / "plan.csv"),
            "--hosts",
            str(clean / "hosts.json"),
            "--json",
        ],
        capsys,
    )
    doc = json.loads(out)
    assert rc == 0 and doc["ok"] and doc["findings"] == []
    broken = gen("miscabling", "degraded")
    rc, out, _ = _run(
        [
            "cabling",
            "--topology",
            str(broken / "iblinkinfo.txt"),
            "--plan",
            str(broken / "plan.csv"),
            "--json",
        ],
        capsys,
    )
    doc = json.loads(out)
    assert rc == 1 and not doc["ok"]
    assert doc["counts"] == {"degraded": 2, "miscabled": 2, "swapped": 1}
    rc, out, _ = _run(
        [
            "cabling",
            "--topology",
            str(broken / "ibnetdiscover.txt"),
            "--plan",
            str(broken / "plan.csv"),
        ],
        capsys,
    )
    assert rc == 1 and out.startswith("cabling PROBLEMS")


def test_ufm_json_lines(gen, capsys):
    d = gen()
    rc, out, err = _run(
        ["ufm", str(d / "event.log"), "--topology", str(d / "ibnetdiscover.txt"), "--json"], capsys
    )
    assert rc == 0
    lines = [json.loads(line) for line in out.splitlines()]
    truth = json.loads((d / "faults.json").read_text())["bad_links"]
    assert {
        frozenset(
            (
                x["port"]["name"] + "/" + str(x["port"]["port"]),
                x["peer"]["name"] + "/" + str(x["peer"]["port"]),
            )
        )
        for x in lines
    } == {frozenset(t["ends"]) for t in truth}
    assert all(x["reason"] and x["ufm_port"] for x in lines)
    assert json.loads(err)["summary"]["bursts"] == 1


def test_burnin_json_and_files(gen, tmp_path, capsys):
    d = gen()
    rc, out, _ = _run(
        [
            "burnin",
            "--topology",
            str(d / "ibnetdiscover.txt"),
            "--seed",
            "7",
            "--json",
            "--out",
            str(tmp_path / "burn"),
        ],
        capsys,
    )
    doc = json.loads(out)
    assert rc == 0
    assert doc["coverage"]["fraction"] == 1.0 and doc["stage_count"] == doc["lower_bound"] == 1
    pairs = doc["stages"][0]["pairs"]
    assert len(pairs) == 32 and pairs[0]["client"]["host"].startswith("gpu")
    scripts = sorted((tmp_path / "burn" / "stage-01").glob("*.sh"))
    assert len(scripts) == 16
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
    assert (tmp_path / "burn" / "burnin.yml").exists() and (
        tmp_path / "burn" / "counters.sh"
    ).exists()
    _, out2, _ = _run(
        ["burnin", "--topology", str(d / "ibnetdiscover.txt"), "--seed", "7", "--json"], capsys
    )
    doc2 = json.loads(out2)
    doc.pop("plan_seconds"), doc2.pop("plan_seconds")
    assert doc == doc2  # deterministic under the seed


def test_burnin_needs_host_names_for_commands(tmp_path, fixture_path, capsys):
    topo = str(fixture_path("small-ibnetdiscover.txt"))
    rc, _, err = _run(["burnin", "--topology", topo, "--out", str(tmp_path / "b")], capsys)
    assert rc == 2 and "give --hosts" in err
    rc, _, _ = _run(
        [
            "burnin",
            "--topology",
            topo,
            "--hosts",
            str(fixture_path("small-hosts.json")),
            "--out",
            str(tmp_path / "b"),
        ],
        capsys,
    )
    assert rc == 0 and "node04" in "".join(p.name for p in (tmp_path / "b").rglob("*.sh"))


@pytest.mark.parametrize(
    ("command", "name", "content", "where"),
    [
        ("cabling-topology", "topo.txt", 'Switch\t3 "S-01"\t# "a"\n[1] oops\n', "topo.txt:2:"),
        (
            "cabling-plan",
            "plan.csv",
            "a_name,a_location,a_port,b_name,b_location,b_port\nx,y,1,z,w,0\n",
            "plan.csv:2:",
        ),
        ("cabling-hosts", "hosts.json", '{"h": [12]', "hosts.json:1:"),
        (
            "ufm",
            "event.log",
            "2026-11-24 10:00:00.1 [1] [328] INFO [H] IBPort [a / b / 1]: ok\nbad\n",
            "event.log:2:",
        ),
        ("burnin", "topo.txt", "hello\n", "topo.txt:1:"),
    ],
)
def test_bad_input_exits_2_naming_file_and_line(
    tmp_path, fixture_path, capsys, command, name, content, where
):
    bad = tmp_path / name
    bad.write_text(content)
    good_topo = str(fixture_path("small-ibnetdiscover.txt"))
    good_plan = str(fixture_path("small-plan.csv"))
    args = {
        "cabling-topology": ["cabling", "--topology", str(bad), "--plan", good_plan],
        "cabling-plan": ["cabling", "--topology", good_topo, "--plan", str(bad)],
        "cabling-hosts": [
            "cabling",
            "--topology",
            good_topo,
            "--plan",
            good_plan,
            "--hosts",
            str(bad),
        ],
        "ufm": ["ufm", str(bad), "--json"],
        "burnin": ["burnin", "--topology", str(bad), "--json"],
    }[command]
    rc, out, err = _run(args, capsys)
    assert rc == 2 and out == ""
    assert err.startswith("racksmith: error: ") and where in err, err


def test_missing_file_is_named(capsys, tmp_path):
    rc, _, err = _run(
        ["cabling", "--topology", str(tmp_path / "nope.txt"), "--plan", "x.csv"], capsys
    )
    assert rc == 2 and "nope.txt" in err
