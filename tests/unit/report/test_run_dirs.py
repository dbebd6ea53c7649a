"""Where the report callback puts a run and the health history, and that tests and benchmarks
never write into the checkout's runs/ (issue 27: after `make test`, `racksmith golden rank
--fleet` ranked benchmark hosts from the checkout's runs/history.jsonl)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


callback = _load(REPO / "plugins" / "callback" / "racksmith_report.py", "rs_report_cb")

PLAY = """
- name: discover
  hosts: all
  gather_facts: false
  tags: [discover]
  tasks:
    - name: a host a benchmark rack shares with the demo, quarantined
      ansible.builtin.set_fact:
        racksmith_quarantine_reason: "expected 8 GPUs, BMC reports 7"
"""


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every run directory and the history in the checkout's runs/, with size and mtime.
    `make test` keeps its own lane logs in runs/test-*/ and appends to them while this test
    runs: those are the test command's logs, not runs, so they are left out."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if not p.relative_to(folder).parts[0].startswith("test-")
    }


def _play(tmp: Path, env: dict[str, str], cwd: Path) -> Path:
    book = tmp / "bench.yml"
    book.write_text(PLAY)
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), str(book), "-i", "gpu-r01-u01,", "-c", "local"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return book


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RACKSMITH_RUN_DIR",)}
    env.update({"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "PATH": f"{BIN}:{env['PATH']}"})
    env.update(extra)
    return env


def test_a_bench_like_run_leaves_the_checkouts_runs_untouched(tmp_path):
    """The session's RACKSMITH_RUNS_DIR (tests/conftest.py) takes the run and the history."""
    before = _snapshot(REPO / "runs")
    runs = Path(os.environ["RACKSMITH_RUNS_DIR"])
    assert not runs.resolve().is_relative_to(REPO)
    _play(tmp_path, _env(), cwd=REPO)
    assert _snapshot(REPO / "runs") == before
    history = [json.loads(line) for line in (runs / "history.jsonl").read_text().splitlines()]
    assert history[-1]["hosts"] == {
        "gpu-r01-u01": {"cause": "gpu_missing", "result": "QUARANTINED"}
    }
    assert (runs / history[-1]["run_id"] / "report.json").is_file()


def test_without_an_option_a_run_goes_beside_its_playbook_not_into_the_collection(tmp_path):
    env = _env()
    env.pop("RACKSMITH_RUNS_DIR")
    before = _snapshot(REPO / "runs")
    book = _play(tmp_path, env, cwd=REPO)
    assert _snapshot(REPO / "runs") == before  # it used to be <collection>/runs, the checkout's
    (run,) = [p for p in (book.parent / "runs").iterdir() if p.is_dir()]
    assert (run / "report.json").is_file() and (book.parent / "runs" / "history.jsonl").is_file()


def test_the_ini_option_names_the_runs_directory(tmp_path):
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text(  # a site's own ansible.cfg: the callback by its collection name
        "[defaults]\ncallbacks_enabled = racksmith.core.racksmith_report\n"
        f"[callback_racksmith_report]\nruns_dir = {tmp_path / 'elsewhere'}\n"
    )
    env = _env(ANSIBLE_CONFIG=str(cfg))
    env.pop("RACKSMITH_RUNS_DIR")
    _play(tmp_path, env, cwd=REPO)
    assert (tmp_path / "elsewhere" / "history.jsonl").is_file()
    assert not (tmp_path / "runs").exists()


def test_default_runs_dir_by_where_the_playbook_lives(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    assert callback.default_runs_dir("play.yml", site) == site / "runs"
    assert callback.default_runs_dir(None, site) == site / "runs"
    assert callback.default_runs_dir(str(REPO / "site.yml"), site) == REPO / "runs"
    # a collection's playbook (installed, or this checkout's playbooks/): the current directory
    installed = tmp_path / "ansible_collections" / "racksmith" / "core" / "playbooks"
    installed.mkdir(parents=True)
    assert callback.default_runs_dir(str(installed / "site.yml"), site) == site / "runs"
    assert callback.default_runs_dir(str(REPO / "playbooks" / "site.yml"), site) == site / "runs"


def test_the_site_benchmark_keeps_its_runs_outside_the_checkout():
    bench = _load(REPO / "tests" / "bench" / "bench_site.py", "rs_bench_site")
    assert not bench.RUNS_ROOT.resolve().is_relative_to(REPO)


def test_callback_options_textfile_path_and_ticket_url_from_the_environment(tmp_path):
    textfile = tmp_path / "textfile" / "racksmith.prom"
    textfile.parent.mkdir()
    env = _env(
        RACKSMITH_PROM_PATH=str(textfile),
        RACKSMITH_TICKET_URL="https://tracker.example/new?title={summary}",
        RACKSMITH_RUNS_DIR=str(tmp_path / "runs"),
    )
    _play(tmp_path, env, cwd=REPO)
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert textfile.read_text() == (run / "report.prom").read_text()
    assert f'racksmith_run_info{{run="{run.name}"' in textfile.read_text()
    host = json.loads((run / "report.json").read_text())["hosts"]["gpu-r01-u01"]
    assert host["triage"]["url"].startswith("https://tracker.example/new?title=gpu-r01-u01%3A%20")
